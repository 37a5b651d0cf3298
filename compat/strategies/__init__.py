"""Lightning's removed FSDP strategies, on Lightning 2.x and on CPU too.

``compat.strategies.DDPFullyShardedStrategy`` (FairScale-era, removed in Lightning 2.0)
and ``DDPFullyShardedNativeStrategy`` (renamed ``FSDPStrategy`` in 2.0) are
``FSDPStrategy`` subclasses for the Trainer: from ``lightning.pytorch`` when the
``lightning`` package is installed, else from ``pytorch_lightning``. For the other
flavours use ``compat.strategies.pytorch_lightning`` and ``compat.strategies.fabric``
(each class lives in the module of its flavour, so it pickles). Their old arguments are
translated, each with a deprecation warning, and with ``accelerator="cpu"`` FSDP runs
on gloo (Lightning itself refuses FSDP on CPU). Importing a flavour also registers the
strategy strings Lightning removed (``"fsdp_native"``, ...) with its strategy registry.

Needs the ``lightning`` extra: ``pip install "fsdp-compat[lightning]"``.
"""

from __future__ import annotations

import importlib
import importlib.util
import types
from typing import Any

LIGHTNING_HINT = (
    'compat.strategies needs Lightning: `pip install "fsdp-compat[lightning]"` '
    "(or `pip install lightning` / `pip install pytorch-lightning`)"
)

#: The Trainer flavours' modules, the unified ``lightning`` package's first.
_TRAINER_FLAVOURS = {
    "lightning": "compat.strategies.lightning_pytorch",
    "pytorch_lightning": "compat.strategies.pytorch_lightning",
}


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


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:
        return False


_DEFAULT = next((module for pkg, module in _TRAINER_FLAVOURS.items() if _installed(pkg)), None)
if _DEFAULT is None:
    raise ImportError(f"{LIGHTNING_HINT}; neither lightning nor pytorch_lightning is installed")

__all__ = ["DDPFullyShardedNativeStrategy", "DDPFullyShardedPlugin", "DDPFullyShardedStrategy"]


def __getattr__(name: str) -> Any:
    # The default flavour is imported on first use, so that importing another flavour
    # (compat.strategies.pytorch_lightning) does not import the unified package too.
    if name in __all__:
        return getattr(importlib.import_module(_DEFAULT), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
