"""What a module loads, stores and deletes, as libcst's ``ExpressionContextProvider`` says.

libcst's ``ScopeProvider`` builds on that provider, which visits every node of the
module through libcst's visitor machinery (a dispatch and a rebuilt node per node):
about a third of the scopes' cost. :func:`expression_contexts` gives the same map from
one walk over the nodes' fields (:func:`codemods.engine.metadata.scopes.prime` hands it to a
``MetadataWrapper``). ``tests/test_node_metadata.py`` compares the two maps.

The rules are the provider's: a context passes down to the children of a node, except
that an assignment's, ``for``'s, comprehension's, ``:=``'s, ``as``'s, definition's and
parameter's target or name is stored, ``del``'s target is deleted, the value and slices
of an attribute or subscript are loaded, and a ``class`` or ``def`` passes on only its
name, parameters, bases, keywords, decorators, return annotation and body. Names,
attributes, subscripts, tuples, lists and starred elements get the context they are in.
"""

from __future__ import annotations

from typing import Any

from libcst.metadata import ExpressionContext

from codemods.syntax.cst_tree import child_nodes
from codemods.syntax.lazy_libcst import cst

__all__ = ["expression_contexts"]

LOAD, STORE, DEL = ExpressionContext.LOAD, ExpressionContext.STORE, ExpressionContext.DEL


def expression_contexts(module: cst.Module) -> dict[cst.CSTNode, ExpressionContext]:
    r"""The context of every name, attribute, subscript, tuple, list and starred element.

    Example:
        >>> module = cst.parse_module("a.b, c[d] = e\n")
        >>> contexts = expression_contexts(module)
        >>> code = cst.Module([]).code_for_node
        >>> sorted(f"{code(node)}: {context.name}" for node, context in contexts.items())
        ... # doctest: +NORMALIZE_WHITESPACE
        ['a.b, c[d]: STORE', 'a.b: STORE', 'a: LOAD', 'c: LOAD', 'c[d]: STORE', 'd: LOAD',
         'e: LOAD']
    """
    out: dict[cst.CSTNode, ExpressionContext] = {}
    stack: list[tuple[Any, ExpressionContext]] = [(module, LOAD)]
    push = stack.append
    marked = _MARKED
    special = SPECIAL
    while stack:
        node, context = stack.pop()
        kind = type(node)
        if kind in marked:
            out[node] = context
            if kind is cst.Name:
                continue
        parts = special.get(kind)
        if parts is None:
            for child in child_nodes(node):
                push((child, context))
            continue
        for field, own in parts:
            value = getattr(node, field)
            if value is None:
                continue
            given = context if own is None else own
            if isinstance(value, (list, tuple)):
                for child in value:
                    push((child, given))
            else:
                push((value, given))
    return out


#: The nodes that get the context they are in.
_MARKED = frozenset(
    {cst.Name, cst.Attribute, cst.Subscript, cst.Tuple, cst.List, cst.StarredElement}
)

#: Node class -> the fields walked on and the context each gets (None: the node's own).
SPECIAL: dict[type, tuple[tuple[str, ExpressionContext | None], ...]] = {
    cst.Assign: (("targets", STORE), ("value", None)),
    cst.AnnAssign: (("target", STORE), ("annotation", None), ("value", None)),
    cst.AugAssign: (("target", STORE), ("value", None)),
    cst.NamedExpr: (("target", STORE), ("value", None)),
    cst.AsName: (("name", STORE),),
    cst.CompFor: (("target", STORE), ("iter", None), ("ifs", None), ("inner_for_in", None)),
    cst.For: (("target", STORE), ("iter", None), ("body", None), ("orelse", None)),
    cst.Del: (("target", DEL),),
    cst.Attribute: (("value", LOAD),),
    cst.Subscript: (("value", LOAD), ("slice", LOAD)),
    cst.ClassDef: (
        ("name", STORE),
        ("body", None),
        ("bases", None),
        ("keywords", None),
        ("decorators", None),
    ),
    cst.FunctionDef: (
        ("name", STORE),
        ("params", None),
        ("body", None),
        ("decorators", None),
        ("returns", None),
    ),
    cst.Param: (("name", STORE), ("annotation", None), ("default", None)),
}
