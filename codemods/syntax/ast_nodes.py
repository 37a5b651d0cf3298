"""Small questions about ``ast`` nodes that behaviours' ``ast`` halves ask.

The counterparts of :mod:`codemods.syntax.cst_nodes`'s helpers for libcst nodes; free of libcst
and of the registry, so rule modules can import them.
"""

from __future__ import annotations

import ast
import functools
import re

# Re-exported: the index moved to its own module, and its users import it from here.
from codemods.syntax.node_index import TreeIndex as TreeIndex
from codemods.syntax.node_index import children as children
from codemods.syntax.node_index import tree_index as tree_index

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # the checkers' protocols are plain classes at run time


class SourceView(Protocol):
    """What the helpers below read of a module: its lines, its text, the tree's parents.

    The ``ast`` detector (:class:`codemods.rules.api.Detector`) is one.
    """

    def lines(self) -> list[bytes]:
        """The module's lines, UTF-8 encoded (as ``ast`` counts columns)."""

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node``."""

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of a node."""


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


def alias_assignment(statement: ast.AST) -> tuple[str, ast.expr] | None:
    """``(name, value)`` for ``name = a.b.c`` (one plain target, a dotted value), else None.

    Example:
        >>> alias_assignment(ast.parse("FSDP = fsdp.FullyShardedDataParallel").body[0])[0]
        'FSDP'
        >>> alias_assignment(ast.parse("a = b = c").body[0]) is None
        True
    """
    if type(statement) is not ast.Assign or len(statement.targets) != 1:  # type: ignore[attr-defined]
        return None
    target, value = statement.targets[0], statement.value  # type: ignore[attr-defined]
    if type(target) is not ast.Name or dotted(value) is None:
        return None
    return target.id, value  # type: ignore[attr-defined]


#: What a class must not define for a call of it to be one of its base's constructor.
CONSTRUCTORS = frozenset(("__init__", "__new__"))


def subclass_alias(statement: ast.AST) -> tuple[str, ast.expr] | None:
    r"""``(name, base)`` for a class that keeps its one base's constructor, else None.

    One dotted base, no keywords (``metaclass=``) or decorators, and no ``__init__`` or
    ``__new__`` of its own: a call of the class passes its arguments to the base's.
    The ``libcst`` half is :func:`codemods.syntax.cst_nodes.subclass_aliases`.

    Example:
        >>> subclass_alias(ast.parse("class S(s.FSDPStrategy):\n    x = 1").body[0])[0]
        'S'
        >>> subclass_alias(ast.parse("class S(B):\n    def __init__(self): ...").body[0])
    """
    if type(statement) is not ast.ClassDef:
        return None
    node: ast.ClassDef = statement  # type: ignore[assignment]
    if node.decorator_list or node.keywords or len(node.bases) != 1:
        return None
    if dotted(node.bases[0]) is None:
        return None
    for inner in node.body:
        kind = type(inner)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef) and inner.name in CONSTRUCTORS:  # type: ignore[attr-defined]
            return None
        if kind in (ast.Assign, ast.AnnAssign):
            targets = inner.targets if kind is ast.Assign else [inner.target]  # type: ignore[attr-defined]
            if any(dotted(t) in CONSTRUCTORS for t in targets):
                return None
    return node.name, node.bases[0]


#: Fields that hold no expression or statement (``Load()``, ``Add()``): never visited.
def import_names(node: ast.Import | ast.ImportFrom, full: str) -> set[str]:
    """What ``full`` (a dotted name starting with a name ``node`` binds) refers to.

    libcst's ``ImportAssignment.get_qualified_names_for``, on ``ast`` nodes.

    Example:
        >>> sorted(import_names(ast.parse("from a.b import c as d").body[0], "d.e"))
        ['a.b.c.e']
    """
    module = ""
    if isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
    results = set()
    for alias in node.names:
        if alias.name == "*":
            continue
        parts = alias.name.split(".")
        for count in range(len(parts), 0, -1):
            real = as_name = ".".join(parts[:count])
            if module.endswith("."):
                real = module + real
            elif module:
                real = f"{module}.{real}"
            if alias.asname:
                as_name = alias.asname
            if full.startswith(as_name):
                rest = full[len(as_name) :]
                if rest and not rest.startswith("."):
                    continue
                rest = rest.lstrip(".")
                results.add(f"{real}.{rest}" if rest else real)
                break
    return results


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


@functools.cache
def _one_string() -> re.Pattern[str]:
    return re.compile(r"""(?is)[a-z]{0,2}('''|\"\"\"|'|")(.*)\1""")


def literal(detector: SourceView, node: ast.AST) -> Any:
    """:func:`codemods.syntax.cst_nodes.literal` on ``ast``: an int, one string, a constant."""
    if type(node) is not ast.Constant:
        return None
    found = node.value  # type: ignore[attr-defined]
    if type(found) is str:
        match = _one_string().fullmatch(detector.segment(node))
        # "a" "b" is one Constant to ast and no SimpleString to libcst; undecided if unsure
        if match is None or match.group(1) in match.group(2).replace("\\" + match.group(1), ""):
            raise Undecided("a string literal spelled in parts")
        return found
    if type(found) is int or type(found) is bool or found is None:
        return found
    return None


def spelled(node: ast.AST) -> str | None:
    """:func:`codemods.syntax.cst_nodes.dotted` on ``ast`` (``True``, ``None`` are names there)."""
    if type(node) is ast.Constant and node.value in (True, False, None):  # type: ignore[attr-defined]
        if node.value is True or node.value is False or node.value is None:  # type: ignore[attr-defined]
            return str(node.value)  # type: ignore[attr-defined]
    return dotted(node)


def plain_positional(arg: ast.expr | ast.keyword) -> bool:
    """A positional argument that is not ``*args``."""
    return type(arg) is not ast.keyword and type(arg) is not ast.Starred


def flag(detector: SourceView, node: ast.AST) -> bool | None:
    """The literal ``True`` or ``False``, else None."""
    found = literal(detector, node)
    return found if isinstance(found, bool) else None


def _between(detector: SourceView, start: tuple[int, int], end: tuple[int, int]) -> bytes:
    """The code between two (1-based line, byte column) positions that hold no string.

    Comments are dropped: between a call's arguments only punctuation and comments lie.
    """
    lines = detector.lines()
    if start[0] == end[0]:
        parts = [lines[start[0] - 1][start[1] : end[1]]]
    else:
        parts = [lines[start[0] - 1][start[1] :], *lines[start[0] : end[0] - 1]]
        parts.append(lines[end[0] - 1][: end[1]])
    return b"\n".join(part.partition(b"#")[0] for part in parts)


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def _before(detector: SourceView, node: ast.AST) -> bytes:
    """The significant character before ``node`` (empty at the module's start).

    Undecided where a line passed over may end in a comment (a ``#`` anywhere on it).
    """
    lines = detector.lines()
    line = node.lineno - 1  # type: ignore[attr-defined]
    text = lines[line][: node.col_offset]  # type: ignore[attr-defined]
    while True:
        stripped = text.rstrip()
        if stripped.endswith(b"\\"):  # a line continuation: the line before goes on
            stripped = stripped[:-1].rstrip()
        if stripped:
            return stripped[-1:]
        if line == 0:
            return b""
        line -= 1
        text = lines[line]
        if b"#" in text:
            raise Undecided("a comment before a reported node")


def unparenthesized(detector: SourceView, node: ast.AST) -> ast.AST:
    """``node``, where libcst's position of it is ``ast``'s: it is not in parentheses.

    ``ast`` starts a parenthesized expression inside its parentheses, libcst at them:
    Undecided where ``node`` is, or may be, parenthesized. A call's callee and its
    positional arguments are judged exactly (only punctuation and comments lie
    between them), other nodes by the character before them.
    """
    parent = detector.parent(node)
    if type(parent) is ast.Call and parent.func is node:  # type: ignore[attr-defined]
        following = arguments(parent)[:1]  # type: ignore[arg-type]
        stop = _start(following[0]) if following else _end(parent)
        opened = _between(detector, _end(node), stop).lstrip(b" \t\n\\\f")
        if opened.startswith(b"("):
            return node
    elif type(parent) is ast.Call and any(node is a for a in parent.args):  # type: ignore[attr-defined]
        found = arguments(parent)  # type: ignore[arg-type]
        index = next(i for i, a in enumerate(found) if a is node)
        previous = found[index - 1] if index else parent.func  # type: ignore[attr-defined]
        if _between(detector, _end(previous), _start(node)).count(b"(") == (0 if index else 1):
            return node
    elif _before(detector, node) != b"(":
        return node
    raise Undecided("a reported node may be in parentheses")
