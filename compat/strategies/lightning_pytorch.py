"""The legacy FSDP strategies for the ``lightning.pytorch`` Trainer (Lightning 2.x, CPU too)."""

from __future__ import annotations

import functools

from lightning.pytorch.plugins.precision import FSDPPrecision
from lightning.pytorch.strategies import FSDPStrategy, StrategyRegistry

from compat.strategies.mixins import TrainerOnCPU, legacy_classes
from compat.strategies.precision import legacy_precision_plugins
from compat.strategies.registration import register_removed_names

(
    CPUCapableFSDPStrategy,
    DDPFullyShardedStrategy,
    DDPFullyShardedPlugin,
    DDPFullyShardedNativeStrategy,
    RemovedStrategyName,
) = legacy_classes(__name__, FSDPStrategy, TrainerOnCPU)

(
    FullyShardedNativeNativeMixedPrecisionPlugin,
    FullyShardedNativeMixedPrecisionPlugin,
) = legacy_precision_plugins(__name__, FSDPPrecision, "lightning.pytorch")

#: Registers the removed strategy strings lightning.pytorch lacks; returns those it registered.
register_names = functools.partial(
    register_removed_names, StrategyRegistry, RemovedStrategyName, "lightning.pytorch"
)
#: The removed strategy strings this import registered with lightning.pytorch.
REGISTERED = register_names()

__all__ = [
    "REGISTERED",
    "CPUCapableFSDPStrategy",
    "DDPFullyShardedNativeStrategy",
    "DDPFullyShardedPlugin",
    "DDPFullyShardedStrategy",
    "FullyShardedNativeMixedPrecisionPlugin",
    "FullyShardedNativeNativeMixedPrecisionPlugin",
    "RemovedStrategyName",
    "register_names",
]
