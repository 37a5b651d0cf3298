"""The detector's walk skips the subtrees it cannot act in, and acts the same.

:mod:`codemods.astlint.reach` marks the nodes above a name a rule may name, an import,
a class and (where a rule asks) a function; the walk enters only those. Here each
source is walked twice, pruned and whole (every node reached, and every chain whose
first name is looked up at all looked up, ``torch.zeros`` too), and the events (kind,
node, fallback), the findings and the plan's reasons must be the same; the whole walk's
calls of names no rule looks at (``print(x)``, which the walk meets and passes over) aside.
"""

from __future__ import annotations

import ast

import pytest

from codemods.astlint import walk as walk_module
from codemods.astlint.detector import Detector, Undecided
from codemods.astlint.reach import Everything, names_nothing, reached
from codemods.astlint.walk import Walk
from codemods.registry import REGISTRY
from codemods.screen import noqa
from codemods.settings import Settings
from codemods.syntax.alias_positions import parse
from codemods.syntax.ast_nodes import dotted, tree_index
from tests import migrate_fixtures
from tests.realistic_tree import build_tree

EVERY_RULE = Settings(select=("FSDP",))


def _sources() -> list:
    params = [
        pytest.param(example.before.encode(), id=f"{rule.code}-{index}")
        for rule in REGISTRY
        for index, example in enumerate([rule.example, *rule.cases])
    ]
    fixtures = migrate_fixtures.sources(False)
    params += [pytest.param(p.values[0], id=f"fixture-{p.id}") for p in fixtures]
    params += [pytest.param(s, id=path) for path, s in sorted(build_tree(8).items())]
    return params


def _walked(source: bytes, tree: ast.Module, whole: bool) -> tuple[list, list, dict]:
    detector = Detector(source, tree, EVERY_RULE, noqa.Deferred(source))
    walk = Walk(detector)
    if whole:  # every node reached, every chain of a name in `relevant` looked up
        walk.live = Everything()
        walk_module.names_nothing = lambda *_: False
    try:
        walk.run()
    finally:
        walk_module.names_nothing = names_nothing
    events = [(e[0], id(e[1]), e[2]) for e in walk.events if e[0] != "call" or _acts(walk, e[1])]
    return events, sorted(detector.findings), walk.why_not


def _acts(walk: Walk, call: ast.Call) -> bool:
    root = dotted(call.func)
    return root is not None and root.partition(".")[0] in walk.relevant


@pytest.mark.parametrize("source", _sources())
def test_pruned_walk_acts_as_the_whole_walk(source: bytes) -> None:
    try:
        tree = parse(source)
    except SyntaxError:
        pytest.skip("not Python that ast parses")
    try:
        whole = _walked(source, tree, whole=True)
    except Undecided:
        with pytest.raises(Undecided):
            _walked(source, tree, whole=False)
        return
    assert _walked(source, tree, whole=False) == whole


def test_the_walk_enters_only_what_it_may_act_in() -> None:
    source = (
        "import numpy as np\nfrom torch.distributed import fsdp as np2\nfrom torch import nn\n"
        "x = np.zeros(3) + nn.Linear(2, 2)\ny = np2.FullyShardedDataParallel\n"
    )
    tree = parse(source)
    walk = Walk(Detector(source.encode(), tree, EVERY_RULE, noqa.Deferred(source.encode())))
    assert "np" not in walk.relevant  # numpy: no rule names anything in it
    assert "nn" not in walk.relevant  # nor anything that starts `torch.nn`
    assert {"np2", "torch"} <= walk.relevant
    assert [s in walk.live for s in tree.body] == [True, True, True, False, True]


@pytest.mark.parametrize(
    ("imports", "looked_up"),
    [
        ("import torch", set()),  # looked up anyway: a package root
        ("import torch.nn.functional as F", set()),
        ("import torch.distributed as dist", {"dist"}),
        ("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP", {"FSDP"}),
        ("from torch.distributed.fsdp.wrap import default_auto_wrap_policy as w", {"w"}),
        ("from torch.distributed.fsdp.wrap import enable_wrap as ew", set()),  # kept in 2.x
        ("from functools import partial as p", {"p"}),
        ("from . import fsdp", set()),  # a relative import names no rule's module
        ("import os.path as torch_path", set()),
    ],
)
def test_a_name_is_looked_up_where_its_import_may_lead_to_a_rule(imports, looked_up):
    from codemods.astlint.reach import package_roots

    source = f"{imports}\n".encode()
    walk = Walk(Detector(source, parse(source), EVERY_RULE, noqa.Deferred(source)))
    assert walk.relevant - package_roots() == looked_up


def test_a_node_without_a_known_parent_lets_the_walk_reach_everything() -> None:
    tree = parse("y = torch.x\n")
    found = reached(tree, tree_index(tree).by_type, {}, {"torch"}, ())
    assert isinstance(found, Everything) and tree.body[0] in found


@pytest.mark.parametrize(
    ("source", "nothing"),
    [
        ("import torch\ntorch.zeros(3)\n", True),
        ("import torch\nimport torch.distributed._tensor\ntorch.zeros(3)\n", False),  # find
        ("import torch\ntorch.distributed.fsdp.FullyShardedDataParallel.x\n", False),
        ("from torch.distributed import fsdp as zeros\nzeros.FullyShardedDataParallel\n", False),
        ("from torch import distributed as d\nF = d.fsdp\nF.FullyShardedDataParallel\n", False),
        ("def f(torch):\n    torch.distributed.fsdp.FullyShardedDataParallel\n", False),
        ("import numpy as torch\ntorch.zeros(3)\n", True),
    ],
)
def test_a_chain_is_passed_over_where_no_reading_of_it_names_a_rule(source, nothing):
    from codemods.astlint.scopes import Names

    tree = parse(source)
    chain = tree.body[-1]
    chain = chain.body[0] if type(chain) is ast.FunctionDef else chain
    chain = chain.value.func if type(chain.value) is ast.Call else chain.value
    root = dotted(chain).partition(".")[0]
    assert names_nothing(Names(tree), root, chain) is nothing
