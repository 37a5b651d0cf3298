"""One walk's record of a module's ``ast`` tree: its nodes by type, each node's children.

:class:`TreeIndex` is built once a file (:func:`tree_index`) and read by every pass
after the first; :func:`children` gives one node's children the same way.
"""

from __future__ import annotations

import ast
import functools
import re

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["TreeIndex", "children", "tree_index"]

_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "type_ignores"})
_FIELDS: dict[type, tuple[str, ...]] = {}
#: ``_fields`` types written in ``ast``'s own declarations that are not nodes.
_VALUES = frozenset({"identifier", "int", "string", "constant", "object"})
#: Each node type's fields that hold nodes, and which of them hold lists: read once
#: from the type's declaration (``FunctionDef(identifier name, arguments args, stmt*
#: body, ...)``, its docstring), so that a name or a number is never looked at. None:
#: a type without a declaration in that form (the generic walk answers for it).
_SHAPES: dict[type, tuple[tuple[str, bool], ...] | None] = {}
_UNREAD: tuple[tuple[str, bool], ...] = (("", False),)
_DECLARED = re.compile(r"(\w+)\((.*)\)")


def _shape(kind: type) -> tuple[tuple[str, bool], ...] | None:
    """``(field, holds a list)`` for each field of ``kind`` that holds nodes.

    Example:
        >>> _shape(ast.Attribute), _shape(ast.Name)
        ((('value', False),), ())
    """
    match = _DECLARED.fullmatch((kind.__doc__ or "").strip())
    if match is None or match.group(1) != kind.__name__:
        return None
    declared = [field.split() for field in match.group(2).split(",") if field.strip()]
    if any(len(d) != 2 for d in declared) or tuple(n for _, n in declared) != kind._fields:
        return None
    shape = []
    for written, name in declared:
        base = written.rstrip("*?")
        if name in _NOT_CHILDREN or base in _VALUES:
            continue
        node_type = getattr(ast, base, None)
        if not (isinstance(node_type, type) and issubclass(node_type, ast.AST)):
            return None  # a type this reading does not know: the generic walk
        shape.append((name, written.endswith("*")))
    return tuple(shape)


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes`` without the context and operator nodes, faster.

    Only the fields that can hold nodes are read (:func:`_shape`); a list of them holds
    nodes, and ``None`` where a dictionary unpacks (``{**a}``'s key) or a keyword-only
    parameter has no default.
    """
    kind = type(node)
    shape = _SHAPES.get(kind, _UNREAD)
    if shape is _UNREAD:
        shape = _SHAPES[kind] = _shape(kind)
    if shape is None:
        return _any_children(node)
    found: list[ast.AST] = []
    for name, many in shape:
        value = getattr(node, name, None)
        if value is None:
            continue
        if many and type(value) is list and None not in value:
            found.extend(value)
        elif type(value) is list:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def _any_children(node: ast.AST) -> list[ast.AST]:
    """:func:`children` of a node of any type, looking at every field."""
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


class TreeIndex:
    """One walk's record of a module's tree: its nodes by type, each node's children.

    Every pass after the first (the pre-filter's scan, the scopes, the detector's walk,
    the rules' "all the calls" questions) reads this instead of walking the tree again:
    looking a node's children up costs a small part of finding them.

    Attributes:
        by_type: Every node (the root too) by exact type, in source order per type.
        below: Each node -> its children (:func:`children`), in source order
            (a list, or a tuple where there is at most one).

    Example:
        >>> index = TreeIndex(ast.parse("f(a.b); g(c)"))
        >>> [ast.unparse(call) for call in index.by_type[ast.Call]]
        ['f(a.b)', 'g(c)']
    """

    __slots__ = ("below", "by_type")

    def __init__(self, tree: ast.AST) -> None:
        # :func:`children` written out here: a call per node, and a push per leaf, were
        # about a tenth of the index (which a screened file pays in full).
        by_type: dict[type, list[ast.AST]] = {}
        below: dict[ast.AST, Sequence[ast.AST]] = {}
        stack = [tree]
        pop, push, append = stack.pop, stack.extend, stack.append
        # A type -> (its list's append, its shape, its one field where it has one node
        # field only): one lookup a node.
        kinds: dict[type, tuple] = {}
        while stack:
            node = pop()
            kind = type(node)
            known = kinds.get(kind)
            if known is None:
                shape = _SHAPES.get(kind, _UNREAD)
                if shape is _UNREAD:
                    shape = _SHAPES[kind] = _shape(kind)
                one = shape[0][0] if shape and len(shape) == 1 and not shape[0][1] else None
                known = kinds[kind] = (by_type.setdefault(kind, []).append, shape, one)
            known[0](node)
            if known[2] is not None:  # `a.b`, `f(x=1)`'s keyword: a tuple (no list) of one
                value = getattr(node, known[2])
                if value is None:
                    below[node] = ()
                else:
                    below[node] = (value,)
                    append(value)
                continue
            shape = known[1]
            if shape is None:
                found = _any_children(node)
            elif not shape:  # a name, a constant: nothing below (one shared empty tuple)
                below[node] = ()  # type: ignore[assignment]
                continue
            else:
                # A node, None, or (many) nodes with None where ``**`` or a default is not
                found = []
                for name, many in shape:
                    value = getattr(node, name, None)
                    if value is None:
                        continue
                    if not many:
                        found.append(value)
                    elif None not in value:
                        found.extend(value)
                    else:
                        found.extend(item for item in value if item is not None)
            below[node] = found
            push(reversed(found))
        self.by_type = by_type
        self.below = below


@functools.lru_cache(maxsize=2)
def tree_index(tree: ast.AST) -> TreeIndex:
    """The :class:`TreeIndex` of ``tree``, kept for the last two trees (the file in hand)."""
    return TreeIndex(tree)
