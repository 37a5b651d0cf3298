"""The releases a project runs on are a range: declared, else evidenced by each file.

End to end through ``codemods.migrate`` and ``codemods.lint``: a project in ``tmp_path``
declares its torch range (or nothing, or a pin that names no release); what is a problem
on any release of the range is reported, and a fix is applied only where its new form
runs on all of them, else the finding says which range it would break. An explicit
``--target-torch`` (a release or a range) or ``[tool.fsdp-compat]`` wins; the summary
names each project's range and where its bounds came from. The readers of each file
format are tested in test_declared_floor.py, evidence floors in test_evidence.py.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from codemods import lint, migrate
from codemods.cli import targets
from codemods.cli.floors import declared_floors, find_project_root
from codemods.release_numbers import release
from codemods.releases import Releases, Span
from codemods.screen.evidence import against_declared
from codemods.settings import Settings

ROOT = Path(__file__).resolve().parents[1]

# FSDP102: torch 2.0 renamed the policy argument; at torch 1.12 the old name is right.
POLICY = "def policy(module, recurse, unwrapped_params):\n    return recurse\n"
POLICY_FIXED = "def policy(module, recurse, nonwrapped_numel):\n    return recurse\n"
# FSDP121: deprecated in torch 2.2, its fix (``dcp.load``) offered from torch 2.4.
LOAD = 'import torch.distributed.checkpoint as dcp\ndcp.load_state_dict(state, dcp.FileSystemReader("c"))\n'  # noqa: E501
LOAD_FIXED = 'import torch.distributed.checkpoint as dcp\ndcp.load(state, storage_reader=dcp.FileSystemReader("c"))\n'  # noqa: E501
TOO_OLD = "[no fix runs on torch 2.2..latest: it needs torch 2.4]"
EVIDENCE = "Lightning evidence..latest (floor: each file's evidence floor, as nothing declares one)"


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


def test_a_removal_inside_the_declared_range_is_reported_and_not_fixed(here, capsys):
    # torch>=1.12 runs on 2.0 too, where torch calls policies with `nonwrapped_numel=`:
    # the old keyword fails there, and the new one fails on 1.12 and 1.13.
    project(here, {"requirements.txt": "torch>=1.12.0\n", "policy.py": POLICY})
    code, err = run_migrate(capsys, "policy.py")
    assert code == 1 and Path("policy.py").read_text() == POLICY
    assert "policy.py:1:29: FSDP102 " in err
    assert "[no fix runs on torch 1.12..latest: it needs torch 2.0]" in err
    assert (
        "releases torch 1.12..latest (floor: declared: requirements.txt:1: torch>=1.12.0); "
        + EVIDENCE
    ) in err.splitlines()


def test_a_ceiling_below_the_removal_leaves_the_old_form_unreported(here, capsys):
    project(here, {"requirements.txt": "torch>=1.12,<2.0\n", "policy.py": POLICY})
    code, err = run_migrate(capsys, "policy.py")
    assert code == 0 and Path("policy.py").read_text() == POLICY  # right on 1.12 to 1.13
    assert (
        "releases torch 1.12..<2.0 (floor: declared: requirements.txt:1: torch>=1.12,<2.0; " in err
    )


def test_a_fix_whose_new_form_runs_on_the_whole_range_is_applied(here, capsys):
    project(here, {"requirements.txt": "torch>=2.4\n", "load.py": LOAD})
    code, _ = run_migrate(capsys, "load.py")
    assert code == 1 and Path("load.py").read_text() == LOAD_FIXED


def test_a_finding_whose_fix_is_too_new_is_reported_with_the_reason(here, capsys):
    project(here, {"requirements.txt": "torch>=2.2\n", "load.py": LOAD})
    code, err = run_migrate(capsys, "load.py")
    assert code == 1 and Path("load.py").read_text() == LOAD
    assert "load.py:2:1: FSDP121 " in err and err.splitlines()[0].endswith(TOO_OLD)
    assert "releases torch 2.2..latest (floor: declared: requirements.txt:1: torch>=2.2)" in err


@pytest.mark.parametrize(
    ("argv", "config", "origin"),
    [
        (["--target-torch", "2.4"], "", "--target-torch"),
        (["--target-torch", "2.4..2.13"], "", "--target-torch"),
        ([], '[tool.fsdp-compat]\ntarget-torch = "2.4"\n', "target-torch in "),
        ([], '[tool.fsdp-compat]\ntarget-torch = "2.4.."\n', "target-torch in "),
    ],
    ids=["command line", "command-line range", "config", "config range"],
)
def test_an_explicit_range_wins(here, capsys, argv, config, origin):
    files = {"requirements.txt": "torch>=2.2\n", "load.py": LOAD}
    project(here, {**files, "pyproject.toml": config} if config else files)
    code, err = run_migrate(capsys, *argv, "load.py")
    assert code == 1 and Path("load.py").read_text() == LOAD_FIXED
    line = next(line for line in err.splitlines() if line.startswith("releases "))
    assert line.startswith("releases torch 2.4") and f"(floor: {origin}" in line


def test_the_command_line_wins_over_the_config(here, capsys):
    project(
        here,
        {"pyproject.toml": '[tool.fsdp-compat]\ntarget-torch = "2.2"\n', "load.py": LOAD},
    )
    code, err = run_migrate(capsys, "--target-torch", "2.4", "load.py")
    assert code == 1 and "releases torch 2.4 (floor: --target-torch; top: --target-torch)" in err


@pytest.mark.parametrize("bad", ["2.x", "2.6..2.4", "2.4...", "2.4..abc"])
def test_a_range_that_cannot_be_read_is_a_usage_error(here, capsys, bad):
    project(here, {"load.py": LOAD})
    with pytest.raises(SystemExit) as stop:
        migrate.main(["--target-torch", bad, "load.py"])
    assert stop.value.code == 2 and "--target-torch" in capsys.readouterr().err


def test_an_unreadable_setup_py_gives_a_note_and_the_evidence_floor(here, capsys):
    setup = "from setuptools import setup\nsetup(install_requires=read_requirements())\n"
    project(here, {"setup.py": setup, "load.py": LOAD})
    code, err = run_migrate(capsys, "load.py")
    # nothing readable declared: the file's evidence (torch.distributed.checkpoint: 2.0)
    assert code == 1 and Path("load.py").read_text() == LOAD
    assert "[no fix runs on torch 2.0..latest: it needs torch 2.4]" in err
    assert (
        "note: setup.py:2: install_requires is not a literal list (read_requirements()); "
        "its requirements are not read; it does not count"
    ) in err.splitlines()
    assert err.splitlines()[-1].startswith("note: a fix is made only where its new form runs")


def test_an_unversioned_pin_leaves_the_floor_to_the_evidence_and_says_so(here, capsys):
    module = textwrap.dedent(
        """\
        from pytorch_lightning import LightningModule


        class Model(LightningModule):
            def configure_sharded_model(self):
                pass
        """
    )
    pin = "pytorch-lightning @ git+https://github.com/PyTorchLightning/pytorch-lightning@3e1d2c4\n"
    project(here, {"requirements.txt": pin, "model.py": module})
    code, err = run_migrate(capsys, "model.py")
    assert code == 1 and Path("model.py").read_text() == module  # the pinned Lightning is 2021's
    assert (
        "FSDP207" in err and "[no fix runs on Lightning 1.0..latest: it needs Lightning 2.1" in err
    )
    assert "unknown below the evidence floor: requirements.txt:1: pytorch-lightning @ git+" in err


def test_each_project_of_a_run_has_its_own_range(here, capsys):
    project(here, {"old/requirements.txt": "torch>=2.2\n", "old/load.py": LOAD})
    project(here, {"new/requirements.txt": "torch>=2.4\n", "new/load.py": LOAD})
    code, err = run_migrate(capsys, "old", "new")
    assert Path("old/load.py").read_text() == LOAD and Path("new/load.py").read_text() == LOAD_FIXED
    lines = [line.split(")")[0] for line in err.splitlines() if line.startswith("releases ")]
    assert lines == [  # one line per distinct range, by project root
        "releases torch 2.4..latest (floor: declared: new/requirements.txt:1: torch>=2.4",
        "releases torch 2.2..latest (floor: declared: old/requirements.txt:1: torch>=2.2",
    ]


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_the_summary_lists_projects_by_root_whatever_order_files_come_in(here, order):
    """With several jobs, files finish in any order: the summary must not follow it."""
    project(here, {"a/requirements.txt": "torch>=2.2\n", "a/x.py": LOAD})
    project(here, {"b/requirements.txt": "torch>=2.4\n", "b/x.py": LOAD})
    chosen = targets.ProjectTargets()
    for name in order:
        chosen.for_file(Path(name) / "x.py")
    assert [line.split(")")[0] for line in chosen.summary_lines()] == [
        "releases torch 2.2..latest (floor: declared: a/requirements.txt:1: torch>=2.2",
        "releases torch 2.4..latest (floor: declared: b/requirements.txt:1: torch>=2.4",
    ]
    assert [Path(p["root"]).name for p in chosen.report()] == ["a", "b"]


def test_quiet_prints_no_range_line_and_the_report_holds_the_ranges(here, capsys):
    project(here, {"requirements.txt": "torch>=2.2,<2.9\n", "load.py": LOAD})
    code, err = run_migrate(capsys, "--quiet", "--check", "--report", "r.json", "load.py")
    assert code == 1 and "releases" not in err
    report = json.loads(Path("r.json").read_text())
    (entry,) = report["summary"]["targets"]
    assert entry["root"] == str(here.resolve()) and entry["notes"] == []
    assert entry["torch"] == {
        "range": "2.2..<2.9",
        "floor": "2.2",
        "floor_origin": "declared: requirements.txt:1: torch>=2.2,<2.9",
        "top": "2.9",
        "top_exclusive": True,
        "top_origin": "declared: requirements.txt:1: torch>=2.2,<2.9",
        "unversioned": None,
    }
    assert entry["lightning"]["floor_origin"] == "each file's evidence floor"
    (file,) = report["files"]
    assert file["releases"].startswith("torch 2.2..<2.9 (floor: declared: requirements.txt:1:")
    assert file["findings"][0]["no_fix"] == "no fix runs on torch 2.2..<2.9: it needs torch 2.4"


def test_lint_marks_no_fix_for_a_too_new_form_and_names_the_range(here, capsys):
    project(here, {"setup.cfg": "[options]\ninstall_requires =\n    torch>=2.2\n", "a.py": LOAD})
    assert lint.main(["a.py"]) == 1
    out = capsys.readouterr().out
    assert "[*]" not in out and TOO_OLD in out
    assert out.splitlines()[-2].startswith(
        "releases torch 2.2..latest (floor: declared: setup.cfg [options] install_requires: "
        "torch>=2.2)"
    )
    assert out.splitlines()[-1].startswith("note: a fix is made only where")
    assert lint.main(["--target-torch", "2.4", "a.py"]) == 1
    out = capsys.readouterr().out
    assert "FSDP121 [*]" in out and "releases" not in out  # every fix runs: no range line


def test_lint_on_stdin_takes_the_range_of_the_named_file_only(here, capsys, monkeypatch):
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
    assert run_migrate(capsys, "--jobs", "1", "pkg")[0] == 1  # FSDP102: removed in the range
    assert reads == [here.resolve()]
    assert len(checks) == len(set(checks)) == 5  # pkg/sub0, sub1, sub2, pkg, the root


def test_the_shipped_legacy_scripts_and_fixtures_are_their_own_projects():
    # This repository's pyproject.toml declares lightning>=2.0 (an extra); the examples
    # and the migrate fixtures are legacy user code, each folder its own project with a
    # range of its own ([tool.fsdp-compat]), not the repository's.
    assert declared_floors(ROOT).lightning is not None
    for inside in (
        ROOT / "examples" / "legacy" / "custom_policy.py",
        ROOT / "tests" / "fixtures" / "migrate" / "any" / "input.py",
    ):
        root = find_project_root(inside)
        assert root is not None and root != ROOT
        floors = declared_floors(root)
        assert (floors.torch, floors.lightning, floors.problems) == (None, None, [])


GATED_CHECKPOINT = """\
import torch
from packaging import version

if version.parse(torch.__version__) >= version.parse("1.12"):
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save(model, path):
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
    torch.save(state, path)
"""


@pytest.mark.parametrize(
    ("declared", "fixed"),
    [("torch>=1.12\n", False), (None, False), ("torch>=2.2\n", True)],
    ids=["the gate's release declared", "nothing declared", "the fix's release declared"],
)
def test_a_gated_file_gets_no_import_its_gate_does_not_admit(here, capsys, declared, fixed):
    """The unsafe FSDP115 fix imports torch 2.2's state-dict API at module level: in a
    file gated on torch 1.12 whose range starts below 2.2 that import would stop the
    module from importing on 1.12 to 2.1, so the fix is not made, and says why."""
    files = {"save.py": GATED_CHECKPOINT}
    if declared:
        files["requirements.txt"] = declared
    project(here, files)
    code, err = run_migrate(capsys, "--unsafe-fixes", "save.py")
    assert code == 1
    assert (Path("save.py").read_text() != GATED_CHECKPOINT) is fixed
    if not fixed:
        assert (
            "FSDP115" in err and "[no fix runs on torch 1." in err and "it needs torch 2.2]" in err
        )


# A conda pin below what the code uses (t5_11's shape): torch 1.10.2 has no MixedPrecision.
STALE_PIN = "name: env\ndependencies:\n  - python=3.8\n  - pytorch=1.10.2\n"
NEEDS_1_12 = (
    "from torch.distributed.fsdp import MixedPrecision\n"
    "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
    "policy, mp = default_auto_wrap_policy, MixedPrecision()\n"
)
SET_ASIDE = (
    "note: train.py: torch 1.10.2..<1.10.3 (declared: environment.yml dependencies: "
    "torch==1.10.2.*) is below what the file uses, `torch.distributed.fsdp.MixedPrecision` "
    "(torch 1.12): it is judged at torch 1.12..latest"
)


def test_a_declared_top_below_the_files_evidence_is_set_aside_and_said(here, capsys):
    project(here, {"environment.yml": STALE_PIN, "train.py": NEEDS_1_12})
    assert lint.main(["train.py"]) == 1  # was "All checks passed!", judged at 1.10.2
    out = capsys.readouterr().out
    assert "train.py:2:41: FSDP101 [*] " in out and out.splitlines()[-1] == SET_ASIDE
    code, err = run_migrate(capsys, "--report", "report.json", "train.py")
    assert code == 1 and "size_based_auto_wrap_policy" in Path("train.py").read_text()
    assert SET_ASIDE in err.splitlines()
    (file,) = json.loads(Path("report.json").read_text())["files"]
    assert file["notes"] == [SET_ASIDE]
    assert "declared 1.10.2..<1.10.3 (declared: environment.yml" in file["releases"]


@pytest.mark.parametrize(
    ("pin", "argv"),
    [
        ("  - pytorch=1.12.1\n", []),  # the pin admits what the file uses
        ("  - pytorch>=1.10\n", []),  # no top: a low floor is the project's to declare
        ("  - pytorch=1.10.2\n", ["--target-torch", "1.10"]),  # the user's own choice
    ],
)
def test_a_declared_range_the_evidence_fits_or_an_explicit_one_is_kept(here, capsys, pin, argv):
    project(here, {"environment.yml": "dependencies:\n" + pin, "train.py": NEEDS_1_12})
    lint.main([*argv, "train.py"])
    assert "is below what the file uses" not in capsys.readouterr().out


def test_a_file_with_nothing_to_find_still_says_its_pin_is_set_aside(here, capsys):
    project(here, {"environment.yml": STALE_PIN, "train.py": "import torch\n" + NEEDS_1_12})
    Path("plain.py").write_text("from torch.distributed.fsdp import MixedPrecision\n")
    assert lint.main(["plain.py"]) == 0
    assert "note: plain.py: torch 1.10.2..<1.10.3 (declared: " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("source", "parsed"),
    [
        (NEEDS_1_12, True),
        ("import torch.distributed.fsdp as f\n", True),  # the module is 1.11's
        ("import torch\nx = torch.ones(2)  # fsdp\n", True),  # a comment spells it: parsed
        ("import torch\nx = torch.ones(2)\n", False),  # nothing newer than 1.10.2 spelled
    ],
)
def test_only_a_file_spelling_a_name_newer_than_the_top_is_parsed_for_its_evidence(source, parsed):
    pin = Span(release("1.10.2"), release("1.10.2"), declared=True)
    _, tree = against_declared(source.encode(), Settings(releases=Releases(torch=pin)))
    assert (tree is not None) is parsed
