"""FSDP120: DCP's ``save_state_dict(...)`` as ``save(...)`` (and FSDP121's ``load``).

``save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0,
no_dist=False, planner=None)`` became ``save(state_dict, *, checkpoint_id=None,
storage_writer=None, planner=None, process_group=None, no_dist=False, ...)``:
everything after the state dict is keyword-only, and ``coordinator_rank`` is gone (the
new API always coordinates from rank 0). A call is translated only where each argument
finds its keyword: positional ones are named after the old parameter, a literal
``coordinator_rank=0`` is dropped; ``*args``/``**kwargs`` or another coordinator rank
leave every use in the file for a human.
"""

from __future__ import annotations

import ast

from codemods.registry.names import DCP
from codemods.rules.api import AstSite, CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Renamed
from codemods.syntax.cst_nodes import keep_ending, keyword, keyword_arg, literal
from codemods.syntax.lazy_libcst import cst

#: The old functions' parameters after the state dict, in order; ``{io}`` is the
#: storage writer (``save_state_dict``) or reader (``load_state_dict``).
_PARAMETERS = ("{io}", "process_group", "coordinator_rank", "no_dist", "planner")


def _shadowed(site: Site, new: str) -> bool:
    """Whether the old name is called bare and ``new`` means something else there.

    ``from ... import save_state_dict`` becomes ``from ... import save``: a training
    script's own ``def save(...)`` (or any other ``save`` in reach) would take over.
    """
    func = site.original.args[0].value if site.partial else site.original.func
    if not isinstance(func, cst.Name):
        return False  # `dcp.save_state_dict` becomes `dcp.save`: no new binding
    scope = getattr(site.resolver, "scope", lambda node: None)(func)
    if scope is None:
        return True
    if new not in scope:
        return False
    return not all(
        isinstance(getattr(a, "node", None), cst.ImportFrom)
        and {q.name for q in scope.get_qualified_names_for(a.name)} <= {f"{DCP}.{new}"}
        for a in scope[new]
    )


def _translator(io: str, new: str):
    parameters = tuple(p.format(io=io) for p in _PARAMETERS)

    def translate(site: Site) -> Translation | None:
        if _shadowed(site, new):
            return None
        pairs = site.pairs
        head = list(site.updated.args[:1]) if site.partial else []
        args: list[cst.Arg] = []
        for index, (original, updated) in enumerate(pairs):
            if original.star:
                return None  # unknown arguments: maybe a coordinator rank
            name = keyword(original)
            if name is None:
                if index == 0:
                    args.append(updated)  # the state dict stays first
                    continue
                if index > len(parameters):
                    return None
                name = parameters[index - 1]
                updated = keyword_arg(updated, name, updated.value)
            if name == "coordinator_rank":
                rank = literal(original.value)
                if type(rank) is not int or rank != 0:
                    return None  # the new API has rank 0 coordinate, always
                continue
            args.append(updated)
        kept = [u for _, u in pairs]
        return Translation(head + keep_ending(args, kept))

    return translate


def _ast_shadowed(site: AstSite, new: str) -> bool:
    """:func:`_shadowed` on ``ast`` (``site`` is an ``AstSite``)."""
    from codemods.syntax.ast_nodes import Undecided, arguments, import_names, value

    func = value(arguments(site.call)[0]) if site.partial else site.call.func
    if type(func) is not ast.Name:
        return False
    names = site.resolver.names
    scope = site.resolver.scope(func)
    if scope is None:
        return True
    if new in names.deleted:  # `del new` binds to astscope, not to libcst
        raise Undecided(f"`{new}` is deleted somewhere")
    binder = names.lookup(scope, new)
    if binder is None:
        return False
    if binder.others.get(new):
        return True
    return not all(
        type(statement) is ast.ImportFrom and import_names(statement, new) <= {f"{DCP}.{new}"}
        for statement in binder.imports.get(new, ())
    )


def _ast_certain(io: str, new: str):
    """The ``ast`` half of :func:`_translator`: whether it translates the call."""
    parameters = tuple(p.format(io=io) for p in _PARAMETERS)

    def certain(site: AstSite) -> bool:
        from codemods.syntax.ast_nodes import keyword as keyword_of
        from codemods.syntax.ast_nodes import literal as literal_of
        from codemods.syntax.ast_nodes import star, value

        if _ast_shadowed(site, new):
            return False
        for index, arg in enumerate(site.arguments):
            if star(arg):
                return False
            name = keyword_of(arg)
            if name is None:
                if index == 0:
                    continue
                if index > len(parameters):
                    return False
                name = parameters[index - 1]
            if name == "coordinator_rank":
                rank = literal_of(site.resolver, value(arg))
                if type(rank) is not int or rank != 0:
                    return False
        return True

    return certain


class Fsdp120(Renamed):
    """Rename to ``save`` where every call's arguments translate."""

    rename = CallSiteFix(
        _translator("storage_writer", "save"),
        partials=True,
        certain=_ast_certain("storage_writer", "save"),
    )


BEHAVIOUR = Fsdp120
