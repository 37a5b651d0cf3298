"""The legacy FSDP strategies for the standalone ``pytorch_lightning`` package's Trainer."""

from __future__ import annotations

import functools

from pytorch_lightning.plugins.precision import FSDPPrecision
from pytorch_lightning.strategies import FSDPStrategy, StrategyRegistry

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
) = legacy_precision_plugins(__name__, FSDPPrecision, "pytorch_lightning")

#: Registers the removed strategy strings pytorch_lightning lacks; returns those it registered.
register_names = functools.partial(
    register_removed_names, StrategyRegistry, RemovedStrategyName, "pytorch_lightning"
)
#: The removed strategy strings this import registered with pytorch_lightning.
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
