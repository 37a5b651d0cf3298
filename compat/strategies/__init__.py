"""Lightning's removed FSDP strategies, on Lightning 2.x and on CPU too.

``compat.strategies.DDPFullyShardedStrategy`` (FairScale-era, removed in Lightning 2.0)
and ``DDPFullyShardedNativeStrategy`` (renamed ``FSDPStrategy`` in 2.0) are
``FSDPStrategy`` subclasses for the Trainer: from ``lightning.pytorch`` when the
``lightning`` package is installed, else from ``pytorch_lightning``. For the other
flavours use ``compat.strategies.pytorch_lightning`` and ``compat.strategies.fabric``.
Their old arguments are translated, each with a deprecation warning, and with
``accelerator="cpu"`` FSDP runs on gloo (Lightning itself refuses FSDP on CPU).

Needs the ``lightning`` extra: ``pip install "fsdp-compat[lightning]"``.
"""

from __future__ import annotations

import importlib
import types

from compat.strategies.classes import build

LIGHTNING_HINT = (
    'compat.strategies needs Lightning: `pip install "fsdp-compat[lightning]"` '
    "(or `pip install lightning` / `pip install pytorch-lightning`)"
)


def import_flavour(*candidates: str) -> types.ModuleType:
    """Import the first of ``candidates`` (``...strategies`` modules) that is installed.

    Raises:
        ImportError: If none is, saying what to install.
    """
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"{LIGHTNING_HINT}; none of {', '.join(candidates)} imports")


_strategies = import_flavour("lightning.pytorch.strategies", "pytorch_lightning.strategies")
DDPFullyShardedStrategy, DDPFullyShardedNativeStrategy, DDPFullyShardedPlugin = build(
    _strategies.FSDPStrategy, "trainer", _strategies.StrategyRegistry
)

__all__ = ["DDPFullyShardedNativeStrategy", "DDPFullyShardedPlugin", "DDPFullyShardedStrategy"]
