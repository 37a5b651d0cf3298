"""Lint on ``ast`` never loads libcst; a fix, or a file only libcst decides, does.

libcst's import costs about 0.2 s, as much as linting a 2,000-line file on ``ast``
(issue 18): :mod:`codemods.syntax.lazy_libcst` defers it, and these runs, each in a fresh
process, check that no module-level statement of the behaviours reads it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.realistic_tree import write_tree

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


# A FairScale wrapper and a renamed policy: findings the ast detector decides.
_DECIDED = (
    "from fairscale.nn import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
    "model = FSDP(model, auto_wrap_policy=default_auto_wrap_policy)\n"
)
# An imported name declared nonlocal: only libcst's scopes decide this file.
_UNDECIDED = (
    "def f():\n"
    "    from fairscale.nn import FullyShardedDataParallel as FSDP\n"
    "    def g():\n"
    "        nonlocal FSDP\n"
    "        FSDP(m)\n"
)


def _loads_libcst(tmp_path, source: str, *flags: str) -> tuple[bool, str]:
    """Whether ``python -m codemods.lint``'s process loaded libcst, and its output."""
    path = tmp_path / "train.py"
    path.write_text(source)
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['codemods.lint', '--exit-zero', *{list(flags)!r}, {str(path)!r}]\n"
        "try:\n"
        "    runpy.run_module('codemods.lint', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED' if 'libcst._nodes.base' in sys.modules else 'NOT LOADED')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return run.stdout.rstrip().endswith("\nLOADED"), run.stdout


def test_lint_decided_on_ast_does_not_load_libcst(tmp_path):
    loaded, output = _loads_libcst(tmp_path, _DECIDED)
    assert "FSDP301" in output and "FSDP101" in output
    assert not loaded, output


def test_a_file_only_libcst_decides_loads_it(tmp_path):
    loaded, output = _loads_libcst(tmp_path, _UNDECIDED)
    assert "FSDP301" in output
    assert loaded


def test_a_fix_loads_libcst(tmp_path):
    loaded, output = _loads_libcst(tmp_path, _DECIDED, "--fix")
    assert loaded
    assert "size_based_auto_wrap_policy" in (tmp_path / "train.py").read_text()


@pytest.mark.slow
def test_the_realistic_tree_lints_without_libcst(tmp_path):
    """Every file of the benchmarks' tree, in one process: all rules' halves are run."""
    tree = tmp_path / "tree"
    write_tree(tree, 60)
    loaded, output = _loads_libcst(tmp_path, "", "--jobs", "1", str(tree))
    assert "FSDP103" in output and "FSDP115" in output
    assert not loaded, output


def test_libcst_imported_past_the_stand_in_keeps_its_submodules():
    """``from libcst.metadata import ...`` after the stand-in is made: libcst whole.

    (``importlib.util.LazyLoader``'s stand-in left ``libcst.metadata`` without its
    ``scope_provider`` attribute, which libcst's own unused-import pass reads.)
    """
    code = (
        "from codemods.syntax.lazy_libcst import cst\n"
        "from libcst.metadata import scope_provider\n"
        "import libcst, libcst.metadata\n"
        "assert libcst.metadata.scope_provider is scope_provider\n"
        "assert cst.metadata is libcst.metadata and cst.Name is libcst.Name\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


# A file with nothing to fix, then one whose FSDP1 wrapper the opt-in FSDP401 looks at and
# whose signature holds a string annotation (libcst's unused-import pass reads those with
# ``libcst.metadata.scope_provider``): libcst is loaded in the middle of the run.
_SECOND = (
    "from typing import List\n"
    "\n"
    "try:\n"
    "    from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType\n"
    "except ImportError:\n"
    "    pass\n"
    "\n"
    "\n"
    "class Runner:\n"
    "    def __init__(self, net, devices: List['torch.device']):\n"
    "        self.net = FullyShardedDataParallel(net)\n"
    "\n"
    "    def restore(self, state):\n"
    "        with FullyShardedDataParallel.state_dict_type("
    "self.net, StateDictType.FULL_STATE_DICT):\n"
    "            self.net.load_state_dict(state)\n"
)


def test_a_migration_over_several_files_loads_libcst_whole(tmp_path):
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text(_SECOND)
    run = subprocess.run(
        [sys.executable, "-m", "codemods.migrate", "--diff", "--unsafe-fixes", "--jobs", "1"]
        + ["--extend-select", "FSDP4", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert "internal error" not in run.stderr, run.stderr
    assert "FSDP401" in run.stderr and "FSDP115" in run.stderr, run.stderr
    assert "0 errors" in run.stderr, run.stderr
