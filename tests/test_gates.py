"""Which code bridges API generations on purpose (issue 32's shapes), on both trees."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings
from codemods.syntax.gate_releases import newer_release
from codemods.syntax.gates import ast_fallback_regions, fallback_regions, newer_branch

OLD = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy as policy\n"
NEW = "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy as policy\n"


def _lines_reported(source: str) -> list[int]:
    return sorted(f.line for f in lint(source.encode(), Settings(select=("FSDP101",))))


@pytest.mark.parametrize(
    ("test", "newer"),
    [
        ("version.parse(torch.__version__) >= version.parse('2.0')", True),
        ("torch.__version__ > '1.13'", True),
        ("'2.0' <= torch.__version__", True),
        ("torch_version() < (2, 0, 0)", False),
        ("_TORCH_GREATER_EQUAL_2_0", True),
        ("not _TORCH_GREATER_EQUAL_2_0", False),
        ("_TORCH_LESS_THAN_2_1", False),
        ("is_torch_2_0", True),
        ("hasattr(torch.distributed.fsdp, 'ModuleWrapPolicy')", True),
        ("Version(torch.__version__) == Version('1.12.0')", None),
        ("HAVE_FAIRSCALE", None),
        ("_TORCH_GREATER_EQUAL_2_0 and world_size > 1", None),
        ("int(torch.__version__.split('.')[0]) >= 2", None),
    ],
)
def test_which_branch_is_for_the_newer_release(test, newer):
    assert newer_branch(test) is newer


@pytest.mark.parametrize(
    ("test", "newer"),
    [
        ("full and torch.__version__ >= '2.0'", True),
        ("_TORCH_GREATER_EQUAL_2_0 and world_size > 1", True),
        ("a and b and _TORCH_GREATER_EQUAL_2_0", True),
        ("full or _TORCH_LESS_THAN_2_1", False),
        ("not (full and _TORCH_GREATER_EQUAL_2_0)", False),
        # an older gate joined with `and` (its else runs on every release), a newer with
        # `or`, two gates pointing apart, a gate that names no direction: not said
        ("full and _TORCH_LESS_THAN_2_1", None),
        ("full or _TORCH_GREATER_EQUAL_2_0", None),
        ("_TORCH_GREATER_EQUAL_2_0 and _TORCH_LESS_THAN_2_4", None),
        ("HAVE_FAIRSCALE and _TORCH_GREATER_EQUAL_2_0", None),
    ],
)
def test_a_gate_joined_with_other_tests_says_one_branch(test, newer):
    """Only the fallback regions ask this (``combined``); without it a join says nothing."""
    assert newer_branch(test, combined=True) is newer
    assert newer_branch(test) is None


SHAPES = {
    # The branch for the newer release is current code: only the older one is left alone.
    "newer-body": ("if _TORCH_GREATER_EQUAL_2_0:\n    " + OLD + "else:\n    " + OLD, [2]),
    "newer-else": ("if torch_version() < (2, 0):\n    " + OLD + "else:\n    " + OLD, [4]),
    "elif-older": ("if _TORCH_GREATER_EQUAL_2_1:\n    " + OLD + "elif x:\n    " + OLD, [2]),
    # A newer gate joined with `and`: its body runs on the newer releases alone (checked),
    # its else on any (left alone); an older one joined with `or` the other way round.
    "and-newer": ("if full and _TORCH_GREATER_EQUAL_2_0:\n    " + OLD + "else:\n    " + OLD, [2]),
    "or-older": ("if full or _TORCH_LESS_THAN_2_0:\n    " + OLD + "else:\n    " + OLD, [4]),
    # A test that does not say which is newer: the whole `if` is left alone.
    "undirected": ("if HAVE_FAIRSCALE:\n    " + OLD + "else:\n    " + NEW, []),
    "and-older": ("if full and _TORCH_LESS_THAN_2_0:\n    " + OLD + "else:\n    " + OLD, []),
    # try: new / except ImportError: old -- two real implementations: left alone.
    "fallback": ("try:\n    " + OLD + "except ImportError:\n    " + NEW, []),
    # An optional dependency (None, a flag, a stub, a warning): current code, reported.
    "optional-none": ("try:\n    " + OLD + "except ImportError:\n    policy = None\n", [2]),
    "optional-stub": (
        "try:\n    " + OLD + "except ImportError:\n"
        "    HAS = False\n    warnings.warn('no')\n"
        "    def policy(*a, **k):\n        return False\n",
        [2],
    ),
    # A function that does without it: the handler gives up and returns what it has.
    "optional-return": (
        "def policy_for(model):\n    try:\n        "
        + OLD.replace("\n", "\n        ").rstrip()
        + "\n        return policy\n    except ImportError:\n        return None\n",
        [3],
    ),
    # ... but a handler returning another implementation's answer is a fallback.
    "fallback-return": (
        "def policy_for(model):\n    try:\n        "
        + OLD.replace("\n", "\n        ").rstrip()
        + "\n        return policy\n    except ImportError:\n        return other(model)\n",
        [],
    ),
}


@pytest.mark.parametrize(("source", "lines"), SHAPES.values(), ids=SHAPES)
def test_lint_reports_current_code_and_leaves_bridges_alone(source, lines):
    assert _lines_reported(source) == lines


@pytest.mark.parametrize("source", [s for s, _ in SHAPES.values()], ids=SHAPES)
def test_the_libcst_engine_leaves_the_same_code_alone(source):
    findings = run(source.encode(), Settings(select=("FSDP101",))).findings
    assert sorted(f.line for f in findings) == _lines_reported(source)


def test_regions_are_the_older_branch_or_the_whole_statement():
    gate = cst.parse_statement("if _TORCH_GREATER_EQUAL_2_0:\n    a\nelse:\n    b\n")
    assert fallback_regions(gate) == (gate.orelse,)
    undirected = cst.parse_statement("if HAVE_FAIRSCALE:\n    a\nelse:\n    b\n")
    assert fallback_regions(undirected) == (undirected,)
    tree = ast.parse("if torch_version() < (2, 0):\n    a\nelse:\n    b\n")
    assert ast_fallback_regions(tree.body[0], lambda n: ast.unparse(n)) == tuple(tree.body[0].body)


GATED_LOAD = """\
import torch
from packaging import version
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
if version.parse(torch.__version__) < version.parse("2.1.0"):
    osd = FSDP.optim_state_dict_to_load(optim_state, model, optim)
else:
    osd = FSDP.optim_state_dict_to_load(model, optim, optim_state)
if _TORCH_GREATER_EQUAL_2_0:
    osd = FSDP.optim_state_dict_to_load(model, optim, optim_state)
"""


@pytest.mark.parametrize(
    ("test", "release"),
    [
        ('version.parse(torch.__version__) < version.parse("2.1.0")', (2, 1)),
        ("_TORCH_GREATER_EQUAL_2_1", (2, 1)),
        ("not _TORCH_GREATER_EQUAL_1_13", (1, 13)),
        ("torch_version() >= (2, 1)", None),  # a tuple: not read
        ("Version(torch.__version__) == Version('2.1')", None),  # no newer branch
        ("version.parse('2.0') <= torch_ver < version.parse('2.2')", None),  # two numbers
        ("full and _TORCH_GREATER_EQUAL_2_1", None),  # its else runs before and after 2.1
    ],
)
def test_the_release_a_gates_newer_branch_runs_on(test, release):
    assert newer_release(test) == release


def test_a_call_in_a_gates_newer_branch_is_judged_at_that_release():
    """FSDP132 at a 2.0 target: the new order is right where a gate says torch >= 2.1."""
    settings = Settings(select=("FSDP132",), releases=Releases.parse(torch="2.0"))
    assert sorted(f.line for f in lint(GATED_LOAD.encode(), settings)) == [9]
    assert sorted(f.line for f in run(GATED_LOAD.encode(), settings).findings) == [9]
