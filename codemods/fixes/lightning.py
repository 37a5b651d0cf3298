"""Call-site fixes for Lightning's removed FSDP strategies (FSDP202, FSDP210)."""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst

from codemods.fixes.base import CallSiteFix, Import, Site, Translation
from codemods.registry.names import (
    FABRIC_ROOTS,
    FAIRSCALE_ONLY_STRATEGY_ARGUMENTS,
    TORCH_WRAP,
)
from codemods.syntax import dotted, keep_ending, keyword, keyword_arg, string_like


def _fabric(site: Site) -> bool:
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
    if _fabric(site) and name == "precision_plugin":
        return updated.with_changes(keyword=cst.Name("precision"))  # Fabric's spelling
    if _fabric(site) and name == "checkpoint_io":
        return None  # Fabric's FSDPStrategy has no checkpoint_io
    return updated


def _translate(site: Site, specific: Callable[..., Any]) -> Translation | None:
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

    return _translate(site, specific)


def native_strategy_arguments(site: Site) -> Translation | None:
    """The arguments of compat's ``DDPFullyShardedNativeStrategy`` as ``FSDPStrategy`` ones.

    compat accepted module classes in any collection as ``auto_wrap_policy``; Lightning
    takes a set, so a list or tuple display becomes one. (A name is kept: it may as well
    hold a policy callable, which Lightning takes too.)
    """

    def specific(name: str, original: cst.Arg, updated: cst.Arg, imports: list[Import]) -> Any:
        value = updated.value
        if (
            name == "auto_wrap_policy"
            and isinstance(value, (cst.List, cst.Tuple))
            and value.elements
        ):
            return updated.with_changes(value=cst.Set(elements=value.elements))
        return updated

    return _translate(site, specific)


FIXES = {
    "FSDP202": CallSiteFix(ddp_fully_sharded_arguments),
    "FSDP210": CallSiteFix(native_strategy_arguments),
}
