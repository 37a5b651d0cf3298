"""The legacy FSDP strategies for ``Fabric(strategy=...)``, on Lightning 2.x and on CPU too.

Built on ``lightning.fabric``; where only the standalone ``lightning_fabric`` package is
installed, these are :mod:`compat.strategies.lightning_fabric`'s classes.
"""

from __future__ import annotations

import functools
import importlib.util

from compat.strategies.mixins import FabricOnCPU, legacy_classes
from compat.strategies.registration import register_removed_names

if importlib.util.find_spec("lightning") is None:
    from compat.strategies.lightning_fabric import (
        REGISTERED,
        CPUCapableFSDPStrategy,
        DDPFullyShardedNativeStrategy,
        DDPFullyShardedPlugin,
        DDPFullyShardedStrategy,
        RemovedStrategyName,
        register_names,
    )
else:
    from lightning.fabric.strategies import STRATEGY_REGISTRY, FSDPStrategy

    (
        CPUCapableFSDPStrategy,
        DDPFullyShardedStrategy,
        DDPFullyShardedPlugin,
        DDPFullyShardedNativeStrategy,
        RemovedStrategyName,
    ) = legacy_classes(__name__, FSDPStrategy, FabricOnCPU)

    #: Registers the removed strategy strings lightning.fabric lacks; returns those it registered.
    register_names = functools.partial(
        register_removed_names, STRATEGY_REGISTRY, RemovedStrategyName, "lightning.fabric"
    )
    #: The removed strategy strings this import registered with lightning.fabric.
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
