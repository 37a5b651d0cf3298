"""The declared torch and Lightning floors: each file format read, floors, problems, roots.

``codemods.cli.floors`` and the modules it reads with (``specifiers``, ``setup_py``,
``requirement_files``); the targets a run takes from them are in test_declared_target.py.
"""

from __future__ import annotations

import doctest
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from codemods.cli import floors as floors_module
from codemods.cli import requirement_files, setup_py, specifiers
from codemods.cli.floors import (
    DeclaredFloors,
    declared_floors,
    find_project_root,
    poetry_floor,
    specifier_floor,
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


# ----------------------------------------------------------------------------- each format

# (files, expected torch floor, its source, expected lightning floor, its source)
FORMATS = {
    "pyproject PEP 621 dependencies": (
        {
            "pyproject.toml": """
                [project]
                name = "demo"
                dependencies = ["numpy", "torch>=1.12", "pytorch-lightning>=1.8,<3"]
            """
        },
        "1.12",
        "pyproject.toml [project.dependencies]: torch>=1.12",
        "1.8",
        "pyproject.toml [project.dependencies]: pytorch-lightning>=1.8,<3",
    ),
    "pyproject optional dependencies": (
        {
            "pyproject.toml": """
                [project]
                name = "demo"
                dependencies = ["numpy"]
                [project.optional-dependencies]
                docs = ["sphinx"]
                train = ["torch~=2.1.0", "lightning[extra]>=2.0"]
            """
        },
        "2.1.0",
        "pyproject.toml [project.optional-dependencies.train]: torch~=2.1.0",
        "2.0",
        "pyproject.toml [project.optional-dependencies.train]: lightning[extra]>=2.0",
    ),
    "pyproject dependency-groups": (
        {
            "pyproject.toml": """
                [dependency-groups]
                test = ["pytest", "torch>=2.2", {include-group = "lint"}]
                lint = ["ruff"]
            """
        },
        "2.2",
        "pyproject.toml [dependency-groups.test]: torch>=2.2",
        None,
        None,
    ),
    "poetry caret and table": (
        {
            "pyproject.toml": """
                [tool.poetry.dependencies]
                python = "^3.9"
                torch = "^1.13"
                pytorch_lightning = {version = "~1.9.0", optional = true}
            """
        },
        "1.13",
        'pyproject.toml [tool.poetry.dependencies]: torch = "^1.13"',
        "1.9.0",
        'pyproject.toml [tool.poetry.dependencies]: pytorch_lightning = "~1.9.0"',
    ),
    "poetry >= and group": (
        {
            "pyproject.toml": """
                [tool.poetry.dependencies]
                torch = ">=2.0, <3"
                [tool.poetry.group.dev.dependencies]
                lightning = "2.1.3"
            """
        },
        "2.0",
        'pyproject.toml [tool.poetry.dependencies]: torch = ">=2.0, <3"',
        "2.1.3",
        'pyproject.toml [tool.poetry.group.dev.dependencies]: lightning = "2.1.3"',
    ),
    "requirements.txt": (
        {
            "requirements.txt": """
                # training stack
                numpy>=1.21  # arrays
                torch>=1.12.0
                lightning-fabric>=2.0 ; python_version >= "3.8"
            """
        },
        "1.12.0",
        "requirements.txt:3: torch>=1.12.0",
        "2.0",
        'requirements.txt:4: lightning-fabric>=2.0 ; python_version >= "3.8"',
    ),
    "requirements.txt hashes and continuation": (
        {
            "requirements.txt": """
                --index-url https://download.pytorch.org/whl/cpu
                torch==2.0.1+cpu \\
                    --hash=sha256:0123456789abcdef \\
                    --hash=sha256:fedcba9876543210
                pytorch-lightning==1.9.5 --hash=sha256:00ff
            """
        },
        "2.0.1",
        "requirements.txt:2: torch==2.0.1+cpu",
        "1.9.5",
        "requirements.txt:5: pytorch-lightning==1.9.5",
    ),
    "requirements.txt -r include": (
        {
            "requirements.txt": "-r requirements/base.txt\nnumpy\n",
            "requirements/base.txt": "torch>=1.13  # from the include\n",
        },
        "1.13",
        "requirements/base.txt:1: torch>=1.13",
        None,
        None,
    ),
    "requirements-dev.txt glob": (
        {"requirements-dev.txt": "pytest\nPyTorch_Lightning>=1.7\n"},
        None,
        None,
        "1.7",
        "requirements-dev.txt:2: PyTorch_Lightning>=1.7",
    ),
    "requirements/ folder": (
        {"requirements/gpu.txt": "torch>=2.1\n", "requirements/README.md": "torch>=0.1\n"},
        "2.1",
        "requirements/gpu.txt:1: torch>=2.1",
        None,
        None,
    ),
    "setup.cfg install_requires multi-line and extras": (
        {
            "setup.cfg": """
                [metadata]
                name = demo

                [options]
                install_requires =
                    numpy
                    # a comment line
                    torch>=1.12,<2.3  # inline comment
                python_requires = >=3.9

                [options.extras_require]
                pl =
                    pytorch-lightning>=1.6
            """
        },
        "1.12",
        "setup.cfg [options] install_requires: torch>=1.12,<2.3",
        "1.6",
        "setup.cfg [options.extras_require] pl: pytorch-lightning>=1.6",
    ),
    "setup.cfg file: directive": (
        {
            "setup.cfg": "[options]\ninstall_requires = file: reqs/run.in\n",
            "reqs/run.in": "torch>=1.11\n",
        },
        "1.11",
        "reqs/run.in:1: torch>=1.11",
        None,
        None,
    ),
    "setup.py literal": (
        {
            "setup.py": """
                from setuptools import setup

                setup(
                    name="demo",
                    install_requires=["numpy", "pytorch-lightning>=1.8"],
                    extras_require={"gpu": ["torch>=1.12"], "docs": ["sphinx"]},
                )
            """
        },
        "1.12",
        "setup.py extras_require[gpu]: torch>=1.12",
        "1.8",
        "setup.py install_requires: pytorch-lightning>=1.8",
    ),
    "setup.py name bound once": (
        {
            "setup.py": """
                import setuptools

                BASE = ["numpy"]
                REQUIRED = BASE + ["torch>=1.13.1"]
                EXTRAS = {"pl": ("lightning>=2.0",), "dev": {"pytest"}}

                if __name__ == "__main__":
                    setuptools.setup(install_requires=REQUIRED, extras_require=EXTRAS)
            """
        },
        "1.13.1",
        "setup.py install_requires: torch>=1.13.1",
        "2.0",
        "setup.py extras_require[pl]: lightning>=2.0",
    ),
    "setup.py **kwargs literal dict": (
        {
            "setup.py": """
                from setuptools import setup
                config = {"name": "demo", "install_requires": ["torch>=2.0"]}
                setup(**config)
            """
        },
        "2.0",
        "setup.py install_requires: torch>=2.0",
        None,
        None,
    ),
}


@pytest.mark.parametrize(
    "files, torch, torch_source, lightning, lightning_source", FORMATS.values(), ids=FORMATS.keys()
)
def test_each_format(tmp_path, files, torch, torch_source, lightning, lightning_source):
    floors = declared_floors(write(tmp_path, files))
    assert floors.problems == []
    assert floors.torch == (Version(torch) if torch else None)
    assert floors.lightning == (Version(lightning) if lightning else None)
    assert floors.sources.get("torch") == torch_source
    assert floors.sources.get("lightning") == lightning_source


# ----------------------------------------------------------------------------- problems

PROBLEMS = {
    "malformed TOML": (
        {"pyproject.toml": '[project]\ndependencies = ["torch>=1.12"\n'},
        "pyproject.toml: cannot parse TOML",
    ),
    "setup.py install_requires from a function": (
        {
            "setup.py": """
                from setuptools import setup
                def read(name):
                    return open(name).read().splitlines()
                setup(install_requires=read("requirements.in"))
            """
        },
        "setup.py:4: install_requires is not a literal list (read('requirements.in'))",
    ),
    "setup.py name bound twice": (
        {
            "setup.py": """
                from setuptools import setup
                REQUIRED = ["torch>=1.12"]
                if True:
                    REQUIRED = ["torch>=2.0"]
                setup(install_requires=REQUIRED)
            """
        },
        "the name 'REQUIRED' is not bound once to one",
    ),
    "setup.py name mutated": (
        {
            "setup.py": """
                from setuptools import setup
                REQUIRED = ["numpy"]
                REQUIRED.append("torch>=1.12")
                setup(install_requires=REQUIRED)
            """
        },
        "setup.py:4: install_requires is not a literal list",
    ),
    "setup.py non-string item": (
        {
            "setup.py": """
                from setuptools import setup
                TORCH = "torch>=1.12"
                setup(install_requires=["numpy", f"{TORCH}"])
            """
        },
        "is not a string literal",
    ),
    "setup.py **kwargs unknown": (
        {"setup.py": "from setuptools import setup\nsetup(**load_config())\n"},
        "setup.py:2: setup() takes **load_config(), which is not a literal dict;",
    ),
    "setup.py **kwargs updated": (
        {
            "setup.py": """
                from setuptools import setup
                args = {"name": "p"}
                if True:
                    args.update(install_requires=["torch>=1.12"])
                setup(**args)
            """
        },
        "setup() takes **args, a dict the file changes after binding it;",
    ),
    "setup.py syntax error": (
        {"setup.py": "setup(install_requires=[\n"},
        "setup.py: cannot parse",
    ),
    "unparsable requirement line": (
        {"requirements.txt": "numpy\ntorch>=>1.12\n"},
        "requirements.txt:2: cannot parse requirement 'torch>=>1.12'",
    ),
    "missing include": (
        {"requirements.txt": "-r missing.txt\n"},
        "requirements.txt:1: -r missing.txt: file not found",
    ),
    "unknown option": (
        {"requirements.txt": "--frobnicate\ntorch>=1.12\n"},
        "requirements.txt:1: skipped unknown option '--frobnicate'",
    ),
    "dependencies not a list": (
        {"pyproject.toml": '[project]\ndependencies = "torch>=1.12"\n'},
        "pyproject.toml [project.dependencies]: not a list of requirement strings",
    ),
    "malformed setup.cfg": (
        {"setup.cfg": "install_requires = torch\n"},
        "setup.cfg: cannot parse",
    ),
}


#: Pins that name no release: the range below the evidence floor is unknown (not a problem).
UNVERSIONED = {
    "editable framework": (
        {
            "requirements.txt": "-e git+https://github.com/Lightning-AI/pytorch-lightning"
            "#egg=lightning\n"
        },
        "lightning",
        "requirements.txt:1: -e git+https://github.com/Lightning-AI/pytorch-lightning",
    ),
    "wheel URL of another distribution under torch's name": (
        {
            "requirements.txt": "torch @ https://download.pytorch.org/whl/cpu/"
            "torchvision-0.16.0%2Bcpu-cp311-cp311-linux_x86_64.whl\n"
        },
        "torch",
        "requirements.txt:1: torch @ https://download.pytorch.org/whl/cpu/torchvision-0.16.0",
    ),
    "PEP 508 direct reference": (
        {"pyproject.toml": '[project]\ndependencies = ["torch @ https://example.org/torch.whl"]\n'},
        "torch",
        "pyproject.toml [project.dependencies]: torch @ https://example.org/torch.whl",
    ),
    "poetry git dependency": (
        {
            "pyproject.toml": "[tool.poetry.dependencies]\n"
            'torch = {git = "https://github.com/pytorch/pytorch.git"}\n'
        },
        "torch",
        "pyproject.toml [tool.poetry.dependencies]: torch = {'git': ",
    ),
    "git URL pin of Lightning": (
        {
            "requirements.txt": "pytorch-lightning @ git+https://github.com/PyTorchLightning/"
            "pytorch-lightning@3e1d2c4\n"
        },
        "lightning",
        "requirements.txt:1: pytorch-lightning @ git+https://github.com/PyTorchLightning/",
    ),
}


@pytest.mark.parametrize("files, framework, source", UNVERSIONED.values(), ids=UNVERSIONED.keys())
def test_a_pin_that_names_no_release_is_recorded_not_a_problem(tmp_path, files, framework, source):
    floors = declared_floors(write(tmp_path, files))
    assert floors.unversioned[framework].startswith(source), floors.unversioned
    assert getattr(floors, framework) is None and floors.problems == []


@pytest.mark.parametrize("files, message", PROBLEMS.values(), ids=PROBLEMS.keys())
def test_problem_messages(tmp_path, files, message):
    floors = declared_floors(write(tmp_path, files))
    assert any(message in problem for problem in floors.problems), floors.problems


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": '[project\ndependencies = ["torch>=1.12"]\n'},
        {"setup.py": "from setuptools import setup\nsetup(install_requires=get_requirements())\n"},
        {"requirements.txt": "torch>=>1.12\n"},
    ],
    ids=["malformed TOML", "setup.py non-literal", "unparsable line"],
)
def test_unreadable_declarations_give_no_floor(tmp_path, files):
    floors = declared_floors(write(tmp_path, files))
    assert floors.torch is None and floors.lightning is None
    assert len(floors.problems) == 1


def test_problems_do_not_stop_other_files(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project\n",
            "setup.py": "from setuptools import setup\nsetup(install_requires=reqs())\n",
            "requirements.txt": "torch>=1.13\n",
        },
    )
    floors = declared_floors(tmp_path)
    assert floors.torch == Version("1.13")
    assert [problem.split(":")[0] for problem in floors.problems] == ["pyproject.toml", "setup.py"]


def test_include_cycle_is_reported_once_and_terminates(tmp_path):
    write(
        tmp_path,
        {
            "requirements.txt": "-r requirements/a.txt\n",
            "requirements/a.txt": "-r b.txt\ntorch>=1.12\n",
            "requirements/b.txt": "--requirement=a.txt\nlightning>=2.0\n",
        },
    )
    floors = declared_floors(tmp_path)
    assert floors.torch == Version("1.12")
    assert floors.lightning == Version("2.0")
    assert floors.problems == [
        "requirements/b.txt:1: -r a.txt includes a file already being read (a cycle); "
        "not read again"
    ]


def test_file_included_twice_is_read_once_without_problem(tmp_path):
    write(
        tmp_path,
        {
            "requirements.txt": "-r requirements/base.txt\n",
            "requirements-dev.txt": "-rrequirements/base.txt\npytest\n",
            "requirements/base.txt": "torch>=2.0\n",
        },
    )
    floors = declared_floors(tmp_path)
    assert floors.torch == Version("2.0")
    assert floors.problems == []


@pytest.mark.parametrize(
    "line",
    [
        "-e .",
        "-e git+https://github.com/example/project#egg=project",
        "./vendor/pkg",
        "-c c.txt",
        # other packages whose names start like a framework's (pytorch-lightning-GPT's)
        "git+https://github.com/Lightning-AI/lightning-minGPT@bench",
        "git+https://github.com/x/torch-optimizer@main",
        "-e git+https://github.com/x/lightning.git@main#egg=lightning-bolts",
        "https://download.pytorch.org/whl/cu117/torchvision-0.15.2%2Bcu117-cp39-cp39-linux_x86_64.whl",
    ],
)
def test_skipped_lines_naming_no_framework_are_quiet(tmp_path, line):
    floors = declared_floors(write(tmp_path, {"requirements.txt": f"{line}\ntorch>=1.12\n"}))
    assert floors.torch == Version("1.12")
    assert floors.problems == [] and floors.unversioned == {}


#: A wheel or archive names its release (PEP 427's file name, `%2B` read as `+`): a pin.
NAMED_RELEASES = {
    "torch wheel URL": (
        "https://download.pytorch.org/whl/cu117/torch-2.0.1%2Bcu117-cp39-cp39-linux_x86_64.whl",
        "torch",
        "2.0.1",
    ),
    "torch @ wheel URL": (
        "torch @ https://download.pytorch.org/whl/cpu/torch-2.4.1%2Bcpu-cp311-cp311-linux_x86_64.whl",
        "torch",
        "2.4.1",
    ),
    "Lightning wheel path": ("./wheels/lightning-2.1.0-py3-none-any.whl", "lightning", "2.1.0"),
    "pytorch_lightning sdist URL": (
        "https://files.example.org/pytorch_lightning-1.9.4.tar.gz",
        "lightning",
        "1.9.4",
    ),
}


@pytest.mark.parametrize(
    "line, framework, release", NAMED_RELEASES.values(), ids=NAMED_RELEASES.keys()
)
def test_a_wheel_or_archive_pins_the_release_it_names(tmp_path, line, framework, release):
    floors = declared_floors(write(tmp_path, {"requirements.txt": line + "\n"}))
    assert getattr(floors, framework) == Version(release)
    assert floors.tops[framework] == (Version(release), False)
    assert floors.unversioned == {} and floors.problems == []
    assert floors.sources[framework] == f"requirements.txt:1: {line}"


# ----------------------------------------------------------------------------- floors


@pytest.mark.parametrize(
    "requirement, floor",
    [
        ("torch>=1.12", "1.12"),
        ("torch~=1.13.0", "1.13.0"),
        ("torch==1.13.*", "1.13"),
        ("torch==2.0.1", "2.0.1"),
        ("torch===2.1.0", "2.1.0"),
        ("torch>1.12", "1.12"),
        ("torch>=1.12,>=1.13,<3", "1.13"),
        ("torch>=1.12,!=1.12.0", "1.12"),
        ("torch>=2.1.0rc1", "2.1.0"),
        ("torch>=2.1.0.dev", "2.1.0"),
        ("torch==2.0.1+cu118", "2.0.1"),
        ("torch<2", None),
        ("torch<=2.0,!=1.13.0", None),
        ("torch", None),
        ("torch[opt-einsum]>=2.0; sys_platform == 'linux'", "2.0"),
    ],
)
def test_floor_of_a_requirement(tmp_path, requirement, floor):
    floors = declared_floors(write(tmp_path, {"requirements.txt": requirement + "\n"}))
    assert floors.torch == (Version(floor) if floor else None)
    assert floors.problems == []
    if floor is None:
        assert "torch" not in floors.sources


def test_greater_than_is_noted_in_the_source(tmp_path):
    floors = declared_floors(write(tmp_path, {"requirements.txt": "torch>1.12\n"}))
    assert floors.sources["torch"] == "requirements.txt:1: torch>1.12 ('>1.12' taken as 1.12)"


@pytest.mark.parametrize(
    "constraint, floor",
    [
        ("^1.12", "1.12"),
        ("~1.13", "1.13"),
        ("~=2.0.1", "2.0.1"),
        (">=1.12,<2", "1.12"),
        (">= 1.12 < 2", "1.12"),
        ("1.13.1", "1.13.1"),
        ("==2.1.*", "2.1"),
        ("^2.1 || ^1.13", "1.13"),
        ("<1 || >=2", None),
        ("*", None),
        ("<2.0", None),
    ],
)
def test_poetry_floor(constraint, floor):
    assert poetry_floor(constraint) == (Version(floor) if floor else None)


def test_specifier_floor_accepts_text_and_sets():
    assert specifier_floor(">=1.12,<2") == Version("1.12")
    assert specifier_floor("<2") is None
    assert specifier_floor("==2.0.1+cu118") == Version("2.0.1")


def test_lowest_floor_wins_across_files(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\ndependencies = ["torch>=2.0", "lightning>=2.1"]\n',
            "setup.cfg": "[options]\ninstall_requires =\n    pytorch-lightning>=1.9\n",
            "setup.py": 'from setuptools import setup\nsetup(install_requires=["torch>=1.13"])\n',
            "requirements.txt": "torch>=1.12.1\n",
            "requirements/ci.txt": "torch==2.3.0\nlightning-fabric>=2.2\n",
        },
    )
    floors = declared_floors(tmp_path)
    assert floors.torch == Version("1.12.1")
    assert floors.sources["torch"] == "requirements.txt:1: torch>=1.12.1"
    assert floors.lightning == Version("1.9")
    assert (
        floors.sources["lightning"]
        == "setup.cfg [options] install_requires: pytorch-lightning>=1.9"
    )
    assert floors.problems == []


@pytest.mark.parametrize(
    "name",
    ["REQUIREMENTS.txt", "Requirements-dev.txt", "requirements/Base.TXT", "REQUIREMENTS/base.txt"],
)
def test_requirements_files_are_found_in_any_case(tmp_path, name):
    """A project whose ``setup.py`` reads its ``REQUIREMENTS.txt`` declares there."""
    write(tmp_path / "project", {name: "numpy\ntorch>=2.4\n"})
    floors = declared_floors(tmp_path / "project")
    assert floors.torch == Version("2.4")
    assert floors.sources["torch"] == f"{name}:2: torch>=2.4"
    assert find_project_root(tmp_path / "project" / "train.py") == tmp_path / "project"


def test_first_declaration_wins_a_tie(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\ndependencies = ["torch>=1.13"]\n',
            "requirements.txt": "torch>=1.13.0\n",
        },
    )
    floors = declared_floors(tmp_path)
    assert floors.sources["torch"] == "pyproject.toml [project.dependencies]: torch>=1.13"


@pytest.mark.parametrize(
    "name",
    [
        "pytorch-lightning",
        "pytorch_lightning",
        "PyTorch.Lightning",
        "Lightning",
        "lightning_fabric",
    ],
)
def test_lightning_names_are_normalised(tmp_path, name):
    floors = declared_floors(write(tmp_path, {"requirements.txt": f"{name}>=1.8\n"}))
    assert floors.lightning == Version("1.8")
    assert floors.torch is None


@pytest.mark.parametrize(
    "name", ["torchvision", "lightning-utilities", "lightning-bolts", "pytorch"]
)
def test_other_packages_are_not_frameworks(tmp_path, name):
    floors = declared_floors(write(tmp_path, {"requirements.txt": f"{name}>=0.1\n"}))
    assert floors == DeclaredFloors()


def test_markers_are_ignored_but_requirement_kept(tmp_path):
    text = 'torch>=1.12; python_version < "3.11"\ntorch>=2.1; python_version >= "3.11"\n'
    floors = declared_floors(write(tmp_path, {"requirements.txt": text}))
    assert floors.torch == Version("1.12")


def test_nothing_declared(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "setup.py": ""})
    floors = declared_floors(tmp_path)
    assert floors == DeclaredFloors()


def test_empty_directory(tmp_path):
    assert declared_floors(tmp_path) == DeclaredFloors()


def test_setup_py_without_requirements_is_quiet(tmp_path):
    write(tmp_path, {"setup.py": "from setuptools import setup\nsetup()\n"})
    assert declared_floors(tmp_path) == DeclaredFloors()


def test_setup_py_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    write(
        tmp_path,
        {
            "setup.py": f"""
                open({str(marker)!r}, "w").close()
                from setuptools import setup
                setup(install_requires=["torch>=1.12"])
            """
        },
    )
    assert declared_floors(tmp_path).torch == Version("1.12")
    assert not marker.exists()


# ----------------------------------------------------------------------------- root


@pytest.mark.parametrize(
    "marker",
    ["pyproject.toml", "setup.cfg", "setup.py", "requirements.txt", "requirements-dev.txt"],
)
def test_root_from_a_nested_file(tmp_path, marker):
    content = "numpy\ntorch\n" if marker.startswith("requirements") else ""
    write(tmp_path, {marker: content, "src/pkg/sub/model.py": "x = 1\n"})
    assert find_project_root(tmp_path / "src" / "pkg" / "sub" / "model.py") == tmp_path.resolve()
    assert find_project_root(tmp_path / "src" / "pkg") == tmp_path.resolve()
    assert find_project_root(tmp_path) == tmp_path.resolve()


def test_closest_root_wins(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "libs/inner/setup.cfg": "", "libs/inner/a/b.py": ""})
    assert (
        find_project_root(tmp_path / "libs" / "inner" / "a" / "b.py")
        == (tmp_path / "libs" / "inner").resolve()
    )
    assert find_project_root(tmp_path / "libs") == tmp_path.resolve()


def test_empty_requirements_make_no_root(tmp_path):
    write(
        tmp_path,
        {
            "setup.py": "",
            "proj/requirements/base.txt": "# nothing yet\n",
            "proj/pkg/requirements.txt": "",
            "proj/pkg/x.py": "",
        },
    )
    assert find_project_root(tmp_path / "proj" / "pkg" / "x.py") == tmp_path.resolve()


@pytest.mark.parametrize(
    ("tests_requirements", "root_is_tests"),
    [
        ("pytest>=7\ncoverage\n", False),  # the test tools only: the project's floor holds
        ("torchvision\npytest_lightning_helpers\n", False),
        ("-r ../requirements.txt\npytest\n", True),  # an include may declare: read it
        ("-r../requirements.txt\n", True),
        ("torch>=2.4\n", True),
        ("Lightning==2.2.0  # pinned for the tests\n", True),
        (
            "https://download.pytorch.org/whl/cu121/torch-2.2.0%2Bcu121-cp311-linux_x86_64.whl\n",
            True,
        ),
    ],
)
def test_test_requirements_that_name_no_framework_keep_the_projects_floor(
    tmp_path, tests_requirements, root_is_tests
):
    write(
        tmp_path,
        {
            "requirements.txt": "lightning>=2.1\ntorch>=2.1\n",
            "tests/requirements.txt": tests_requirements,
            "tests/test_s.py": "",
        },
    )
    root = find_project_root(tmp_path / "tests" / "test_s.py")
    assert root == (tmp_path / "tests" if root_is_tests else tmp_path).resolve()


def test_a_requirements_folder_that_declares_makes_a_root(tmp_path):
    write(tmp_path, {"setup.py": "", "proj/requirements/torch.txt": "torch==1.13.1\n"})
    write(tmp_path, {"proj/train/x.py": ""})
    root = find_project_root(tmp_path / "proj" / "train" / "x.py")
    assert root == (tmp_path / "proj").resolve()
    assert declared_floors(root).torch == Version("1.13.1")


def test_root_of_a_path_that_does_not_exist(tmp_path):
    write(tmp_path, {"setup.cfg": ""})
    assert find_project_root(tmp_path / "not" / "there.py") == tmp_path.resolve()


def test_a_runs_files_find_the_roots_find_project_root_finds_through_links(tmp_path, monkeypatch):
    # A run resolves each directory once, through its parent's resolution: a linked
    # directory and a relative path reach the same roots.
    from codemods.cli.targets import ProjectTargets

    write(tmp_path, {"proj/pyproject.toml": "", "proj/pkg/sub/a.py": "", "other/setup.py": ""})
    (tmp_path / "other" / "linked").symlink_to(tmp_path / "proj" / "pkg", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    given = ["other/linked/sub/a.py", "proj/pkg/sub/a.py", "other/setup.py"]
    for path in given:
        targets = ProjectTargets()
        targets.for_file(path)
        assert [project.root for project in targets.projects] == [find_project_root(path)]
    assert (
        find_project_root(given[0]) == find_project_root(given[1]) == (tmp_path / "proj").resolve()
    )


def test_no_root(tmp_path, monkeypatch):
    # Only markers above tmp_path could be found; make sure there are none by pretending
    # every directory is empty.
    monkeypatch.setattr(Path, "is_file", lambda self: False)
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(()))
    assert find_project_root(tmp_path) is None


def test_root_then_floors_from_a_nested_file(tmp_path):
    write(tmp_path, {"requirements.txt": "torch>=1.13\n", "src/train.py": ""})
    root = find_project_root(tmp_path / "src" / "train.py")
    assert root is not None
    assert declared_floors(root).torch == Version("1.13")


# ----------------------------------------------------------------------------- hygiene


@pytest.mark.parametrize("module", [floors_module, specifiers, setup_py, requirement_files])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0
    assert result.attempted > 0 or module is requirement_files


def test_never_imports_torch_or_libcst():
    code = (
        "import sys, pathlib, tempfile\n"
        "import codemods.cli.floors, codemods.cli.targets\n"
        "codemods.cli.floors.declared_floors(pathlib.Path(tempfile.mkdtemp()))\n"
        "bad = {'torch', 'libcst', 'lightning', 'pytorch_lightning'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def test_lightnings_own_source_is_read_as_its_own_oldest_release(tmp_path):
    write(
        tmp_path,
        {
            "setup.py": "",
            "requirements/pytorch/base.txt": "torch>=1.9\n",
            "src/pytorch_lightning/strategies/fully_sharded_native.py": "x = 1\n",
        },
    )
    floors = declared_floors(tmp_path)
    assert floors.lightning == Version("1.0")
    assert (
        floors.sources["lightning"] == "src/pytorch_lightning/ (this project is Lightning itself)"
    )


def test_a_project_that_declares_lightning_keeps_its_declaration(tmp_path):
    write(
        tmp_path,
        {"requirements.txt": "lightning>=2.1\n", "lightning/app.py": "x = 1\n"},
    )
    assert declared_floors(tmp_path).lightning == Version("2.1")


#: The declarations users keep besides packaging metadata: (files, framework, floor, top,
#: top exclusive, where the floor came from).
ENVIRONMENT_FILES = {
    "tox deps with factors": (
        {
            "tox.ini": "[tox]\nenvlist = t112, t20\n\n[testenv]\ndeps =\n"
            "    pytest\n    t112: torch==1.12.1\n    t20: torch==2.0.1\n"
            "    -r requirements-dev.txt\n"
        },
        "torch",
        "1.12.1",
        "2.0.1",
        False,
        "tox.ini [testenv] deps: torch==1.12.1",
    ),
    "conda environment": (
        {
            "environment.yml": "name: x\nchannels: [pytorch]\ndependencies:\n  - python=3.10\n"
            "  - pytorch::pytorch=1.13=py3.10_cuda11.7_0\n  - pip:\n    - lightning>=2.0,<2.2\n"
        },
        "torch",
        "1.13",
        "1.14",
        True,
        "environment.yml dependencies: torch==1.13.*",
    ),
    "conda pip list": (
        {"environment.yml": "dependencies:\n  - pip:\n    - lightning>=2.0,<2.2\n"},
        "lightning",
        "2.0",
        "2.2",
        True,
        "environment.yml dependencies pip: lightning>=2.0,<2.2",
    ),
    "Pipfile": (
        {"Pipfile": '[packages]\ntorch = ">=1.13"\n\n[dev-packages]\npytest = "*"\n'},
        "torch",
        "1.13",
        None,
        False,
        "Pipfile [packages]: torch>=1.13",
    ),
    "CI matrix": (
        {
            ".github/workflows/ci.yml": "jobs:\n  test:\n    strategy:\n      matrix:\n"
            "        python: ['3.10']\n        torch-version: ['1.13.1', '2.0', '2.1.2']\n"
            "    runs-on: ubuntu-latest\n"
        },
        "torch",
        "1.13.1",
        "2.1.2",
        False,
        ".github/workflows/ci.yml jobs.test matrix: 1.13.1, 2.0, 2.1.2",
    ),
    "CI matrix with nightly": (
        {
            ".github/workflows/ci.yml": "jobs:\n  gpu:\n    strategy:\n      matrix:\n"
            "        include:\n          - pytorch_version: '2.4'\n"
            "          - pytorch_version: nightly\n"
        },
        "torch",
        "2.4",
        None,
        False,
        ".github/workflows/ci.yml jobs.gpu matrix: 2.4, nightly",
    ),
}


@pytest.mark.parametrize(
    "files, framework, floor, top, exclusive, source",
    ENVIRONMENT_FILES.values(),
    ids=ENVIRONMENT_FILES.keys(),
)
def test_environment_files_declare_ranges(
    tmp_path, files, framework, floor, top, exclusive, source
):
    files = {"setup.py": "from setuptools import setup\nsetup()\n", **files}
    floors = declared_floors(write(tmp_path, files))
    assert str(getattr(floors, framework)) == floor, floors
    assert floors.sources[framework].startswith(source)
    found = floors.tops.get(framework)
    assert (str(found[0]), found[1]) == (top, exclusive) if top else found is None
    assert floors.problems == []


def test_a_matrix_include_repeating_its_releases_lists_each_once(tmp_path):
    # GitHub extends a row whose values match (mmengine's torchvision per torch).
    workflow = (
        "jobs:\n  test:\n    strategy:\n      matrix:\n        torch: [1.8.1, 2.1.0]\n"
        "        include:\n          - torch: 1.8.1\n            torchvision: 0.9.1\n"
        "          - torch: 2.1.0\n            torchvision: 0.16.0\n"
    )
    files = {"setup.py": "from setuptools import setup\nsetup()\n"}
    floors = declared_floors(write(tmp_path, {**files, ".github/workflows/ci.yml": workflow}))
    listed = floors.sources["torch"].partition("matrix: ")[2]
    assert listed.startswith("1.8.1, 2.1.0") and listed.count("1.8.1") == 1, listed


@pytest.mark.parametrize(
    ("workflow", "problems"),
    [
        ("jobs: [unclosed\n", 0),  # names no torch: not parsed, so no problem to report
        ("jobs: [unclosed\n# PyTorch\n  - run: pip install torch\n", 0),  # no key of it
        ("jobs: [unclosed\n  PyTorch_Version: 2.1\n", 1),  # a key (any case): parsed, refused
        ("jobs: [unclosed\n  'torch'\n  : 2.1\n", 1),  # quoted, its colon on the next line
    ],
)
def test_only_a_workflow_with_a_torch_key_is_parsed(tmp_path, workflow, problems):
    files = {"setup.py": "from setuptools import setup\nsetup()\n"}
    floors = declared_floors(write(tmp_path, {**files, ".github/workflows/ci.yml": workflow}))
    assert len(floors.problems) == problems, floors.problems


@pytest.mark.parametrize(
    ("text", "top"),
    [
        ("torch>=1.12,<2.0", ("2.0", True)),
        ("torch==2.0.1", ("2.0.1", False)),
        ("torch~=2.1.0", ("2.2", True)),
        ("torch>=1.12", None),
    ],
)
def test_a_declared_top_is_the_newest_release_admitted(tmp_path, text, top):
    floors = declared_floors(write(tmp_path, {"requirements.txt": text + "\n"}))
    found = floors.tops.get("torch")
    assert (None if found is None else (str(found[0]), found[1])) == top


def test_one_declaration_without_a_top_leaves_the_range_open(tmp_path):
    files = {"requirements.txt": "torch==1.13.1\n", "requirements-dev.txt": "torch>=1.12\n"}
    floors = declared_floors(write(tmp_path, files))
    assert str(floors.torch) == "1.12" and "torch" not in floors.tops


@pytest.mark.parametrize("name", ["Pipfile", "environment.yml"])
def test_environment_files_mark_a_project_root(tmp_path, name):
    (tmp_path / name).write_text("")
    assert find_project_root(tmp_path / "src" / "train.py") == tmp_path.resolve()


_STEPS_WITH_A_TAG = "    steps:\n      - run: !custom echo\n"  # the safe loader refuses the tag


@pytest.mark.parametrize(
    ("workflow", "listed", "problems"),
    [
        # Only each job's matrix is built: a tag the safe loader refuses elsewhere is
        # not read, so not reported (the whole document's reading refused it).
        (
            "jobs:\n  test:\n    strategy:\n      matrix:\n        torch: ['2.1', '2.4']\n"
            + _STEPS_WITH_A_TAG,
            "2.1, 2.4",
            0,
        ),
        # A merge key on the way to a matrix: the whole document is read (and resolves it).
        (
            "x: &base\n  strategy:\n    matrix:\n      torch: ['1.13', '2.0']\n"
            "jobs:\n  test:\n    <<: *base\n    runs-on: ubuntu-latest\n",
            "1.13, 2.0",
            0,
        ),
        # A key given twice: the last, as the loader keeps it.
        (
            "jobs:\n  test:\n    strategy:\n      matrix:\n        torch: ['1.9']\n"
            "    strategy:\n      matrix:\n        torch: ['2.2']\n",
            "2.2",
            0,
        ),
        # A merge key inside the matrix: built by the loader, which resolves it.
        (
            "x: &rows\n  torch: ['2.3']\njobs:\n  test:\n    strategy:\n      matrix:\n"
            "        <<: *rows\n",
            "2.3",
            0,
        ),
    ],
    ids=["a tag outside the matrix", "merged job", "repeated key", "merged matrix"],
)
def test_a_workflow_matrix_is_read_as_the_whole_document_reads_it(
    tmp_path, workflow, listed, problems
):
    files = {"setup.py": "from setuptools import setup\nsetup()\n"}
    floors = declared_floors(write(tmp_path, {**files, ".github/workflows/ci.yml": workflow}))
    assert floors.sources["torch"].partition("matrix: ")[2] == listed, floors
    assert len(floors.problems) == problems, floors.problems
