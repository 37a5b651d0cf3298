"""The import pass's own removal steps leave what libcst's visitors leave.

:mod:`codemods.engine.imports.removal` stands in for ``RemoveImportsVisitor`` on one import
line and for ``remove_unused_import_by_node``: on every import line below, with each
choice of names to remove, and on every name of the realistic modules, both must give
what libcst gives.
"""

from __future__ import annotations

import itertools

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from codemods.engine.imports.removal import queue_forgotten, without_unused
from tests.realistic_tree import build_tree

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


def test_forgotten_names_queue_libcsts_imports() -> None:
    """Every name and attribute of the realistic modules queues what libcst queues."""
    compared = 0
    for source in list(build_tree(files=12).values())[:8]:
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        for node in [n for n in _expressions(wrapper.module)][::7]:
            theirs = CodemodContext(wrapper=wrapper)
            RemoveImportsVisitor.remove_unused_import_by_node(theirs, node)
            expected = theirs.scratch.get(RemoveImportsVisitor.CONTEXT_KEY, [])
            assert queue_forgotten(wrapper, node) == expected
            compared += bool(expected)
    assert compared > 50


def _expressions(module: cst.Module) -> list[cst.CSTNode]:
    """The module's calls, attributes, names and imports, in visit order."""
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Call, cst.Attribute, cst.Name, cst.Import, cst.ImportFrom)):
                found.append(node)
            return True

    module.visit(Collect())
    return found
