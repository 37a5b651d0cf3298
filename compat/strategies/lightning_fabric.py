"""The legacy FSDP strategies for the standalone ``lightning_fabric`` package's ``Fabric``."""

from __future__ import annotations

from lightning_fabric.strategies import STRATEGY_REGISTRY, FSDPStrategy

from compat.strategies.mixins import (
    FabricOnCPU,
    FairScaleArguments,
    NativeArguments,
    RemovedName,
)
from compat.strategies.registration import register_removed_names


class CPUCapableFSDPStrategy(FabricOnCPU, FSDPStrategy):
    """``FSDPStrategy`` that also runs on CPU with gloo."""


class DDPFullyShardedStrategy(FairScaleArguments, CPUCapableFSDPStrategy):
    """Lightning 1.x's FairScale ``DDPFullyShardedStrategy``, as torch FSDP (FSDP202)."""


class DDPFullyShardedPlugin(DDPFullyShardedStrategy):
    """Lightning 1.5's name of the FairScale strategy (FSDP201); pass it as ``strategy=``."""

    _rule = "FSDP201"


class DDPFullyShardedNativeStrategy(NativeArguments, CPUCapableFSDPStrategy):
    """Lightning 1.7-1.9's ``DDPFullyShardedNativeStrategy``, now ``FSDPStrategy`` (FSDP203)."""


class RemovedStrategyName(RemovedName, CPUCapableFSDPStrategy):
    """What a removed strategy string (``"fsdp_native"``, ...) builds, warning with its rule."""


def register_names() -> list[str]:
    """Register the removed strategy strings lightning_fabric lacks; return those registered."""
    return register_removed_names(STRATEGY_REGISTRY, RemovedStrategyName, "lightning_fabric")


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
