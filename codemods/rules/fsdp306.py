"""FSDP306: FairScale's ``checkpoint_wrapper`` as torch's, non-reentrant (unsafe).

FairScale's FSDP cooperates with FairScale's wrapper only (it asks it whether a
backward pass is recomputing), so the wrapper moves only where FairScale's FSDP is
absent from the file or moves too: FSDP301, and Lightning's FairScale strategy
(FSDP202; FSDP201, the plugin, is never fixed and so keeps the wrapper).
"""

from __future__ import annotations

from codemods.registry.names import CHECKPOINT_WRAPPER
from codemods.rules.api import CallSiteFix, Site, Translation
from codemods.rules.fsdp301 import PARTIAL_BLOCKER, site_arguments
from codemods.rules.kinds.reference import Reported
from codemods.syntax.cst_nodes import (
    append_arg,
    is_plain_positional,
    keep_ending,
    keyword,
    literal,
    new_keyword,
)

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.rules.api import AstSite

_CHECKPOINT = CHECKPOINT_WRAPPER


def checkpoint_wrapper_arguments(site: Site) -> Translation | None:
    """``checkpoint_wrapper(module)`` for torch's, non-reentrant as compat runs it.

    ``offload_to_cpu=True`` has no torch counterpart inside ``checkpoint_wrapper`` (it
    takes ``offload_wrapper``), so it is left for a human.
    """
    pairs = site.pairs
    if site.partial or not pairs or not is_plain_positional(pairs[0][0]):
        return None
    for original, _ in pairs[1:]:
        if keyword(original) != "offload_to_cpu" or literal(original.value) is not False:
            return None
    module = pairs[0][1]
    impl = new_keyword("checkpoint_impl", "CheckpointImpl.NO_REENTRANT")
    args = append_arg(site.updated, keep_ending([module], list(site.updated.args)), impl)
    return Translation(args, ((_CHECKPOINT, "CheckpointImpl"),))


def checkpoint_wrapper_blockers(site: Site | AstSite) -> list[str]:
    """Why :func:`checkpoint_wrapper_arguments` leaves a call, from either detector's site."""
    if site.partial:
        return [PARTIAL_BLOCKER]
    arguments = site_arguments(site)
    first = arguments[0] if arguments else None
    if first is None or first.keyword is not None or first.star:
        return ["the module is not its first positional argument"]
    reasons = []
    for arg in arguments[1:]:
        if arg.keyword != "offload_to_cpu":
            name = f"`{arg.keyword}`" if arg.keyword else "an argument by position or `*`"
            reasons.append(f"{name} has no torch `checkpoint_wrapper` meaning")
        elif arg.flag is not False:
            reasons.append(
                "`offload_to_cpu` is not a literal False (True is torch's `offload_wrapper`)"
            )
    return reasons


class Fsdp306(Reported):
    """Rename, each call asking for non-reentrant checkpointing."""

    rename = CallSiteFix(
        checkpoint_wrapper_arguments,
        requires=("FSDP301", "FSDP201", "FSDP202"),
        blockers=checkpoint_wrapper_blockers,
    )


BEHAVIOUR = Fsdp306
