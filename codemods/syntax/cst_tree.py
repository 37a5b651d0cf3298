"""The parent of every node of a libcst tree, from one walk over the nodes' fields.

libcst's ``ParentNodeProvider`` gives the same map through its visitor machinery (an
``on_visit``/``on_leave`` dispatch and a child-replacing pass per node), a noticeable
part of a fixing run. Reading each node's dataclass fields directly gives the same map
for a fraction of that (``tests/test_node_metadata.py`` compares the two on every
fixture and rule example).
"""

from __future__ import annotations

import dataclasses

from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

__all__ = ["child_nodes", "parent_map"]

#: Node class -> the names of its fields (libcst nodes are dataclasses).
_FIELDS: dict[type, tuple[str, ...]] = {}


def parent_map(
    tree: cst.CSTNode, by_type: dict[type, list[cst.CSTNode]] | None = None
) -> dict[cst.CSTNode, cst.CSTNode]:
    r"""Each node under ``tree`` mapped to its parent (``tree`` itself is not a key).

    ``by_type``, if given, gets every node under ``tree`` listed under its class, from
    the same walk (in no set order).

    Example:
        >>> module = cst.parse_module("f(x)\n")
        >>> call = module.body[0].body[0].value
        >>> by_type = {}
        >>> parents = parent_map(module, by_type)
        >>> type(parents[call]).__name__, parents[call.func] is call
        ('Expr', True)
        >>> sorted(name.value for name in by_type[cst.Name])
        ['f', 'x']
    """
    out: dict[Any, Any] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in child_nodes(node):
            out[child] = node
            stack.append(child)
    if by_type is not None:
        for node in out:
            by_type.setdefault(type(node), []).append(node)
    return out


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children, as libcst's visit reaches them (in no set order).

    Example:
        >>> call = cst.parse_expression("f(x)")
        >>> sorted(type(child).__name__ for child in child_nodes(call))
        ['Arg', 'Name', 'SimpleWhitespace', 'SimpleWhitespace']
    """
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    values = []
    for name in names:
        value = getattr(node, name)
        if type(value) in (list, tuple):
            values += value
        else:
            values.append(value)
    is_node = _IS_NODE
    found = []
    for child in values:
        kind = type(child)
        known = is_node.get(kind)
        if known is None:
            known = is_node[kind] = issubclass(kind, cst.CSTNode)
        if known:
            found.append(child)
    return found


#: A class -> whether it is a libcst node (``isinstance`` on libcst's abstract base
#: class goes through ``__instancecheck__``: most of a walk's time).
_IS_NODE: dict[type, bool] = {}
