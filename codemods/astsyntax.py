"""Small questions about ``ast`` nodes that behaviours' ``ast`` halves ask.

The counterparts of :mod:`codemods.syntax`'s helpers for libcst nodes; free of libcst
and of the registry, so rule modules can import them.
"""

from __future__ import annotations

import ast
import re
from typing import Any


class Undecided(Exception):
    """A construct the ``ast`` detector does not decide: the libcst engine takes the file.

    Attributes:
        rule: The rule code, where the reason is that rule's behaviour having no ``ast``
            half (yet); None where it is a construct of the file.
    """

    def __init__(self, reason: str, rule: str | None = None) -> None:
        super().__init__(reason)
        self.rule = rule


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a name or attribute chain, else None."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


#: Fields that hold no expression or statement (``Load()``, ``Add()``): never visited.
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "type_ignores"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes`` without the context and operator nodes, faster."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
    found: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def arguments(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """A call's arguments in source order.

    Positional ones (``Starred`` for ``*a``) and ``keyword`` nodes (``arg`` None for ``**k``).
    """
    if not call.keywords:
        return list(call.args)
    return sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))


def keyword(arg: ast.expr | ast.keyword) -> str | None:
    """The keyword of an argument (None for positional ones and ``*``/``**``)."""
    return arg.arg if type(arg) is ast.keyword else None


def star(arg: ast.expr | ast.keyword) -> bool:
    """``*args`` or ``**kwargs``."""
    return type(arg) is ast.Starred or (type(arg) is ast.keyword and arg.arg is None)


def value(arg: ast.expr | ast.keyword) -> ast.expr:
    """What an argument passes."""
    return arg.value if type(arg) in (ast.keyword, ast.Starred) else arg  # type: ignore[union-attr,return-value]


def is_bool(node: ast.AST) -> bool:
    """The literal ``True`` or ``False``."""
    return type(node) is ast.Constant and type(node.value) is bool  # type: ignore[attr-defined]


_ONE_STRING = re.compile(r"""(?is)[a-z]{0,2}('''|\"\"\"|'|")(.*)\1""")


def literal(detector: Any, node: ast.AST) -> Any:
    """:func:`codemods.syntax.literal` on ``ast``: an int, one string literal, a constant."""
    if type(node) is not ast.Constant:
        return None
    found = node.value  # type: ignore[attr-defined]
    if type(found) is str:
        match = _ONE_STRING.fullmatch(detector.segment(node))
        # "a" "b" is one Constant to ast and no SimpleString to libcst; undecided if unsure
        if match is None or match.group(1) in match.group(2).replace("\\" + match.group(1), ""):
            raise Undecided("a string literal spelled in parts")
        return found
    if type(found) is int or type(found) is bool or found is None:
        return found
    return None


def spelled(node: ast.AST) -> str | None:
    """:func:`codemods.syntax.dotted` on ``ast``: ``True``, ``None`` are names to libcst."""
    if type(node) is ast.Constant and node.value in (True, False, None):  # type: ignore[attr-defined]
        if node.value is True or node.value is False or node.value is None:  # type: ignore[attr-defined]
            return str(node.value)  # type: ignore[attr-defined]
    return dotted(node)


def plain_positional(arg: ast.expr | ast.keyword) -> bool:
    """A positional argument that is not ``*args``."""
    return type(arg) is not ast.keyword and type(arg) is not ast.Starred


def flag(detector: Any, node: ast.AST) -> bool | None:
    """The literal ``True`` or ``False``, else None."""
    found = literal(detector, node)
    return found if isinstance(found, bool) else None
