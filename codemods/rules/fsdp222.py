"""FSDP222: ``NativeMixedPrecisionPlugin(16, ...)`` as ``MixedPrecisionPlugin("16-mixed", ...)``.

The rename is certain only where every call passes its precision as a literal of
Lightning 1.x (by keyword or first): the value changes with the name (FSDP220's values).
"""

from __future__ import annotations

from codemods.registry import REGISTRY
from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.fsdp220 import ast_precision, cst_precision, new_value
from codemods.rules.kinds.reference import Reported
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import literal, string_like

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite

#: Lightning 1.x's precision values and their 2.x spellings (FSDP220's).
_VALUES = REGISTRY["FSDP220"].values


def new_precision(site: Site) -> Translation | None:
    """The call with its literal precision respelled, or None where it is not a literal."""
    own = [original for original, _ in site.pairs]
    index = None if site.partial else cst_precision(own)
    if index is None:
        return None
    new = new_value(_VALUES, literal(own[index].value))
    if new is None:
        return None
    args = list(site.updated.args)
    args[index] = args[index].with_changes(value=string_like(own[index].value, new))
    return Translation(args)


def new_precision_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`new_precision`."""
    arg = None if site.partial else ast_precision(site.arguments)
    if arg is None:
        return False
    value = on_ast.literal(site.resolver, on_ast.value(arg))
    return new_value(_VALUES, value) is not None


class Fsdp222(Reported):
    """Rename each call to ``MixedPrecisionPlugin``, its precision in 2.x's spelling."""

    rename = CallSiteFix(new_precision, certain=new_precision_certain)


BEHAVIOUR = Fsdp222
