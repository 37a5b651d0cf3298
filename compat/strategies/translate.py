"""Old Lightning FSDP strategy arguments to ``FSDPStrategy`` arguments (no Lightning import).

Both legacy classes share one translation: ``activation_checkpointing`` becomes
``activation_checkpointing_policy`` (FSDP208), a ``transformer_auto_wrap_policy`` partial
becomes the set of layer classes (FSDP209), and, for the FairScale-era
``DDPFullyShardedStrategy``, ``min_num_params`` becomes a size-based
``auto_wrap_policy`` and ``reshard_after_forward`` a ``sharding_strategy``; its other
FairScale-only arguments warn by name (FSDP202).
"""

from __future__ import annotations

import functools
from typing import Any

from codemods.registry.names import (
    DDP_FULLY_SHARDED_ARGUMENTS,
    DDP_FULLY_SHARDED_NATIVE_ARGUMENTS,
    FAIRSCALE_ONLY_STRATEGY_ARGUMENTS,
)
from compat.call_source import described
from compat.deprecation import warn_deprecated
from compat.policies import module_classes, normalize_policy
from compat.policy_types import torch_wrap

__all__ = [
    "DDP_FULLY_SHARDED_ARGUMENTS",
    "DDP_FULLY_SHARDED_NATIVE_ARGUMENTS",
    "for_fabric",
    "translate_common",
    "translate_ddp_fully_sharded",
]


def _exclusive(given: dict[str, Any], old: str, new: str) -> None:
    if old in given and new in given:
        raise TypeError(f"got both {old}= and {new}=; pass only {new}")


def _transformer_layers(policy: Any) -> Any:
    """The layer classes of a ``partial(transformer_auto_wrap_policy, ...)``, else None."""
    if not isinstance(policy, functools.partial) or policy.args:
        return None
    if getattr(policy.func, "__name__", "") != "transformer_auto_wrap_policy":
        return None
    if set(policy.keywords) != {"transformer_layer_cls"}:
        return None
    return set(module_classes(policy.keywords["transformer_layer_cls"], "transformer_layer_cls"))


def translate_common(given: dict[str, Any]) -> dict[str, Any]:
    """Translate what every legacy Lightning FSDP strategy may carry; return new kwargs."""
    _exclusive(given, "activation_checkpointing", "activation_checkpointing_policy")
    translated = dict(given)
    classes = translated.pop("activation_checkpointing", None)
    if classes is not None:
        warn_deprecated("FSDP208")
        translated["activation_checkpointing_policy"] = set(
            module_classes(classes, "activation_checkpointing")
        )
    policy = translated.get("auto_wrap_policy")
    if policy is not None:
        layers = _transformer_layers(policy)
        if layers is not None:
            warn_deprecated("FSDP209")
            translated["auto_wrap_policy"] = layers
        elif isinstance(policy, (type, set, frozenset, list, tuple)):
            translated["auto_wrap_policy"] = set(module_classes(policy, "auto_wrap_policy"))
        else:
            translated["auto_wrap_policy"] = normalize_policy(policy)
    return translated


def translate_ddp_fully_sharded(given: dict[str, Any]) -> dict[str, Any]:
    """``DDPFullyShardedStrategy`` (FairScale) arguments to ``FSDPStrategy`` arguments."""
    _exclusive(given, "min_num_params", "auto_wrap_policy")
    _exclusive(given, "reshard_after_forward", "sharding_strategy")
    kept = {k: v for k, v in given.items() if k not in FAIRSCALE_ONLY_STRATEGY_ARGUMENTS}
    translated = translate_common(kept)
    if "min_num_params" in translated:
        threshold = int(translated.pop("min_num_params"))
        translated["auto_wrap_policy"] = functools.partial(
            torch_wrap.size_based_auto_wrap_policy, min_num_params=threshold
        )
    if "reshard_after_forward" in translated:
        reshard = translated.pop("reshard_after_forward")
        translated["sharding_strategy"] = "FULL_SHARD" if reshard else "SHARD_GRAD_OP"
    dropped = [name for name in FAIRSCALE_ONLY_STRATEGY_ARGUMENTS if name in given]
    if given.get("flatten_parameters") is True:
        dropped.remove("flatten_parameters")  # torch's FSDP1 always flattens
    if dropped:
        listed = ", ".join(f"`{name}`" for name in dropped)
        detail = f"{listed}: no FSDPStrategy meaning; dropped."
        warn_deprecated("FSDP202", detail=detail, arguments=described(given))
    return translated


def for_fabric(translated: dict[str, Any]) -> dict[str, Any]:
    """Adjust Trainer-side argument names to Fabric's ``FSDPStrategy``."""
    translated = dict(translated)
    if "precision_plugin" in translated:
        translated["precision"] = translated.pop("precision_plugin")
    if translated.pop("checkpoint_io", None) is not None:
        raise TypeError("Fabric's FSDPStrategy takes no checkpoint_io; pass it to the Trainer only")
    return translated
