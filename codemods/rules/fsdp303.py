"""FSDP303: FairScale's ``wrap`` as torch's, inside torch's ``enable_wrap`` (unsafe)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Renamed
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import is_plain_positional

if TYPE_CHECKING:
    from codemods.rules.api import AstSite


def wrap_arguments(site: Site) -> Translation | None:
    """``wrap(module)``: certain without overrides (they would be FairScale arguments)."""
    if site.partial or len(site.pairs) != 1 or not is_plain_positional(site.pairs[0][0]):
        return None
    return Translation(list(site.updated.args))


def wrap_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`wrap_arguments`."""
    arguments = site.arguments
    return not site.partial and len(arguments) == 1 and on_ast.plain_positional(arguments[0])


class Fsdp303(Renamed):
    """Rename, only together with ``enable_wrap`` (FSDP302)."""

    rename = CallSiteFix(wrap_arguments, requires=("FSDP302",), certain=wrap_certain)


BEHAVIOUR = Fsdp303
