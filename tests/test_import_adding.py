"""``codemods.engine.imports.adding`` adds imports exactly as libcst's ``AddImportsVisitor`` does.

Except one place, checked on its own: a new ``from`` line whose package's lines are
followed by other imports in the top block (a project's own) goes beside its package's.

The oracle is what the import pass did before: the visitor on each later top-level
``from m import`` line that takes a name alone, then on the module's top (its first
statement, the import lines after it and the next statement).
"""

from __future__ import annotations

import dataclasses
import itertools
import random

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from codemods.engine.imports.adding import _from_module, add_imports, is_import_line
from tests.realistic_tree import build_tree

# libcst's visitors, the oracle here, each look over their class's methods when built:
# once a class is enough (tests/matcher_visitors.py).
pytestmark = pytest.mark.usefixtures("quick_matcher_visitors")


def _visitor_adds(tree: cst.Module, wanted: list) -> cst.Module:
    """The visitor's module: later lines first, then the top of the module."""
    context = CodemodContext()
    for module, name, asname in wanted:
        AddImportsVisitor.add_needed_import(context, module, name, asname=asname)
    key = AddImportsVisitor.CONTEXT_KEY
    body = list(tree.body)
    first_other = 1
    while first_other < len(body) and is_import_line(body[first_other]):
        first_other += 1
    top = {_from_module(statement) for statement in body[: first_other + 1]}
    left = []
    for item in context.scratch[key]:
        index = None
        if item.obj_name and item.module_name not in top:
            later = range(first_other + 1, len(body))
            index = next((i for i in later if _from_module(body[i]) == item.module_name), None)
        if index is None:
            left.append(item)
            continue
        alone = dataclasses.replace(context, scratch={key: [item]})
        done = AddImportsVisitor(alone).transform_module(tree.with_changes(body=[body[index]]))
        assert len(done.body) == 1
        body[index] = done.body[0]
    tree = tree.with_changes(body=body)
    if not left:
        return tree
    context = dataclasses.replace(context, scratch={key: left})
    done = AddImportsVisitor(context).transform_module(
        tree.with_changes(body=body[: first_other + 1])
    )
    return tree.with_changes(body=[*done.body, *body[first_other + 1 :]])


#: Module shapes seen at the top of real training code.
MODULES = [
    "",
    "x = 1\n",
    '"""Doc."""\n',
    '"""Doc."""\nimport os\n',
    '"""Doc."""\n\nimport os\nfrom m import b\n\nx = 1\n',
    "__strict__ = True\nimport os\nx = 1\n",
    "from __future__ import annotations\n\nimport os\nfrom m import (\n    b,\n    c,\n)\n",
    "# licence\n\nimport os\n# a comment\nx = 1\n",
    "import os\nimport sys\n\n\ndef f():\n    pass\n",
    "import os\n\n# setup\nsys.path.append('.')\nfrom m import z\nfrom k import q\n",
    "import os; import sys\nfrom m import b\nx = 1\n",
    "from m import *\nx = 1\n",
    "from . import local\nfrom .m import b\nx = 1\n",
    "import m as mm\nfrom m import b as bb, c\nfrom m import d\nx = 1\n",
    "from m import b  # why\nfrom n.o import p\n\nclass A:\n    pass\n",
    "'''Doc.'''\r\nimport os\r\nx = 1\r\n",
    "if True:\n    import m\nx = 1\nfrom m import a\n",
    "try:\n    from m import a\nexcept ImportError:\n    a = None\nfrom n import q\n",
]

#: Imports the fixes ask for, and some that clash with the shapes above.
WANTED = [
    ("m", "a", None),
    ("m", "b", None),
    ("m", "b", "bb"),
    ("m", "e", "ee"),
    ("n", "q", None),
    ("n.o", "r", None),
    ("k", "w", None),
    ("os", None, None),
    ("m", None, None),
    ("m", None, "mm"),
    ("z.y", None, "zy"),
    ("__future__", "annotations", None),
    ("torch.distributed.fsdp.wrap", "ModuleWrapPolicy", None),
]


def _choices() -> list:
    rng = random.Random(0)
    out = [[item] for item in WANTED]
    # A sample of the pairs and larger sets: libcst's visitor, the oracle, takes tens of
    # milliseconds a call, and every module shape is tried with each of these.
    out += [list(pair) for pair in rng.sample(list(itertools.combinations(WANTED, 2)), 12)]
    out += [rng.sample(WANTED, rng.randint(3, len(WANTED))) for _ in range(8)]
    return out


@pytest.mark.slow  # about 2 s a module: out of the quick loop (docs/contributing.md)
@pytest.mark.parametrize("source", MODULES, ids=range(len(MODULES)))
def test_adds_as_the_visitor_does(source: str) -> None:
    tree = cst.parse_module(source)
    compared = 0
    for wanted in _choices():
        try:
            expected = _visitor_adds(tree, wanted).code
        except TypeError:  # the visitor cannot sort `b` beside `b as bb` from one module
            continue
        assert add_imports(tree, wanted, beside_packages=False).code == expected, wanted
        compared += 1
    assert compared > 25


@pytest.mark.slow
def test_adds_to_realistic_modules_as_the_visitor_does() -> None:
    rng = random.Random(1)
    tree_files = build_tree(files=12)
    checked = 0
    for _, source in sorted(tree_files.items()):
        tree = cst.parse_module(source)
        names = [
            (_from_module(statement), alias.evaluated_name, None)
            for statement in tree.body
            if _from_module(statement)
            for alias in statement.body[0].names
        ]
        pool = WANTED + [(m, f"{n}_new", None) for m, n, _ in names] + names
        for _ in range(4):
            wanted = rng.sample(pool, min(len(pool), rng.randint(1, 4)))
            try:
                expected = _visitor_adds(tree, wanted)
            except TypeError:
                continue
            got = add_imports(tree, wanted, beside_packages=False)
            if not _same_code(got, expected):
                assert got.code == expected.code, wanted
            checked += 1
    assert checked > 40


_MODULE_SETTINGS = ("header", "footer", "encoding", "default_indent", "default_newline")


def _same_code(got: cst.Module, expected: cst.Module) -> bool:
    """Whether ``got.code == expected.code``, generating only the statements they do not share.

    Both are the parsed module with its import lines replaced, every other statement the
    same object: a statement both hold is written the same in both when the modules'
    settings are the same, and the code of a module is its header's, its statements' and
    its footer's, less the last statement's newline where it has none. Anything else
    (other settings, a replaced last statement) is compared whole, and so is a pair that
    differs: True only where the whole codes are equal.
    """
    if (
        len(got.body) != len(expected.body)
        or not got.body
        or got.body[-1] is not expected.body[-1]
        or got.has_trailing_newline != expected.has_trailing_newline
        or any(getattr(got, name) != getattr(expected, name) for name in _MODULE_SETTINGS)
    ):
        return got.code == expected.code
    return (
        all(
            mine is theirs or got.code_for_node(mine) == expected.code_for_node(theirs)
            for mine, theirs in zip(got.body, expected.body)
        )
        or got.code == expected.code
    )


@pytest.mark.parametrize("bad", [("__future__", None, None), ("__future__", "x", "y")])
def test_future_needs_a_name_and_no_alias(bad: tuple) -> None:
    with pytest.raises(ValueError, match="__future__"):
        add_imports(cst.parse_module("x = 1\n"), [bad])


def test_nothing_wanted_changes_nothing() -> None:
    tree = cst.parse_module('"""Doc."""\nimport os\nx = 1\n')
    assert add_imports(tree, []).code == tree.code
    assert add_imports(tree, [("os", None, None)]).code == tree.code


_STATE = ("torch.distributed.checkpoint.state_dict", "get_model_state_dict", None)
_FSDP = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
#: (module, wanted, the new import's line number in the result (1-based)).
BESIDE_PACKAGES = {
    "before the project's own": (
        "import torch\n" + _FSDP + "from utils.calc import calc_flop\n\nx = 1\n",
        _STATE,
        2,  # sorted among torch's `from` lines: checkpoint before fsdp
    ),
    "after the package's plain import": (
        "import os\n\nimport torch\nimport config\n\nx = 1\n",
        _STATE,
        4,
    ),
    "unsorted: after the package's last line": (
        "from torch.optim import Adam\nfrom torch import nn\nimport config\n",
        _STATE,
        3,
    ),
    "first in the block, below the docstring's blank line": (
        '"""Doc."""\n\n' + _FSDP + "import config\n",
        _STATE,
        3,
    ),
    "the package's lines end the block: the visitor's place": (
        "import config\nimport torch\n" + _FSDP,
        _STATE,
        4,
    ),
    "no line of the package: the visitor's place": (
        "import os\nimport config\n\nx = 1\n",
        _STATE,
        3,
    ),
}


@pytest.mark.parametrize(
    ("source", "wanted", "line"), BESIDE_PACKAGES.values(), ids=BESIDE_PACKAGES.keys()
)
def test_a_new_from_line_goes_beside_its_package(source: str, wanted: tuple, line: int) -> None:
    code = add_imports(cst.parse_module(source), [wanted]).code
    lines = code.splitlines()
    new = f"from {wanted[0]} import {wanted[1]}"
    assert lines.index(new) + 1 == line, code
    assert [text for text in lines if text != new] == source.splitlines()  # nothing else moved


def test_one_import_wanted_twice_under_one_alias_is_added_once():
    # Two fixes of one file may each need torch's class under the fresh name that keeps it
    # apart from the module's own binding of that name.
    tree = cst.parse_module("import os\n\nx = 1\n")
    wanted = [("m", "P", "P_"), ("m", "Q", None), ("m", "P", "P_")]
    assert add_imports(tree, wanted).code == "import os\nfrom m import P as P_, Q\n\nx = 1\n"


class _Decorated(m.MatcherDecoratableVisitor):
    @m.visit(m.Name("x"))
    def _saw_x(self, node: cst.Name) -> None:
        self.seen.append(node.value)


def test_the_oracles_are_built_as_libcst_builds_them():
    """The visitors built under ``quick_matcher_visitors`` gather what libcst gathers: a
    class with decorated methods is asked each time (its methods are the instance's)."""
    for visitor in (AddImportsVisitor(CodemodContext()), RemoveImportsVisitor(CodemodContext())):
        assert visitor._extra_visit_funcs == visitor._extra_leave_funcs == {}
    firsts = []
    for _ in range(2):
        decorated = _Decorated()
        decorated.seen = []
        cst.parse_module("x = x + y\n").visit(decorated)
        assert decorated.seen == ["x", "x"]
        firsts.append(next(iter(decorated._extra_visit_funcs.values()))[0].__self__)
        assert firsts[-1] is decorated
