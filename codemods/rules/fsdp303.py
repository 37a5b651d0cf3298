"""FSDP303: FairScale's ``wrap`` as torch's, inside torch's ``enable_wrap`` (unsafe).

torch's ``wrap`` wraps only inside torch's own ``enable_wrap`` context and returns the
module unwrapped anywhere else, silently. So the swap is certain only for a call the
file itself puts inside ``with enable_wrap(...)`` (in the same function), where that
``enable_wrap`` is torch's or FairScale's rewritten to torch's in this run (FSDP302).
A ``wrap`` whose context is entered elsewhere (another module, a caller) keeps
FairScale's and is reported with FSDP302's reason.
"""

from __future__ import annotations

import ast

from codemods.registry import REGISTRY
from codemods.registry.names import TORCH_WRAP
from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Renamed
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import is_plain_positional
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from codemods.rules.api import AstSite

#: torch's context manager, the only one torch's ``wrap`` reads.
TORCH_ENABLE_WRAP = f"{TORCH_WRAP}.enable_wrap"
#: FairScale's, which FSDP302 rewrites to torch's.
FAIRSCALE_ENABLE_WRAP = frozenset(REGISTRY["FSDP302"].old)


def _torch_context(resolver: Any, manager: Any, call_kind: type) -> bool:
    """Whether a ``with`` item is torch's ``enable_wrap(...)`` once this run's fixes apply."""
    if type(manager) is not call_kind:
        return False
    names = resolver.qualified(manager.func)
    if TORCH_ENABLE_WRAP in names:
        return True
    return bool(names & FAIRSCALE_ENABLE_WRAP) and resolver.applies("FSDP302")


def _managers(resolver: Any, call: Any, shape: tuple) -> Iterator[Any]:
    """The context managers of the ``with`` statements around ``call``, in its function.

    ``shape``: the detector's ``with`` types, the types that end a function's body, and
    a ``with`` item's field for its manager (:func:`_cst_shape`, :data:`_AST_SHAPE`).
    """
    withs, scopes, field = shape
    node = resolver.parent(call)
    while node is not None and not isinstance(node, scopes):
        if isinstance(node, withs):
            yield from (getattr(item, field) for item in node.items)
        node = resolver.parent(node)


def _cst_shape() -> tuple:
    """The :func:`_managers` shape of libcst's nodes, made when asked (the lint never loads it)."""
    return ((cst.With,), (cst.FunctionDef, cst.Lambda, cst.ClassDef), "item")


def _entered_here(resolver: Any, call: cst.Call) -> bool:
    """Whether ``call`` runs inside a ``with`` of torch's ``enable_wrap``, in its function."""
    return any(
        _torch_context(resolver, m, cst.Call) for m in _managers(resolver, call, _cst_shape())
    )


def _ast_entered_here(resolver: Any, call: ast.Call) -> bool:
    """The ``ast`` half of :func:`_entered_here` (no libcst on the lint path)."""
    return any(_torch_context(resolver, m, ast.Call) for m in _managers(resolver, call, _AST_SHAPE))


_AST_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_AST_SHAPE = ((ast.With, ast.AsyncWith), _AST_SCOPES, "context_expr")


def wrap_arguments(site: Site) -> Translation | None:
    """``wrap(module)`` inside torch's ``enable_wrap``: certain without overrides.

    Overrides would be FairScale arguments.
    """
    if site.partial or len(site.pairs) != 1 or not is_plain_positional(site.pairs[0][0]):
        return None
    if not _entered_here(site.resolver, site.original):
        return None
    return Translation(list(site.updated.args))


def wrap_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`wrap_arguments`."""
    arguments = site.arguments
    return (
        not site.partial
        and len(arguments) == 1
        and on_ast.plain_positional(arguments[0])
        and _ast_entered_here(site.resolver, site.call)
    )


#: Why a ``wrap`` is left FairScale's where its function's ``enable_wrap`` is FairScale's
#: and FSDP302's fix, which would make it torch's, is not applied in the run.
STAYS_FAIRSCALE = "its `enable_wrap` stays FairScale's: FSDP302's fix is not applied in this run"
GIVEN_MORE = "`wrap` is given more than its module (FairScale's FSDP arguments)"
NOT_ENTERED = (
    "it is not inside a `with enable_wrap(...)` of its function (torch's `wrap` wraps "
    "nothing outside one)"
)


def wrap_blockers(site: Site | AstSite) -> list[str]:
    """Why :func:`wrap_arguments` leaves a call, from either detector's site."""
    from codemods.rules.fsdp301 import PARTIAL_BLOCKER, site_arguments

    if site.partial:
        return [PARTIAL_BLOCKER]
    arguments = site_arguments(site)
    if len(arguments) != 1 or arguments[0].keyword is not None or arguments[0].star:
        return [GIVEN_MORE]
    if isinstance(site, Site):  # libcst's nodes, named only here: the lint never loads it
        call, kind, shape = site.original, cst.Call, _cst_shape()
        entered = _entered_here(site.resolver, call)
    else:
        call, kind, shape = site.call, ast.Call, _AST_SHAPE
        entered = _ast_entered_here(site.resolver, call)
    if entered:
        return []
    fairscale = any(
        type(manager) is kind and site.resolver.qualified(manager.func) & FAIRSCALE_ENABLE_WRAP
        for manager in _managers(site.resolver, call, shape)
    )
    return [STAYS_FAIRSCALE if fairscale else NOT_ENTERED]


class Fsdp303(Renamed):
    """Rename, only together with ``enable_wrap`` (FSDP302)."""

    rename = CallSiteFix(
        wrap_arguments, requires=("FSDP302",), certain=wrap_certain, blockers=wrap_blockers
    )


BEHAVIOUR = Fsdp303
