"""FSDP305: FairScale's ``default_auto_wrap_policy`` as torch's size policy (unsafe).

FairScale's ``enable_wrap``/``auto_wrap`` call a policy with ``unwrapped_params=``,
which torch's ``size_based_auto_wrap_policy`` (since torch 2.0) does not take. So the
policy moves only where no FairScale consumer is left in the file: FairScale's FSDP and
``enable_wrap`` move too (FSDP301, FSDP302), and there is no ``auto_wrap`` (FSDP304,
which has no torch counterpart). Torch's policy lacks FairScale's ``module_is_root`` and
``skip_params_check_for_root``: a call or ``partial`` that passes them is left for a human.
"""

from __future__ import annotations

from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.kinds.reference import Renamed
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import is_plain_positional, keyword

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite

#: Keywords torch's ``size_based_auto_wrap_policy`` takes as FairScale's policy does.
_SHARED_KEYWORDS = frozenset({"min_num_params", "force_leaf_modules", "exclude_wrap_modules"})
#: Positional parameters both take in one order: module, recurse, the parameter count
#: (FairScale's fourth is ``module_is_root``, or ``min_num_params`` in its older releases).
_SHARED_POSITIONAL = 3


def _shared(keywords: list[str | None], stars: bool, partial: bool) -> bool:
    positional = sum(name is None for name in keywords)
    limit = 0 if partial else _SHARED_POSITIONAL
    named = {name for name in keywords if name is not None}
    return not stars and positional <= limit and named <= _SHARED_KEYWORDS


def size_policy_arguments(site: Site) -> Translation | None:
    """The call or ``partial`` as it is, where torch's policy takes each argument."""
    pairs = site.pairs
    stars = any(not is_plain_positional(o) and keyword(o) is None for o, _ in pairs)
    if not _shared([keyword(o) for o, _ in pairs], stars, site.partial):
        return None
    return Translation(list(site.updated.args))


def size_policy_certain(site: AstSite) -> bool:
    """The ``ast`` half of :func:`size_policy_arguments`."""
    arguments = site.arguments
    stars = any(on_ast.star(a) for a in arguments)
    return _shared([on_ast.keyword(a) for a in arguments], stars, site.partial)


class Fsdp305(Renamed):
    """A plain rename, coupled to the FairScale consumers of the policy."""

    rename = CallSiteFix(
        size_policy_arguments,
        bare_references=True,
        partials=True,
        requires=("FSDP301", "FSDP302"),
        blocked_by=("FSDP304",),
        certain=size_policy_certain,
    )


BEHAVIOUR = Fsdp305
