"""libcst's scopes of a module, resolved for less than libcst's resolver spends.

The engine asks libcst's ``ScopeProvider`` what names resolve to. Resolving it the
usual way costs three walks of every node through libcst's visitor machinery: the
``ExpressionContextProvider`` it depends on, the provider's own scope visitor, and an
empty walk the resolver adds because it runs the provider as a batchable one (after
``visit_Module``, where all the work is done, it offers every node to hooks the
provider does not have). :func:`prime` instead:

- gives the wrapper the expression contexts from
  :func:`codemods.engine.metadata.contexts.expression_contexts` (one walk over the nodes' fields);
- runs the provider's scope visitor alone, as the provider's ``visit_Module`` does, and
  stores its result as the resolver would;
- runs it as :class:`_QuickScopes`: the same visitor, whose per-node ``on_leave`` asks
  whether a node binds names with a table of classes instead of ``isinstance`` on a
  tuple of eighteen libcst classes (each check going through ``ABCMeta``): a third of
  the visitor's time; its hooks are found once per class, and libcst's no-op stubs
  skipped (:class:`codemods.syntax.cst_dispatch.HookCache`).

Each step leans on libcst's private layout (the wrapper's ``_metadata`` mapping, the
provider's ``_computed``, the visitor's ``on_leave`` and ``visit_Module``'s code); where
a libcst lays any of it out otherwise, that step is left to libcst.
``tests/test_node_metadata.py`` compares every node's scope and every scope's
assignments, accesses and referents with the resolver's own.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from libcst.metadata import ExpressionContextProvider, MetadataWrapper, ScopeProvider
from libcst.metadata import scope_provider as _libcst_scopes

from codemods.engine.metadata.contexts import expression_contexts
from codemods.syntax.cst_dispatch import HookCache, hook

__all__ = ["prime"]


def prime(wrapper: MetadataWrapper) -> None:
    """Give ``wrapper`` the expression contexts and the scopes of its module."""
    computed = getattr(wrapper, "_metadata", None)
    if not isinstance(computed, dict):
        return
    if ExpressionContextProvider not in computed:
        computed[ExpressionContextProvider] = expression_contexts(wrapper.module)
    if ScopeProvider in computed or not _resolvable(ScopeProvider):
        return
    provider = ScopeProvider()
    provider._computed = {}
    with provider.resolve(wrapper):
        if _QUICK is None:
            provider.visit_Module(wrapper.module)
        else:
            visitor = _QUICK(provider)
            wrapper.module.visit(visitor)
            visitor.infer_accesses()
    computed[ScopeProvider] = MappingProxyType(dict(provider._computed))


def _resolvable(provider: type) -> bool:
    """Whether ``provider`` does all its work in ``visit_Module`` (and needs contexts only).

    Example:
        >>> _resolvable(ScopeProvider)
        True
    """
    hooks = [
        name
        for name in vars(provider)
        if name.startswith(("visit_", "leave_", "on_")) and name != "visit_Module"
    ]
    dependencies = set(provider.METADATA_DEPENDENCIES) <= {ExpressionContextProvider}
    return not hooks and dependencies and hasattr(provider, "visit_Module")


def _code_names(function: Any) -> tuple[str, ...]:
    return getattr(getattr(function, "__code__", None), "co_names", ())


def _quick_scopes() -> type | None:
    """:class:`_QuickScopes`, where libcst's visitor and provider are as it expects."""
    visitor = getattr(_libcst_scopes, "ScopeVisitor", None)
    binding = getattr(_libcst_scopes, "_ASSIGNMENT_LIKE_NODES", None)
    if visitor is None or not isinstance(binding, tuple):
        return None
    # The provider builds this visitor, visits, infers; its on_leave notes the node's
    # scope, counts a binding node and hands over to the generic dispatch.
    expected_module = ("ScopeVisitor", "visit", "infer_accesses")
    expected_leave = (
        "provider",
        "set_metadata",
        "scope",
        "isinstance",
        "_ASSIGNMENT_LIKE_NODES",
        "_assignment_count",
        "super",
        "on_leave",
    )
    if _code_names(ScopeProvider.visit_Module) != expected_module:
        return None
    if _code_names(visitor.on_leave) != expected_leave:
        return None

    binds: dict[type, bool] = {}
    leaves: dict[type, Any] = {}

    class _QuickScopes(HookCache, visitor):  # type: ignore[misc,valid-type]
        """libcst's scope visitor, its per-node hooks and ``on_leave`` through tables."""

        def on_leave(self, original_node: Any) -> None:
            self.provider.set_metadata(original_node, self.scope)
            kind = type(original_node)
            bound = binds.get(kind)
            if bound is None:
                bound = binds[kind] = issubclass(kind, binding)
            if bound:
                self.scope._assignment_count += 1
            leave = leaves.get(kind, 0)
            if leave == 0:
                leave = leaves[kind] = hook(type(self), "leave", kind)
            if leave is not None:
                leave(self, original_node)

    return _QuickScopes


_QUICK = _quick_scopes()
