"""Where FSDP2 lives on the installed torch, and whether the bridge can run there.

FSDP2's ``fully_shard`` appeared in torch 2.4 under ``torch.distributed._composable.fsdp``
and became public as ``torch.distributed.fsdp.fully_shard`` in 2.6; it runs on CPU ranks
(gloo) from 2.7. :func:`fsdp2_module` finds it; :func:`require_bridge` says plainly when
the bridge (:func:`compat.fsdp2.fully_shard_like_fsdp1`) cannot run. Both read torch
alone (not :func:`compat.features.current`, which also imports Lightning to read its
version: a second per process that every rank would pay).
"""

from __future__ import annotations

import functools
import importlib
import types

import torch
from packaging.version import Version

from codemods.registry import REGISTRY
from codemods.registry.names import TORCH_FSDP
from compat.features import fsdp2_module_name, torch_version

#: The public home of FSDP2, the one the bridge needs.
PUBLIC_FSDP2 = TORCH_FSDP


@functools.cache
def _find_fsdp2() -> types.ModuleType | None:
    name = fsdp2_module_name()  # compat.features' probe, which never takes a stand-in
    return importlib.import_module(name) if name else None


def fsdp2_on_cpu() -> bool:
    """Whether this torch's FSDP2 runs on CPU ranks (gloo)."""
    since = Version(REGISTRY.capability("fsdp2_on_cpu").since)
    return _find_fsdp2() is not None and torch_version() >= since


def fsdp2_module() -> types.ModuleType:
    """The module holding ``fully_shard`` on this torch.

    Raises:
        ImportError: On torch without FSDP2 (before 2.4), saying so.
    """
    module = _find_fsdp2()
    if module is None:
        raise ImportError(
            f"FSDP2 (fully_shard) needs torch >= 2.4, and fully_shard_like_fsdp1 needs "
            f"torch.distributed.fsdp.fully_shard (torch >= 2.6); installed torch "
            f"{torch_version()}. Use compat.fsdp.FullyShardedDataParallel (FSDP1) on this torch."
        )
    return module


def require_bridge(device: torch.device) -> types.ModuleType:
    """FSDP2's public module, if the bridge can shard on ``device`` with this torch.

    Args:
        device: The device the units will compute on.

    Raises:
        ImportError: Without ``torch.distributed.fsdp.fully_shard`` (torch < 2.6), or on
            CPU ranks before torch 2.7 (2.6.0's FSDP2 fails there), saying what to do.
    """
    module = fsdp2_module()
    if module.__name__ != PUBLIC_FSDP2:
        raise ImportError(
            f"fully_shard_like_fsdp1 needs torch.distributed.fsdp.fully_shard (torch >= 2.6); "
            f"installed torch {torch_version()} has only {module.__name__}. Upgrade torch, "
            "or keep FSDP1 (compat.fsdp.FullyShardedDataParallel) on this torch."
        )
    if device.type == "cpu" and not fsdp2_on_cpu():
        raise ImportError(
            f"FSDP2 on CPU ranks (gloo) needs torch >= 2.7; installed torch {torch_version()} "
            "fails there. Shard on an accelerator (device_id=...), upgrade torch, or keep FSDP1."
        )
    return module


__all__ = ["PUBLIC_FSDP2", "fsdp2_module", "fsdp2_on_cpu", "require_bridge"]
