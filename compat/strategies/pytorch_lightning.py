"""The legacy FSDP strategies for the standalone ``pytorch_lightning`` package's Trainer."""

from __future__ import annotations

from compat.strategies import import_flavour
from compat.strategies.classes import build

_strategies = import_flavour("pytorch_lightning.strategies")
DDPFullyShardedStrategy, DDPFullyShardedNativeStrategy, DDPFullyShardedPlugin = build(
    _strategies.FSDPStrategy, "trainer", _strategies.StrategyRegistry
)

__all__ = ["DDPFullyShardedNativeStrategy", "DDPFullyShardedPlugin", "DDPFullyShardedStrategy"]
