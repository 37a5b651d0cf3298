"""Import names' positions on Python 3.9 (codemods/syntax/alias_positions.py).

Python 3.10 and later give each ``ast.alias`` its position; on 3.9 the project adds
them from the statement's tokens. Here the addition runs on every Python: on 3.10 and
later it must give Python's own positions, on any Python the position must span the
name as written (its first part to its ``as`` name), on every module of this project,
the realistic tree and the shapes below.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from codemods.syntax.alias_positions import parse, place_import_names
from tests.realistic_tree import build_tree

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {
    "plain": "import os\nimport a.b.c as d, e\n",
    "parenthesized": "from a.b import (\n    c as d,  # a comment\n    e,\n)\n",
    "relative": "from ..pkg import name as other\nfrom . import x\n",
    "star": "from m import *\n",
    "backslash": "import a \\\n    .b as c\n",
    "semicolons": "x = 'é'; import a.b as c; from d import (e)\n",
    "indented": "def f():\n\tif x:\n\t\tfrom p import (q,\n\t\t\tr as s)\n",
    "unicode": "from paquet import café as été\n",
}


def _sources() -> list[tuple[str, bytes]]:
    own = sorted((ROOT / "codemods").rglob("*.py"))[::4]  # every part of the package
    found = [(str(p.relative_to(ROOT)), p.read_bytes()) for p in own]
    found += sorted(build_tree(8).items())[:8]
    return found + [(name, text.encode()) for name, text in SHAPES.items()]


def _positions(tree: ast.AST) -> list[tuple[int, int, int, int]]:
    return [
        (a.lineno, a.col_offset, a.end_lineno, a.end_col_offset)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for a in node.names
    ]


SOURCES = _sources()


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[n for n, _ in SOURCES])
def test_each_import_name_spans_its_text(name, source):
    tree = ast.parse(source)
    place_import_names(tree, source)
    lines = source.split(b"\n")
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for alias in node.names:
            first, last = lines[alias.lineno - 1], lines[alias.end_lineno - 1]
            start, end = first[alias.col_offset :], last[: alias.end_col_offset]
            assert start.decode().startswith(alias.name.split(".")[0])
            assert end.decode().endswith(alias.asname or alias.name.split(".")[-1])


@pytest.mark.skipif(sys.version_info < (3, 10), reason="Python's own positions: 3.10+")
@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[n for n, _ in SOURCES])
def test_the_positions_are_pythons_own(name, source):
    ours = ast.parse(source)
    place_import_names(ours, source)
    assert _positions(ours) == _positions(ast.parse(source))


def test_parse_places_them_where_python_does_not():
    tree = parse("from a import (b,\n    c as d)\n")
    assert [(a.lineno, a.col_offset) for a in tree.body[0].names] == [(1, 15), (2, 4)]
