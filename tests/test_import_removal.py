"""The import pass's own removal steps leave what libcst's visitors leave.

:mod:`codemods.engine.imports.removal` stands in for ``RemoveImportsVisitor`` on one import
line and for ``remove_unused_import_by_node``: on every import line below, with each
choice of names to remove, and on every name of the realistic modules, both must give
what libcst gives.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Callable

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import Assignment, MetadataWrapper, ScopeProvider

from codemods.engine.imports.removal import queue_forgotten, without_unused
from tests.realistic_tree import build_tree

# libcst's visitors, the oracle here, each look over their class's methods when built:
# once a class is enough (tests/matcher_visitors.py).
pytestmark = pytest.mark.usefixtures("quick_matcher_visitors")

LINES = [
    "import os\n",
    "import os, sys\n",
    "import os as o, sys, re as r\n",
    "import torch.distributed.fsdp as fsdp, torch\n",
    "import a.b.c, a.b\n",
    "from m import a\n",
    "from m import a, b, c\n",
    "from m import a as x, b, a\n",
    "from m.n import (a, b)\n",
    "from m import (a, b,)\n",
    "from m import (\n    a,\n    b,\n    c,\n)\n",
    "from m import (\n    a,  # first\n    b,  # second\n    c,  # third\n)\n",
    "from m import (  # why\n    a,  # first\n    b,\n)\n",
    "from m import (\n    # above a\n    a,\n    # above b\n    b,\n)\n",
    "from m import (a,  # first\n               b)  # end\n",
    "# leading comment\nfrom m import a, b  # trailing comment\n",
    "from m import a, \\\n    b\n",
]


def _choices(line: cst.SimpleStatementLine) -> list[list[tuple[str, str | None, str | None]]]:
    statement = line.body[0]
    if isinstance(statement, cst.Import):
        items = [(a.evaluated_name, None, a.evaluated_alias) for a in statement.names]
    else:
        module = cst.Module([]).code_for_node(statement.module)
        items = [(module, a.evaluated_name, a.evaluated_alias) for a in statement.names]
    return [list(c) for r in range(1, len(items) + 1) for c in itertools.combinations(items, r)]


def _cases() -> list:
    cases = []
    for text in LINES:
        line = cst.parse_module(text).body[0]
        for index, unused in enumerate(_choices(line)):
            cases.append(pytest.param(text, unused, id=f"{text.splitlines()[-1][:30]}-{index}"))
    return cases


@pytest.mark.parametrize(("text", "unused"), _cases())
def test_a_line_without_unused_names_is_libcsts(text: str, unused: list) -> None:
    module = cst.parse_module(text)
    visitor = RemoveImportsVisitor(CodemodContext(), unused_imports=unused)
    expected = visitor.transform_module(module).code
    got = without_unused(module.body[0], unused)
    assert got is not None
    assert module.with_changes(body=got).code == expected


@pytest.mark.parametrize(
    "text",
    [
        "from __future__ import annotations\n",
        "from . import a\n",
        "from .m import a, b\n",
        "import os; import sys\n",
        "from m import *\n",
    ],
)
def test_what_is_left_to_libcst(text: str) -> None:
    line = cst.parse_module(text).body[0]
    assert without_unused(line, [("__future__", "annotations", None), ("os", None, None)]) is None


@pytest.mark.slow
def test_forgotten_names_queue_libcsts_imports() -> None:
    """Every name and attribute of the realistic modules queues what libcst queues.

    libcst's side builds a matcher-decorated visitor per node (tens of milliseconds), so
    it is asked once per case: what ``remove_unused_import_by_node`` queues for a node
    is a function of the node's case (:func:`_cases_of`), and every node must queue, by
    the pass, what libcst queues for the first node of its case.
    """
    compared = nodes = 0
    for source in list(build_tree(files=12).values())[:8]:
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        children: dict[int, Sequence[cst.CSTNode]] = {}
        expressions = _expressions(wrapper.module, children)
        case = _cases_of(wrapper, children)
        theirs_by_case: dict = {}
        for node in expressions:
            nodes += 1
            key = case(node)
            if key not in theirs_by_case:
                theirs = CodemodContext(wrapper=wrapper)
                RemoveImportsVisitor.remove_unused_import_by_node(theirs, node)
                expected = theirs.scratch.get(RemoveImportsVisitor.CONTEXT_KEY, [])
                theirs_by_case[key] = expected
                compared += bool(expected)
            assert queue_forgotten(wrapper, node) == theirs_by_case[key]
    assert compared > 50
    assert nodes > 30_000  # every one of them


def _cases_of(
    wrapper: MetadataWrapper, children: dict[int, Sequence[cst.CSTNode]]
) -> Callable[[cst.CSTNode], tuple]:
    """What libcst's answer for a node depends on: the node itself, for an import
    statement (its names are queued); for any other node, each name and attribute below
    it, in visit order, that is bound by an import (its full name, and the import
    statements its scope and the enclosing ones assign it by, in the order libcst finds
    them). Names bound by nothing else queue nothing."""
    scopes = wrapper.resolve(ScopeProvider)
    below: dict[int, tuple] = {}

    def bound(node: cst.CSTNode) -> tuple:
        if id(node) in below:
            return below[id(node)]
        found = []
        if isinstance(node, (cst.Name, cst.Attribute)):
            full, scope, imports = get_full_name_for_node(node), scopes.get(node), []
            while full is not None and scope is not None:
                for assignment in scope.assignments[node]:
                    if isinstance(assignment, Assignment) and isinstance(
                        assignment.node, (cst.Import, cst.ImportFrom)
                    ):
                        imports.append(id(assignment.node))
                if scope is scope.parent:
                    break
                scope = scope.parent
            if imports:
                found.append((full, tuple(imports)))
        for child in children[id(node)]:
            found += bound(child)
        below[id(node)] = tuple(found)
        return below[id(node)]

    def case(node: cst.CSTNode) -> tuple:
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return ("import", id(node))
        return bound(node)

    return case


def _expressions(
    module: cst.Module, children: dict[int, Sequence[cst.CSTNode]] | None = None
) -> list[cst.CSTNode]:
    """The module's calls, attributes, names and imports, in visit order (each node's
    children go into ``children``, by the node's id)."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [module]
    children = {} if children is None else children
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Call, cst.Attribute, cst.Name, cst.Import, cst.ImportFrom)):
            found.append(node)
        children[id(node)] = node.children
        stack.extend(reversed(children[id(node)]))
    return found
