"""The legacy FSDP strategies for `Fabric(strategy=...)` (lightning.fabric or lightning_fabric)."""

from __future__ import annotations

from compat.strategies import import_flavour
from compat.strategies.classes import build

_strategies = import_flavour("lightning.fabric.strategies", "lightning_fabric.strategies")
DDPFullyShardedStrategy, DDPFullyShardedNativeStrategy, DDPFullyShardedPlugin = build(
    _strategies.FSDPStrategy, "fabric", _strategies.STRATEGY_REGISTRY
)

__all__ = ["DDPFullyShardedNativeStrategy", "DDPFullyShardedPlugin", "DDPFullyShardedStrategy"]
