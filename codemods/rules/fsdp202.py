"""FSDP202: the FairScale ``DDPFullyShardedStrategy`` as ``FSDPStrategy`` (unsafe)."""

from __future__ import annotations

from codemods.registry.names import FAIRSCALE_ONLY_STRATEGY_ARGUMENTS, TORCH_WRAP
from codemods.rules.api import CallSiteFix, Import, Site, Translation
from codemods.rules.call_blockers import ddp_fully_sharded_blockers
from codemods.rules.fsdp301 import PARTIAL_BLOCKER, site_arguments
from codemods.rules.kinds.reference import Reported
from codemods.rules.lightning_strategy import DROP, fabric, translate
from codemods.syntax.cst_nodes import dotted, keyword_arg, string_like
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

    from codemods.rules.api import AstSite


def ddp_fully_sharded_arguments(site: Site) -> Translation | None:
    """``DDPFullyShardedStrategy`` (FairScale) keyword arguments as ``FSDPStrategy`` ones.

    None where a translation is not certain: positional or FairScale-only arguments, a
    non-literal ``reshard_after_forward``, a checkpointing value that is not a class.
    """

    def specific(name: str, original: cst.Arg, updated: cst.Arg, imports: list[Import]) -> Any:
        if name == "flatten_parameters":
            # torch's FSDP1 always flattens: only True is dropped safely
            return DROP if dotted(original.value) == "True" else None
        if name in FAIRSCALE_ONLY_STRATEGY_ARGUMENTS:
            return None
        if name == "min_num_params":
            policy = cst.parse_expression("partial(size_based_auto_wrap_policy, min_num_params=0)")
            threshold = policy.args[1].with_changes(value=updated.value)
            imports += [("functools", "partial"), (TORCH_WRAP, "size_based_auto_wrap_policy")]
            value = policy.with_changes(args=[policy.args[0], threshold])
            return keyword_arg(updated, "auto_wrap_policy", value)
        if name == "reshard_after_forward":
            flag = dotted(original.value)
            if flag not in ("True", "False"):
                return None
            strategy = string_like(
                original.value, "FULL_SHARD" if flag == "True" else "SHARD_GRAD_OP"
            )
            return keyword_arg(updated, "sharding_strategy", strategy)
        return updated

    return translate(site, specific)


def ddp_fully_sharded_reasons(site: Site | AstSite) -> list[str]:
    """Why :func:`ddp_fully_sharded_arguments` leaves a call, from either detector's site."""
    if site.partial:
        return [PARTIAL_BLOCKER]
    arguments = site_arguments(site, classes="activation_checkpointing")
    return ddp_fully_sharded_blockers(arguments, fabric=fabric(site))


class Fsdp202(Reported):
    """Rename to ``FSDPStrategy`` where every call's arguments translate."""

    rename = CallSiteFix(
        ddp_fully_sharded_arguments,
        blockers=ddp_fully_sharded_reasons,
    )


BEHAVIOUR = Fsdp202
