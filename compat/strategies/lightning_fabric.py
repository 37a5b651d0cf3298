"""The legacy FSDP strategies for the standalone ``lightning_fabric`` package's ``Fabric``."""

from __future__ import annotations

import functools

from lightning_fabric.strategies import STRATEGY_REGISTRY, FSDPStrategy

from compat.strategies.mixins import FabricOnCPU, legacy_classes
from compat.strategies.registration import register_removed_names

(
    CPUCapableFSDPStrategy,
    DDPFullyShardedStrategy,
    DDPFullyShardedPlugin,
    DDPFullyShardedNativeStrategy,
    RemovedStrategyName,
) = legacy_classes(__name__, FSDPStrategy, FabricOnCPU)

#: Registers the removed strategy strings lightning_fabric lacks; returns those it registered.
register_names = functools.partial(
    register_removed_names, STRATEGY_REGISTRY, RemovedStrategyName, "lightning_fabric"
)
#: The removed strategy strings this import registered with lightning_fabric.
REGISTERED = register_names()

__all__ = [
    "REGISTERED",
    "CPUCapableFSDPStrategy",
    "DDPFullyShardedNativeStrategy",
    "DDPFullyShardedPlugin",
    "DDPFullyShardedStrategy",
    "RemovedStrategyName",
    "register_names",
]
