"""Who asks a bridged model for its state dict: FSDP1 code, or code that knows FSDP2.

A bridged model is an FSDP2 model (an ``FSDPModule`` with DTensor parameters) that
also answers FSDP1's methods. Where the two APIs give one call two meanings,
``model.state_dict()`` (FSDP1: a full state dict by default; FSDP2: each rank's
DTensor shards) and ``model.load_state_dict()``, it answers as the caller's API means
it (:func:`fsdp2_aware_caller`):

- FSDP2's answer for torch's own distributed code (``get_model_state_dict`` and the rest
  of ``torch.distributed.checkpoint``) and for code that knows FSDP2: a module that
  binds torch's ``FSDPModule`` or ``fully_shard`` (under any name) and none of the
  bridge's names (``fully_shard_like_fsdp1``, ``fully_shard_by_policy``, ``FSDP1Api``).
  Such code takes its FSDP2 path for an ``FSDPModule`` (verl's ``fsdp_version(model)
  == 2``) and expects shards there;
- FSDP1's answer (the type set by ``FSDP1Api.state_dict_type``, full by default)
  everywhere else: the bridged program itself, the modules the rewrite put on the
  bridge, and code that knows neither.

The caller is the first frame outside the bridge and outside ``torch.nn``'s module
machinery, so a parent module's ``state_dict()`` (which calls each child's with a
prefix) answers as its own caller's API means it, as FSDP1's state-dict hooks do.
"""

from __future__ import annotations

import sys
import types
from typing import Any

#: Frames that are not the caller: the bridge itself, and nn.Module's recursion.
_PASS_THROUGH = ("compat.fsdp2", "torch.nn.modules", "contextlib")
#: torch's own code that reads a module's FSDP2 state dict.
_TORCH_DISTRIBUTED = "torch.distributed"
_BRIDGE_NAMES = ("fully_shard_like_fsdp1", "fully_shard_by_policy", "FSDP1Api")


def _fsdp2_objects() -> tuple[Any, ...]:
    from torch.distributed.fsdp import FSDPModule, fully_shard

    return (FSDPModule, fully_shard)


def _bridge_objects() -> tuple[Any, ...]:
    import compat.fsdp2 as bridge

    return (bridge, *(getattr(bridge, name) for name in _BRIDGE_NAMES))


def knows_fsdp2(namespace: dict[str, Any]) -> bool:
    """Whether a module's globals bind FSDP2's names and none of the bridge's."""
    values = [v for v in namespace.values() if not isinstance(v, (str, int, float))]
    fsdp2, bridge = _fsdp2_objects(), _bridge_objects()
    if any(v is b for v in values for b in bridge):
        return False
    return any(v is f for v in values for f in fsdp2)


def fsdp2_aware_caller(depth: int = 1) -> bool:
    """Whether the code calling the bridged model's method knows FSDP2 (module docstring).

    Args:
        depth: Frames to skip from the caller of this function.
    """
    frame: types.FrameType | None = sys._getframe(depth + 1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_PASS_THROUGH):
        frame = frame.f_back
    if frame is None:
        return False
    name = frame.f_globals.get("__name__", "")
    return name.startswith(_TORCH_DISTRIBUTED) or knows_fsdp2(frame.f_globals)


__all__ = ["fsdp2_aware_caller", "knows_fsdp2"]
