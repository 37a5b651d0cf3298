"""libcst's visitor dispatch, looked up once per class instead of once per node.

libcst's :class:`~libcst.CSTTransformer` finds ``visit_<Class>``, ``leave_<Class>`` and
the per-attribute ``visit_<Class>_<attribute>`` / ``leave_<Class>_<attribute>`` hooks by
formatting their names and calling ``getattr`` at every node and child attribute, then
calls what it finds: for most nodes, the no-op stubs of its typed base classes.
:class:`CachedDispatch` (a transformer) and :class:`CachedVisit` (a visitor) look each hook
up once per (class, node class) and skip the stubs, so the hooks that run are exactly
those libcst would run.
"""

from __future__ import annotations

from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["CachedDispatch", "CachedVisit", "HookCache", "hook"]

_UNKNOWN = object()  # not looked up yet


def hook(owner: type, prefix: str, kind: type, attribute: str = "") -> Callable[..., Any] | None:
    """``owner``'s hook for nodes of class ``kind`` (a plain function of the instance), or None.

    Example:
        >>> class Visitor(CachedDispatch):
        ...     def visit_Name(self, node):
        ...         return False
        >>> hook(Visitor, "visit", cst.Name) is Visitor.visit_Name
        True
        >>> hook(Visitor, "visit", cst.Call), hook(Visitor, "visit", cst.Name, "value")
        (None, None)
    """
    cache = owner.__dict__.get("_hook_cache")
    if cache is None:  # a class outside HookCache: found, not kept
        cache = {}
    key = (prefix, kind, attribute)
    found = cache.get(key, _UNKNOWN)
    if found is _UNKNOWN:
        name = f"{prefix}_{kind.__name__}_{attribute}" if attribute else f"{prefix}_{kind.__name__}"
        found = getattr(owner, name, None)
        # libcst's typed base classes define every hook as a no-op (marked so for its
        # batched visitor): skipping one is what calling it does.
        found = cache[key] = None if getattr(found, "_is_no_op", False) else found
    return found


def _attribute_hook(prefix: str) -> Callable[..., None]:
    """The ``on_<prefix>_attribute`` method: call ``<prefix>_<Class>_<attribute>``, if defined."""

    def on_attribute(self: Any, node: cst.CSTNode, attribute: str) -> None:
        found = self._hook_cache.get((prefix, type(node), attribute), _UNKNOWN)
        if found is _UNKNOWN:
            found = hook(type(self), prefix, type(node), attribute)
        if found is not None:
            found(self, node)

    on_attribute.__doc__ = f"Call ``{prefix}_<Class>_<attribute>``, if defined."
    return on_attribute


class HookCache:
    """The hooks of a libcst visitor or transformer, found once per class (a mixin).

    It goes before the libcst class among the bases; the hooks must be defined on the
    class (as methods), not set on an instance. Each class keeps its own table (a class
    made in a function goes with it).
    """

    _hook_cache: dict[tuple[str, type, str], Callable[..., Any] | None] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._hook_cache = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Call ``visit_<Class>``, if defined; whether to enter the node's children."""
        visit = self._hook_cache.get(("visit", type(node), ""), _UNKNOWN)
        if visit is _UNKNOWN:
            visit = hook(type(self), "visit", type(node))
        return visit is None or visit(self, node) is not False

    # The per-attribute hooks take the node alone, in a visitor and a transformer alike.
    on_visit_attribute = _attribute_hook("visit")
    on_leave_attribute = _attribute_hook("leave")


class CachedDispatch(HookCache, cst.CSTTransformer):
    r"""A transformer whose hooks are found as libcst finds them, once per node class.

    Example:
        >>> class Upper(CachedDispatch):
        ...     def leave_Name(self, original_node, updated_node):
        ...         return updated_node.with_changes(value=updated_node.value.upper())
        >>> cst.parse_module("f(x)\n").visit(Upper()).code
        'F(X)\n'
    """

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        """Call ``leave_<Class>``, if defined; what takes the node's place."""
        leave = self._hook_cache.get(("leave", type(original_node), ""), _UNKNOWN)
        if leave is _UNKNOWN:
            leave = hook(type(self), "leave", type(original_node))
        return updated_node if leave is None else leave(self, original_node, updated_node)


class CachedVisit(HookCache, cst.CSTVisitor):
    r"""A visitor whose hooks are found as libcst finds them, once per node class.

    Example:
        >>> class Names(CachedVisit):
        ...     def __init__(self):
        ...         self.seen = []
        ...     def leave_Name(self, original_node):
        ...         self.seen.append(original_node.value)
        >>> names = Names()
        >>> _ = cst.parse_module("f(x)\n").visit(names)
        >>> names.seen
        ['f', 'x']
    """

    def on_leave(self, original_node: cst.CSTNode) -> None:
        """Call ``leave_<Class>``, if defined."""
        leave = self._hook_cache.get(("leave", type(original_node), ""), _UNKNOWN)
        if leave is _UNKNOWN:
            leave = hook(type(self), "leave", type(original_node))
        if leave is not None:
            leave(self, original_node)
