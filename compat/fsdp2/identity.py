"""Who asks a bridged model for its state dict: FSDP1 code, or code that knows FSDP2.

A bridged model is an FSDP2 model (an ``FSDPModule`` with DTensor parameters) that
also answers FSDP1's methods. Where the two APIs give one call two meanings,
``model.state_dict()`` (FSDP1: a full state dict by default; FSDP2: each rank's
DTensor shards) and ``model.load_state_dict()``, it answers as the caller's code means
it (:func:`fsdp2_aware_caller`):

- FSDP2's answer for torch's own distributed code (``get_model_state_dict`` and the rest
  of ``torch.distributed.checkpoint``), and for code written for both generations: a
  module that binds FSDP1's class and knows FSDP2, binding torch's ``FSDPModule`` or
  ``fully_shard`` itself or through a helper it imports (an ``fsdp_version(model)``
  function), and none of the bridge's names (``fully_shard_like_fsdp1``,
  ``fully_shard_by_policy``, ``FSDP1Api``). Such code tells the two apart and takes
  its FSDP2 branch for an ``FSDPModule``, where it expects shards;
- FSDP1's answer (the type set by ``FSDP1Api.state_dict_type``, full by default)
  everywhere else: the bridged program, the files the rewrite converted with it (their
  FSDP1 checks became ``FSDPModule`` ones, their FSDP1 class gone, and they count on
  FSDP1's answers), code that knows neither, and code that knows FSDP2 only (a full
  state dict holds every value; its shards are one ``get_model_state_dict`` away).

The caller is the first frame outside the bridge and outside ``torch.nn``'s module
machinery, so a parent module's ``state_dict()`` (which calls each child's with a
prefix) answers as its own caller's code means it, as FSDP1's state-dict hooks do.
"""

from __future__ import annotations

import sys
import types
from typing import Any

#: Frames that are not the caller: the bridge itself, and nn.Module's recursion.
_PASS_THROUGH = ("compat.fsdp2", "torch.nn.modules")
#: torch's own code that reads a module's FSDP2 state dict.
_TORCH_DISTRIBUTED = "torch.distributed"
_BRIDGE_NAMES = ("fully_shard_like_fsdp1", "fully_shard_by_policy", "FSDP1Api")


def _fsdp2_objects() -> tuple[Any, ...]:
    from torch.distributed.fsdp import FSDPModule, fully_shard

    return (FSDPModule, fully_shard)


def _bridge_objects() -> tuple[Any, ...]:
    import compat.fsdp2 as bridge

    return (bridge, *(getattr(bridge, name) for name in _BRIDGE_NAMES))


def _binds(namespace: dict[str, Any], objects: tuple[Any, ...]) -> bool:
    return any(value is wanted for value in namespace.values() for wanted in objects)


def _helpers(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """The globals of the modules (not torch's) whose functions, classes or selves it binds."""
    seen: dict[str, dict[str, Any]] = {}
    for value in namespace.values():
        if isinstance(value, types.ModuleType):
            name = value.__name__
        elif isinstance(value, (types.FunctionType, type)):
            name = getattr(value, "__module__", None) or ""
        else:
            continue
        module = sys.modules.get(name)
        if module is not None and not name.startswith(("torch", "builtins", "typing")):
            seen.setdefault(name, vars(module))
    return list(seen.values())


def knows_both(namespace: dict[str, Any]) -> bool:
    """Whether a module's globals are code for both generations (see the module)."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    if _binds(namespace, _bridge_objects()) or not _binds(namespace, (FullyShardedDataParallel,)):
        return False
    fsdp2 = _fsdp2_objects()
    return _binds(namespace, fsdp2) or any(_binds(other, fsdp2) for other in _helpers(namespace))


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
    return name.startswith(_TORCH_DISTRIBUTED) or knows_both(frame.f_globals)


__all__ = ["fsdp2_aware_caller", "knows_both"]
