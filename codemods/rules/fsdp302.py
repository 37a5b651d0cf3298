"""FSDP302: FairScale's ``enable_wrap`` as torch's (unsafe; moves with ``wrap``)."""

from __future__ import annotations

from codemods.registry import REGISTRY
from codemods.registry.names import TORCH_FSDP_CLASSES
from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.fsdp301 import fsdp_keywords, fsdp_keywords_certain
from codemods.rules.kinds.reference import Reported
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keep_ending, keyword

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite

_TORCH_FSDP = set(TORCH_FSDP_CLASSES)


def enable_wrap_arguments(site: Site) -> Translation | None:
    """``enable_wrap(wrapper_cls=FSDP, **fsdp_kwargs)`` for torch's ``enable_wrap``.

    torch's takes no ``auto_wrap_policy`` (only FairScale's ``auto_wrap`` read it). The
    other arguments are the wrapper's: translated when it is FairScale's FSDP, kept when
    it is torch's, and not touched for any other wrapper.
    """
    pairs = site.pairs
    names = [keyword(o) for o, _ in pairs]
    if site.partial or "wrapper_cls" not in names or "auto_wrap_policy" in names:
        return None
    index = names.index("wrapper_cls")
    wrapper = site.resolver.qualified(pairs[index][0].value)
    rest = pairs[:index] + pairs[index + 1 :]
    if wrapper & _TORCH_FSDP:
        return Translation(list(site.updated.args))
    if not wrapper & set(REGISTRY["FSDP301"].old):
        return None
    translated = fsdp_keywords(rest)
    if translated is None:
        return None
    args, imports = translated
    args.insert(min(index, len(args)), pairs[index][1])
    return Translation(keep_ending(args, list(site.updated.args)), tuple(imports))


def enable_wrap_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`enable_wrap_arguments`."""
    arguments = site.arguments
    names = [on_ast.keyword(a) for a in arguments]
    if site.partial or "wrapper_cls" not in names or "auto_wrap_policy" in names:
        return False
    index = names.index("wrapper_cls")
    wrapper = site.resolver.qualified(on_ast.value(arguments[index]))
    if wrapper & _TORCH_FSDP:
        return True
    if not wrapper & set(REGISTRY["FSDP301"].old):
        return False
    return fsdp_keywords_certain(site, arguments[:index] + arguments[index + 1 :])


class Fsdp302(Reported):
    """Rename to torch's ``enable_wrap`` with FairScale FSDP's arguments translated."""

    rename = CallSiteFix(
        enable_wrap_arguments,
        requires=("FSDP301", "FSDP303"),
        blocked_by=("FSDP304",),
        certain=enable_wrap_certain,
    )


BEHAVIOUR = Fsdp302
