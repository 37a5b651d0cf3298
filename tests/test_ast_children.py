"""The ``ast`` walks' children of a node: every node child, in ``ast``'s order.

:func:`codemods.syntax.ast_nodes.children` reads only the fields each node type
declares as holding nodes; the index every ``ast`` pass walks is built on it, so a child
it missed would hide a use of an old name from the pre-filter and the detector alike.
"""

from __future__ import annotations

import ast
import sys

import pytest

from codemods.syntax.ast_nodes import TreeIndex, children
from tests.realistic_tree import build_tree

#: Children ``children`` leaves out on purpose: contexts and operators.
_LEFT_OUT = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.type_ignore)

SHAPES = """
import a.b as c
from .x import (y as z, w)
global_name = {**base, "k": v, None: 1}
def f(a, /, b=1, *args, c, d=2, **kw) -> "r":
    global global_name
    lambda q, *, r=3: q + r
    return [i for i in range(3) if i if not i], {i: j async for i, j in g()}
@decorate(with_args=1)
class K(Base, metaclass=Meta):
    x: int = 1
    async def m(self):
        async with a() as (b, c), d():
            await e
        async for i in j:
            yield from k
try:
    pass
except (ValueError, TypeError) as error:
    raise Other() from error
else:
    del a[1:2:3], b.c
finally:
    assert x, f"{x!r:>{width}} {y=}"
x = a if b else -c @ d ** ~e
print(*args, sep="", **kw)
while (n := n - 1) > 0 and not done: break
"""
if sys.version_info >= (3, 10):  # `match` parses from Python 3.10
    SHAPES += (
        "match command:\n"
        '    case Point(x=0, y=[1, *rest]) | {"k": v, **others} if v > 0:\n'
        "        pass\n"
        "    case (str() as s) | None:\n"
        "        nonlocal_like = (yield)\n"
    )
if sys.version_info >= (3, 11):  # `except*` (TryStar) parses from Python 3.11
    SHAPES += (
        "try:\n    pass\nexcept* (ValueError, TypeError) as group:\n    raise Other() from group\n"
    )


def _expected(node: ast.AST) -> list[ast.AST]:
    return [c for c in ast.iter_child_nodes(node) if not isinstance(c, _LEFT_OUT)]


SOURCES = [("shapes", SHAPES.encode()), *sorted(build_tree(8).items())[:12]]


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_children_are_ast_child_nodes_without_contexts_and_operators(name, source):
    tree = ast.parse(source, type_comments=True)
    for node in ast.walk(tree):
        assert children(node) == _expected(node), ast.dump(node)[:200]


def test_the_index_holds_every_node_once():
    tree = ast.parse(SHAPES)
    index = TreeIndex(tree)
    walked = [n for n in ast.walk(tree) if not isinstance(n, _LEFT_OUT)]
    assert sorted(map(id, walked)) == sorted(
        id(n) for nodes in index.by_type.values() for n in nodes
    )
    assert all(list(index.below[n]) == _expected(n) for n in walked)
