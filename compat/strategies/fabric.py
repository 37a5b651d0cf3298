"""The legacy FSDP strategies for ``Fabric(strategy=...)``, on Lightning 2.x and on CPU too.

Built on ``lightning.fabric``; where only the standalone ``lightning_fabric`` package is
installed, these are :mod:`compat.strategies.lightning_fabric`'s classes.
"""

from __future__ import annotations

import importlib.util

from compat.strategies.mixins import (
    FabricOnCPU,
    FairScaleArguments,
    NativeArguments,
    RemovedName,
)
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

    class CPUCapableFSDPStrategy(FabricOnCPU, FSDPStrategy):
        """``FSDPStrategy`` that also runs on CPU with gloo."""

    class DDPFullyShardedStrategy(FairScaleArguments, CPUCapableFSDPStrategy):
        """Lightning 1.x's FairScale ``DDPFullyShardedStrategy``, as torch FSDP (FSDP202)."""

    class DDPFullyShardedPlugin(DDPFullyShardedStrategy):
        """Lightning 1.5's name of the FairScale strategy (FSDP201)."""

        _rule = "FSDP201"

    class DDPFullyShardedNativeStrategy(NativeArguments, CPUCapableFSDPStrategy):
        """Lightning 1.7-1.9's ``DDPFullyShardedNativeStrategy``, now ``FSDPStrategy`` (FSDP203)."""

    class RemovedStrategyName(RemovedName, CPUCapableFSDPStrategy):
        """What a removed strategy string (``"fsdp_native"``, ...) builds, warning with its rule."""

    def register_names() -> list[str]:
        """Register the removed strategy strings lightning.fabric lacks; return those registered."""
        return register_removed_names(STRATEGY_REGISTRY, RemovedStrategyName, "lightning.fabric")

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
