"""The default target is the floor the project declares; the command line and config win.

End to end through ``codemods.migrate`` and ``codemods.lint``: a project in ``tmp_path``
declares its torch floor, and a fix whose new form is newer than that floor is withheld
(with the reason) while an explicit ``--target-torch`` or ``[tool.fsdp-compat]`` target
wins; the summary names the target and where it came from. The readers of each file
format are tested in test_declared_floor.py.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from codemods import lint, migrate
from codemods.cli import targets
from codemods.cli.floors import declared_floors, find_project_root

ROOT = Path(__file__).resolve().parents[1]

# FSDP102: torch 2.0 renamed the policy argument; at torch 1.12 the old name is right.
POLICY = "def policy(module, recurse, unwrapped_params):\n    return recurse\n"
POLICY_FIXED = "def policy(module, recurse, nonwrapped_numel):\n    return recurse\n"
# FSDP121: deprecated in torch 2.2, its fix (``dcp.load``) offered from torch 2.4.
LOAD = 'import torch.distributed.checkpoint as dcp\ndcp.load_state_dict(state, dcp.FileSystemReader("c"))\n'  # noqa: E501
LOAD_FIXED = 'import torch.distributed.checkpoint as dcp\ndcp.load(state, storage_reader=dcp.FileSystemReader("c"))\n'  # noqa: E501
TOO_OLD = "[no fix before torch 2.4: the target is torch 2.2]"


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_migrate(capsys, *argv: str) -> tuple[int, str]:
    """The exit code, and what migrate printed (findings on stdout, then stderr's summary)."""
    code = migrate.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_fix_newer_than_the_declared_floor_is_not_applied(here, capsys):
    project(here, {"requirements.txt": "torch>=1.12.0\n", "policy.py": POLICY})
    code, err = run_migrate(capsys, "policy.py")
    assert code == 0 and Path("policy.py").read_text() == POLICY  # right at torch 1.12
    assert "target torch 1.12 (declared: requirements.txt:1: torch>=1.12.0); Lightning latest" in (
        err.splitlines()
    )


def test_without_a_declaration_the_current_release_is_the_target(here, capsys):
    project(here, {"policy.py": POLICY, "load.py": LOAD})
    code, err = run_migrate(capsys, ".")
    assert code == 1
    assert Path("policy.py").read_text() == POLICY_FIXED
    assert Path("load.py").read_text() == LOAD_FIXED
    assert "target" not in err  # no target line: the summary is as it always was


def test_a_finding_whose_fix_is_too_new_is_reported_with_the_reason(here, capsys):
    project(here, {"requirements.txt": "torch>=2.2\n", "load.py": LOAD})
    code, err = run_migrate(capsys, "load.py")
    assert code == 1 and Path("load.py").read_text() == LOAD
    assert "load.py:2:1: FSDP121 " in err and err.splitlines()[0].endswith(TOO_OLD)
    assert "target torch 2.2 (declared: requirements.txt:1: torch>=2.2); Lightning latest" in err


@pytest.mark.parametrize(
    ("argv", "config", "origin"),
    [
        (["--target-torch", "2.4"], "", "--target-torch"),
        ([], '[tool.fsdp-compat]\ntarget-torch = "2.4"\n', "[tool.fsdp-compat] target-torch in "),
    ],
    ids=["command line", "config"],
)
def test_an_explicit_target_wins(here, capsys, argv, config, origin):
    files = {"requirements.txt": "torch>=2.2\n", "load.py": LOAD}
    project(here, {**files, "pyproject.toml": config} if config else files)
    code, err = run_migrate(capsys, *argv, "load.py")
    assert code == 1 and Path("load.py").read_text() == LOAD_FIXED
    line = next(line for line in err.splitlines() if line.startswith("target "))
    assert line.startswith(f"target torch 2.4 ({origin}") and line.endswith("; Lightning latest")


def test_the_command_line_wins_over_the_config(here, capsys):
    project(
        here,
        {"pyproject.toml": '[tool.fsdp-compat]\ntarget-torch = "2.2"\n', "load.py": LOAD},
    )
    code, err = run_migrate(capsys, "--target-torch", "2.4", "load.py")
    assert code == 1 and "target torch 2.4 (--target-torch); Lightning latest" in err


def test_an_unreadable_setup_py_gives_a_note_and_the_default_target(here, capsys):
    setup = "from setuptools import setup\nsetup(install_requires=read_requirements())\n"
    project(here, {"setup.py": setup, "load.py": LOAD})
    code, err = run_migrate(capsys, "load.py")
    assert code == 1 and Path("load.py").read_text() == LOAD_FIXED  # the default target
    assert err.splitlines()[-1] == (
        "note: setup.py:2: install_requires is not a literal list (read_requirements()); "
        "its requirements are not read; the default target is used"
    )


def test_each_project_of_a_run_has_its_own_target(here, capsys):
    project(here, {"old/requirements.txt": "torch>=2.2\n", "old/load.py": LOAD})
    project(here, {"new/pyproject.toml": "[project]\nname = 'n'\n", "new/load.py": LOAD})
    code, err = run_migrate(capsys, "old", "new")
    assert Path("old/load.py").read_text() == LOAD and Path("new/load.py").read_text() == LOAD_FIXED
    lines = [line for line in err.splitlines() if line.startswith("target ")]
    assert lines == [  # one line per distinct target, by project root
        "target torch latest; Lightning latest",
        "target torch 2.2 (declared: old/requirements.txt:1: torch>=2.2); Lightning latest",
    ]


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_the_summary_lists_projects_by_root_whatever_order_files_come_in(here, order):
    """With several jobs, files finish in any order: the summary must not follow it."""
    project(here, {"a/requirements.txt": "torch>=2.2\n", "a/x.py": LOAD})
    project(here, {"b/requirements.txt": "torch>=2.4\n", "b/x.py": LOAD})
    chosen = targets.ProjectTargets()
    for name in order:
        chosen.for_file(Path(name) / "x.py")
    assert chosen.summary_lines() == [
        "target torch 2.2 (declared: a/requirements.txt:1: torch>=2.2); Lightning latest",
        "target torch 2.4 (declared: b/requirements.txt:1: torch>=2.4); Lightning latest",
    ]
    assert [Path(p["root"]).name for p in chosen.report()] == ["a", "b"]


def test_quiet_prints_no_target_line_and_the_report_holds_the_targets(here, capsys):
    project(here, {"requirements.txt": "torch>=2.2\n", "load.py": LOAD})
    code, err = run_migrate(capsys, "--quiet", "--check", "--report", "r.json", "load.py")
    assert code == 1 and "target" not in err.replace(TOO_OLD, "")
    (entry,) = json.loads(Path("r.json").read_text())["summary"]["targets"]
    assert entry == {
        "root": str(here.resolve()),
        "torch": {"release": "2.2", "origin": "declared: requirements.txt:1: torch>=2.2"},
        "lightning": {"release": None, "origin": "default"},
        "notes": [],
    }


def test_lint_marks_no_fix_for_a_too_new_form_and_names_the_target(here, capsys):
    project(here, {"setup.cfg": "[options]\ninstall_requires =\n    torch>=2.2\n", "a.py": LOAD})
    assert lint.main(["a.py"]) == 1
    out = capsys.readouterr().out
    assert "[*]" not in out and TOO_OLD in out
    assert out.endswith(
        "target torch 2.2 (declared: setup.cfg [options] install_requires: torch>=2.2); "
        "Lightning latest\n"
    )
    assert lint.main(["--target-torch", "2.4", "a.py"]) == 1
    out = capsys.readouterr().out
    assert "FSDP121 [*]" in out and "target torch 2.4 (--target-torch)" in out


def test_lint_on_stdin_takes_the_target_of_the_named_file_only(here, capsys, monkeypatch):
    import io
    import sys

    project(here, {"requirements.txt": "torch>=2.2\n"})
    for argv, declared in ((["-"], False), (["--stdin-filename", "src/a.py", "-"], True)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LOAD.encode())))
        lint.main(argv)
        assert (TOO_OLD in capsys.readouterr().out) is declared


def test_each_project_is_found_and_read_once(here, capsys, monkeypatch):
    for n in range(30):
        project(here, {f"pkg/sub{n % 3}/m{n}.py": POLICY})
    project(here, {"requirements.txt": "torch>=1.12\n"})
    reads = []
    real = targets.declared_floors
    monkeypatch.setattr(targets, "declared_floors", lambda root: reads.append(root) or real(root))
    checks = []
    is_root = targets.is_project_root
    monkeypatch.setattr(targets, "is_project_root", lambda d: checks.append(d) or is_root(d))
    assert run_migrate(capsys, "--jobs", "1", "pkg")[0] == 0
    assert reads == [here.resolve()]
    assert len(checks) == len(set(checks)) == 5  # pkg/sub0, sub1, sub2, pkg, the root


def test_the_shipped_legacy_scripts_and_fixtures_are_their_own_projects():
    # This repository's pyproject.toml declares lightning>=2.0 (an extra); the examples
    # and the migrate fixtures are legacy user code shown at the current releases.
    assert declared_floors(ROOT).lightning is not None
    for inside in (
        ROOT / "examples" / "legacy" / "custom_policy.py",
        ROOT / "tests" / "fixtures" / "migrate" / "any" / "input.py",
    ):
        root = find_project_root(inside)
        assert root is not None and root != ROOT
        floors = declared_floors(root)
        assert (floors.torch, floors.lightning, floors.problems) == (None, None, [])
