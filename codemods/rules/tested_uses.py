r"""Uses of an old name that only test for it: a comparison's operand, an ``isinstance`` class.

A rule that reports every use of a name words its message for the use that chooses the
old thing (``FSDP(..., sharding_strategy=ShardingStrategy.NO_SHARD)``, ``OSS(params,
...)``). A use that only tests whether something else chose it (``if strategy ==
ShardingStrategy.NO_SHARD:``, ``isinstance(optimizer, OSS)``) is still a use of the name,
but the message's advice does not fit it: such a finding adds the detail its behaviour
gives for that test (:meth:`codemods.rules.api.Behaviour.tested`).

The tests: ``COMPARISON``, the name (or an element of a tuple, list or set display that
is) is an operand of ``==``, ``!=``, ``is``, ``is not``, ``in``, ``not in`` or an
ordering, or a ``case`` value; ``ISINSTANCE``, the name (or an element of a tuple
display that is) is the second argument of ``isinstance`` or ``issubclass``.

Example:
    >>> import ast
    >>> from codemods.syntax.ast_nodes import tree_index
    >>> tree = ast.parse("if s != S.NO_SHARD and isinstance(o, (A, OSS)): pass")
    >>> parents = {c: n for n, below in tree_index(tree).below.items() for c in below}
    >>> names = {ast.unparse(n): n for n in ast.walk(tree) if type(n) in (ast.Name, ast.Attribute)}
    >>> [ast_test(names[n], parents.get) for n in ("S.NO_SHARD", "OSS", "o", "s")]
    ['comparison', 'isinstance', None, 'comparison']
"""

from __future__ import annotations

import ast

from codemods.rules.index import behaviour_for
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Callable

    from codemods.registry import Rule

__all__ = ["COMPARISON", "ISINSTANCE", "ast_detail", "ast_test", "cst_detail", "cst_test"]

COMPARISON = "comparison"
ISINSTANCE = "isinstance"
#: The builtins whose second argument is a class, or a tuple of classes, to test for.
_CHECKS = frozenset({"isinstance", "issubclass"})
_AST_DISPLAYS = (ast.Tuple, ast.List, ast.Set)


def ast_detail(
    rule: Rule, node: ast.AST, parent: Callable[[ast.AST], ast.AST | None]
) -> str | None:
    """The detail of a use ``node`` of ``rule``'s name: its behaviour's for the test, if any."""
    tested = behaviour_for(rule).tested
    return tested.get(ast_test(node, parent) or "") if tested else None


def cst_detail(
    rule: Rule, node: cst.CSTNode, parent: Callable[[cst.CSTNode], cst.CSTNode | None]
) -> str | None:
    """:func:`ast_detail` on the libcst tree."""
    tested = behaviour_for(rule).tested
    return tested.get(cst_test(node, parent) or "") if tested else None


def ast_test(node: ast.AST, parent: Callable[[ast.AST], ast.AST | None]) -> str | None:
    """The test ``node`` (a name or an attribute) is an operand of, if any.

    ``parent``: the tree's parent of a node (a call's arguments have the call).
    """
    up = parent(node)
    if type(up) in _AST_DISPLAYS:
        node, up = up, parent(up)
    if type(up) is ast.Compare or type(up) is ast.MatchValue:
        return COMPARISON
    if type(up) is ast.Call and type(up.func) is ast.Name and up.func.id in _CHECKS:  # type: ignore[attr-defined]
        args = up.args  # type: ignore[attr-defined]
        if len(args) == 2 and args[1] is node and type(args[0]) is not ast.Starred:
            return ISINSTANCE if type(node) is not ast.List and type(node) is not ast.Set else None
    return None


def cst_test(node: cst.CSTNode, parent: Callable[[cst.CSTNode], cst.CSTNode | None]) -> str | None:
    """:func:`ast_test` on the libcst tree."""
    up = parent(node)
    if isinstance(up, cst.Element):
        display = parent(up)
        if not isinstance(display, (cst.Tuple, cst.List, cst.Set)):
            return None
        node, up = display, parent(display)
    if isinstance(up, (cst.Comparison, cst.ComparisonTarget, cst.MatchValue)):
        return COMPARISON
    if not isinstance(up, cst.Arg) or up.keyword is not None or up.star:
        return None
    call = parent(up)
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name):
        return None
    args = call.args
    if call.func.value in _CHECKS and len(args) == 2 and args[1] is up and not args[0].star:
        return ISINSTANCE if not isinstance(node, (cst.List, cst.Set)) else None
    return None
