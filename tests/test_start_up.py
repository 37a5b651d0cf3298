"""What a process imports before it does its work: a commit hook's lint, ``python -m compat``.

A one-file lint (what pre-commit and an editor pay per call, issue 44) imports neither
the readers of a project's declarations nor ``packaging``'s requirement and specifier
parsers where there is no project file to read, no FSDP401 survey where FSDP401 has no
call to convert, no worker pool and no libcst for a file the ``ast`` detector decides.
``python -m compat`` imports no torch for a program that imports none. Each run is a
fresh process, and the modules it loaded are read at its end: the figures themselves
are for ``benchmarks/goals.py``, not for a timed test.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.cli.help_format import terminal_columns
from codemods.registry import REGISTRY
from codemods.rules import index
from codemods.screen import filter_table
from codemods.screen.prefilter import rule_filter
from compat.dropin.plan import TABLE, from_table, plan, table
from tests.checkout_env import checkout_env

ROOT = Path(__file__).resolve().parents[1]

#: Findings the ``ast`` detector decides (a FairScale wrapper, a renamed policy).
LEGACY = (
    "from fairscale.nn import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
    "model = FSDP(model, auto_wrap_policy=default_auto_wrap_policy)\n"
)

#: Modules a one-file lint with no project file must not load, and why they exist.
NOT_FOR_ONE_FILE = (
    "packaging.requirements",  # declarations: requirements.txt, setup.py, pyproject.toml
    "packaging.specifiers",
    "packaging.tags",
    "codemods.cli.requirement_files",
    "codemods.cli.environment_files",
    "codemods.cli.setup_py",
    "codemods.cli.specifiers",
    "codemods.cli.project_classes",  # classes across the files of a run (two files or more)
    "codemods.cli.project_fsdp1",  # FSDP1 checks across the files of a run
    "codemods.rules.fsdp401.decide",  # FSDP401's survey, where it converts a call
    "codemods.rules.fsdp401.companion",
    "multiprocessing",  # the worker pool
    "libcst._nodes.base",  # the ast detector decides the file (``libcst`` itself is lazy)
    "codemods.batch.notebooks",  # a notebook's cells
    "shutil",  # argparse's terminal width (codemods.cli.help_format)
    "codemods.rules.fsdp401",  # behaviours load for the names the file meets (the index's table)
    "codemods.rules.fsdp115",
    "codemods.rules.fsdp132",
    "codemods.rules.kinds.string_value",  # a kind's behaviour, for a rule of that kind met
    "codemods.rules.kinds.method_rename",
    "codemods.rules.kinds.default_change",
    "argparse",  # a hook's command line, flags and paths, is read without it (cli/quick_args.py)
    "gettext",  # argparse's
    "dataclasses",  # the records on the path are named tuples and plain classes (records.py)
    "inspect",
    "threading",  # only a worker starts threads (codemods.batch.stopping)
    "symtable",  # the syntax check of a file the pre-filter rules out
    "tokenize",  # an ASCII file without noqa comments is decoded and read without it
    "codemods.batch.gitignore",  # a walk's .gitignore files: a named file is not walked
    "codemods.cli.diffs",  # --diff's patch
    "typing",  # for the checkers only (codemods/records.py), about 3 ms of CPU
    "packaging.version",  # rules' and ranges' releases are plain numbers (release_numbers.py)
    "signal",  # its enums: the handlers are installed through _signal (batch/stopping.py)
)


def _modules_after(argv: list[str], cwd: Path) -> tuple[set[str], str]:
    """The modules loaded by ``python -m ARGV...`` run in ``cwd``, and its output."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = {argv!r}\n"
        "try:\n"
        f"    runpy.run_module({argv[0]!r}, run_name='__main__', alter_sys=True)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    env = checkout_env()
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    output, _, modules = run.stdout.rpartition("MODULES ")
    return set(modules.split()), output + run.stderr


def test_a_one_file_lint_without_a_project_imports_only_what_it_needs(tmp_path):
    (tmp_path / "train.py").write_text(LEGACY)
    modules, output = _modules_after(["codemods.lint", "train.py"], tmp_path)
    assert "FSDP301" in output and "FSDP101" in output  # it did lint the file
    assert "train.py:2:41: FSDP101 [*]" not in output  # nothing declares 1.12 or newer
    assert "codemods.astlint.detector" in modules
    # What this Python's runpy loads by itself (typing and re on 3.9) is not the lint's;
    # on 3.9 the import names' positions are read from the statements' tokens.
    unwanted = set(NOT_FOR_ONE_FILE) - _runpy_loads(tmp_path)
    if sys.version_info < (3, 10):
        unwanted.discard("tokenize")
    assert not modules & unwanted, sorted(modules & unwanted)


def _runpy_loads(cwd: Path, site: bool = True) -> set[str]:
    """The modules ``import runpy`` loads in a fresh process, as the tested one starts.

    With ``site``, what an environment's ``.pth`` files import at every start (on the GPU
    leg's image, ``inspect``, ``shutil``, ``tokenize`` and ``typing``) is not the lint's.
    """
    flags = [] if site else ["-S"]
    run = subprocess.run(
        [sys.executable, *flags, "-c", "import runpy, sys; print(' '.join(sys.modules))"],
        cwd=cwd,
        env=checkout_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return set(run.stdout.split())


def _behaviour_modules(modules: set[str]) -> set[str]:
    return {m.rpartition(".")[2] for m in modules if m.startswith("codemods.rules.fsdp")}


def test_a_one_file_lint_loads_the_behaviours_of_the_names_it_meets_only(tmp_path):
    (tmp_path / "train.py").write_text(LEGACY)
    modules, _ = _modules_after(["codemods.lint", "train.py"], tmp_path)
    # The rules of its names: FSDP101 and FSDP301, and FSDP311 looks at calls of the wrapper.
    assert _behaviour_modules(modules) == {"fsdp101", "fsdp301", "fsdp311"}
    (tmp_path / "train.py").write_text("import torch\n\n\ndef f(model):\n    return model\n")
    modules, output = _modules_after(["codemods.lint", "--select", "FSDP", "train.py"], tmp_path)
    assert "All checks passed" in output, output
    assert not _behaviour_modules(modules)


def test_the_index_table_is_the_registry_s():
    assert index.TABLE.read_text(encoding="utf-8") == index.table(REGISTRY.rules), (
        "the registry or a behaviour changed: run `python -m codemods.rules.index`"
    )
    shipped, built = index.INDEX, index.Index(REGISTRY.rules)
    assert shipped.references.rules == built.references.rules
    for what in ("calls", "partials"):
        found = {name: b.rules for name, b in getattr(shipped, what).items()}
        assert found == {name: b.rules for name, b in getattr(built, what).items()}
    for flag in index.FLAGS:
        assert getattr(shipped, flag).rules == getattr(built, flag).rules
    behaviour = index.behaviour_for(REGISTRY["FSDP302"])
    assert shipped.references["fairscale.nn.wrap.enable_wrap"] is behaviour


def test_the_pre_filter_table_is_the_registry_s():
    shipped = Path(filter_table.TABLE).read_bytes()
    assert shipped.decode() == filter_table.table(REGISTRY.rules), (
        "the registry or what a kind needs changed: run `python -m codemods.screen.filter_table`"
    )
    rows, shared = filter_table.read(shipped)
    assert rows == {rule.code: filter_table.row(rule) for rule in REGISTRY}
    assert shared == filter_table.shared_words(REGISTRY) and shared
    for rule in REGISTRY:
        assert filter_table.row_for(rule) == filter_table.row(rule)


def test_a_rule_the_pre_filter_table_does_not_hold_is_derived():
    """A rule of the same code but other names (a test's, an entry edited since) is not the
    table's: its words come from what it needs."""
    shipped = REGISTRY["FSDP301"]
    edited = shipped._replace(old=("fairscale.nn.misc.FlattenParamsWrapper",))
    assert filter_table.row_for(edited) == filter_table.row(edited) != filter_table.row(shipped)
    assert rule_filter(edited).admits(b"from fairscale.nn.misc import FlattenParamsWrapper\n")
    assert not rule_filter(shipped).admits(b"from fairscale.nn.misc import FlattenParamsWrapper\n")


@pytest.mark.parametrize("columns", ["100", "0", "-3", "wide", ""])
def test_the_help_is_as_wide_as_shutil_says(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_a_project_file_loads_its_readers(tmp_path):
    # The other side of the test above: the readers are there when there is a
    # declaration to read (so the test above can fail), and they read it.
    (tmp_path / "requirements.txt").write_text("torch>=2.4\n")
    (tmp_path / "train.py").write_text(LEGACY)
    modules, output = _modules_after(["codemods.lint", "train.py"], tmp_path)
    assert {"codemods.cli.requirement_files", "packaging.requirements"} <= modules
    # torch 2.4.. read from it: FSDP101's fix runs on the whole range
    assert "train.py:2:41: FSDP101 [*]" in output


def test_a_project_configuration_loads_no_dataclasses_nor_argparse(tmp_path):
    # A pyproject.toml whose [tool.fsdp-compat] sets both ranges, as examples/legacy's
    # does: it is read, and the release check reads the measured releases. (Where a range
    # is read from the declarations, packaging's requirement parser imports dataclasses.)
    table = '[tool.fsdp-compat]\ntarget-torch = "2.6.."\ntarget-lightning = "2.1.."\n'
    (tmp_path / "pyproject.toml").write_text(table)
    (tmp_path / "train.py").write_text(LEGACY)
    modules, output = _modules_after(["codemods.lint", "--force-exclude", "train.py"], tmp_path)
    assert "train.py:2:41: FSDP101 [*]" in output  # torch 2.6.. from the configuration
    toml = "tomllib" if sys.version_info >= (3, 11) else "tomli"  # before 3.11: the backport
    assert {toml, "codemods.registry.deprecations"} <= modules
    assert not modules & ({"dataclasses", "inspect", "argparse"} - _runpy_loads(tmp_path))


def test_two_files_load_the_project_scanners(tmp_path):
    (tmp_path / "a.py").write_text(LEGACY)
    (tmp_path / "b.py").write_text("x = 1\n")
    modules, _ = _modules_after(["codemods.lint", "a.py", "b.py"], tmp_path)
    assert "codemods.cli.project_classes" in modules


def test_python_m_compat_imports_no_torch_for_a_program_that_imports_none(tmp_path):
    (tmp_path / "script.py").write_text("import sys\nprint('torch' in sys.modules)\n")
    modules, output = _modules_after(["compat", "script.py"], tmp_path)
    assert output.startswith("False"), output
    assert "torch" not in modules


def test_python_m_compat_builds_no_rules_for_a_program_that_imports_nothing_legacy(tmp_path):
    (tmp_path / "script.py").write_text("print('ran')\n")
    modules, output = _modules_after(["compat", "script.py"], tmp_path)
    assert output.startswith("ran"), output
    # Neither the registry's dataclasses, nor the releases (packaging), nor the verdicts.
    assert not modules & {"codemods.registry.model", "packaging.version", "compat.call_source"}


def test_python_m_compat_loads_no_typing_pathlib_nor_re_for_a_program_that_imports_none(
    tmp_path,
):
    # Each was a third or more of what `python -m compat` added to such a program's start
    # (issue 44). Without `site` (-S): this environment's editable install loads them at
    # every start; the packages it would add come through PYTHONPATH instead.
    import importlib.util

    torch = importlib.util.find_spec("torch")  # compat's check finds it, the run imports none
    assert torch is not None and torch.origin is not None
    packages = str(Path(torch.origin).resolve().parents[1])
    (tmp_path / "script.py").write_text(
        "import sys\nprint(sorted(m for m in ('typing', 'pathlib', 're') if m in sys.modules))\n"
    )
    run = subprocess.run(
        [sys.executable, "-S", "-m", "compat", "script.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), packages])},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    # On Python 3.9 runpy itself (``-m``) loads typing and re: only compat's own count.
    loaded = set(ast.literal_eval(run.stdout.strip())) - _runpy_loads(tmp_path, site=False)
    assert loaded == set(), run.stdout + run.stderr


def test_the_drop_in_plan_table_is_the_registry_s():
    assert TABLE.read_text(encoding="utf-8") == table(REGISTRY), (
        "the registry changed: run `python -m compat.dropin.plan`"
    )
    assert from_table() == plan(REGISTRY)


def test_the_plan_command_runs_a_module_its_package_has_not_imported():
    # runpy warns (RuntimeWarning) when `-m pkg.mod` finds pkg.mod imported by pkg.
    code = "import compat, compat.dropin, sys; print('compat.dropin.plan' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"


def test_python_m_compat_still_serves_a_program_that_imports_torch_later(tmp_path):
    (tmp_path / "script.py").write_text(
        "import sys\n"
        "assert 'torch' not in sys.modules\n"
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
        "print(default_auto_wrap_policy.__module__)\n"
        # what the drop-in asks of torch when it translates an old FSDP call
        "from compat.features import current\n"
        "current()\n"
    )
    modules, output = _modules_after(["compat", "script.py"], tmp_path)
    assert output.startswith("compat."), output
    assert "[FSDP101]" in output
    # Lightning costs each rank of a torch-only script a second and 44 MB to import.
    assert not {"lightning", "pytorch_lightning"} & modules


def test_long_lived_leaves_the_collector_as_it_found_it():
    import gc

    from codemods.startup import long_lived

    assert gc.isenabled()
    with long_lived():
        assert not gc.isenabled()  # paused while the modules load
    assert gc.isenabled() and gc.get_freeze_count() > 0
    gc.disable()
    try:
        with long_lived():
            pass
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
