"""What the fixes of Lightning's removed FSDP strategies share (FSDP202, FSDP210)."""

from __future__ import annotations

import ast

from codemods.registry.names import FABRIC_ROOTS
from codemods.rules.api import Import, Site, Translation
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keep_ending, keyword, keyword_arg
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable

    from codemods.rules.api import AstSite


def fabric(site: Site | AstSite) -> bool:
    """Whether the strategy called is Fabric's (compat's or Lightning's)."""
    return site.old.startswith(("compat.strategies.fabric.", *FABRIC_ROOTS))


#: A translator's answer for an argument the new call no longer needs.
DROP = object()


def _common(site: Site, name: str, original: cst.Arg, updated: cst.Arg) -> cst.Arg | None:
    """Arguments both legacy strategies share (others are kept as they are).

    Returns the new argument, or None where it cannot be translated with certainty.
    """
    if name == "activation_checkpointing":
        if keyword(updated) != name:  # FSDP208 already rewrote it
            return updated
        classes = site.resolver.class_set(original.value, updated.value)
        return None if classes is None else keyword_arg(updated, f"{name}_policy", classes)
    if fabric(site) and name == "precision_plugin":
        return updated.with_changes(keyword=cst.Name("precision"))  # Fabric's spelling
    if fabric(site) and name == "checkpoint_io":
        return None  # Fabric's FSDPStrategy has no checkpoint_io
    return updated


def _ast_common(site: AstSite, name: str, arg: ast.keyword) -> bool:
    """The ``ast`` half of :func:`_common`: whether it translates the argument."""
    if name == "activation_checkpointing":
        return site.resolver.class_set(arg.value) is not None
    return not (fabric(site) and name == "checkpoint_io")  # type: ignore[arg-type]


def certain(site: AstSite, specific: Callable[[str, ast.keyword], bool | None]) -> bool:
    """The ``ast`` half of :func:`translate`: whether every keyword argument translates.

    ``specific(name, arg)``: True or False where it decides, None to defer to what both
    strategies share.
    """
    if site.partial:
        return False
    for arg in site.arguments:
        name = on_ast.keyword(arg)
        if name is None:
            return False
        verdict = specific(name, arg)  # type: ignore[arg-type]
        if verdict is None:
            verdict = _ast_common(site, name, arg)  # type: ignore[arg-type]
        if not verdict:
            return False
    return True


def translate(site: Site, specific: Callable[..., Any]) -> Translation | None:
    """Translate every keyword argument: ``specific`` first, then what both strategies share.

    ``specific(name, original, updated, imports)`` returns the new argument, None where
    it is not certain, :data:`DROP`, or ``updated`` itself to defer to :func:`_common`.
    """
    if site.partial:
        return None
    out: list[cst.Arg] = []
    imports: list[Import] = []
    for original, updated in site.pairs:
        name = keyword(original)
        if name is None:
            return None
        result = specific(name, original, updated, imports)
        if result is updated:
            result = _common(site, name, original, updated)
        if result is None:
            return None
        if result is not DROP:
            out.append(result)
    return Translation(keep_ending(out, list(site.updated.args)), tuple(imports))
