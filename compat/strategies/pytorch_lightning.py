"""The legacy FSDP strategies for the standalone ``pytorch_lightning`` package's Trainer."""

from __future__ import annotations

from pytorch_lightning.strategies import FSDPStrategy, StrategyRegistry

from compat.strategies.mixins import (
    FairScaleArguments,
    NativeArguments,
    RemovedName,
    TrainerOnCPU,
)
from compat.strategies.registration import register_removed_names


class CPUCapableFSDPStrategy(TrainerOnCPU, FSDPStrategy):
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
    """Register the removed strategy strings pytorch_lightning lacks; return those registered."""
    return register_removed_names(StrategyRegistry, RemovedStrategyName, "pytorch_lightning")


#: The removed strategy strings this import registered with pytorch_lightning.
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
