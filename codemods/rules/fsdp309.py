"""FSDP309: FairScale's ``ShardedGradScaler`` as torch's, where every argument is a keyword.

torch's scaler takes the same arguments under the same names, with ``device`` (default
``"cuda"``, what FairScale's always used) first and ``growth_factor`` /
``backoff_factor`` swapped: a call that names each argument means the same on both, one
that passes any by position is left for a human.
"""

from __future__ import annotations

from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Reported
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keyword

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite

#: FairScale's parameters, which torch's scaler takes under the same names.
_SHARED = (
    "init_scale",
    "growth_factor",
    "backoff_factor",
    "growth_interval",
    "enabled",
    "process_group",
)


def keyword_arguments(site: Site) -> Translation | None:
    """The call unchanged where each argument is one of :data:`_SHARED`, by keyword."""
    if site.partial or any(keyword(original) not in _SHARED for original, _ in site.pairs):
        return None
    return Translation(list(site.updated.args))


def keyword_arguments_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`keyword_arguments`."""
    return not site.partial and all(on_ast.keyword(a) in _SHARED for a in site.arguments)


class Fsdp309(Reported):
    """Rename calls whose arguments are all keywords torch's scaler shares."""

    rename = CallSiteFix(keyword_arguments, certain=keyword_arguments_certain)


BEHAVIOUR = Fsdp309
