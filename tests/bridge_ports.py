"""Builders for the port checker: FSDP1 scripts and the same scripts on the bridge.

Each pair differs only in the wrapper (``FullyShardedDataParallel`` or
``compat.fsdp2.fully_shard_like_fsdp1``); the models, batches and optimizers are
``tests/portcheck_ports.py``'s.
"""

from __future__ import annotations

from typing import Any, Callable

import torch.nn as nn

from compat.portcheck import rank_device
from tests.portcheck_ports import Block, Net, _adamw, _bf16_fsdp1, _grouped_adamw


def _wrapper(side: str) -> Callable[..., nn.Module]:
    if side == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel

        return FullyShardedDataParallel
    from compat.fsdp2 import fully_shard_like_fsdp1

    return fully_shard_like_fsdp1


def _nested(side: str, **kwargs: Any) -> tuple[nn.Module, Any]:
    """FSDP1's manual nesting: each layer wrapped by hand, then the root."""
    wrap = _wrapper(side)
    model = Net().to(rank_device())
    for index, layer in enumerate(model.layers):
        model.layers[index] = wrap(layer, device_id=rank_device(), **kwargs)
    model = wrap(model, device_id=rank_device(), **kwargs)
    return model, _adamw(model)


def every_module(module: nn.Module, recurse: bool, nonwrapped_numel: int) -> bool:
    """A policy that picks every module, the ``ModuleList`` container included."""
    return nonwrapped_numel >= 0


def lists_only(module: nn.Module, recurse: bool, nonwrapped_numel: int) -> bool:
    """A policy that picks the ``ModuleList`` alone: a container holding parameters."""
    return recurse or isinstance(module, nn.ModuleList)


def _policy(side: str, policy: Any, **kwargs: Any) -> tuple[nn.Module, Any]:
    model = _wrapper(side)(
        Net().to(rank_device()), auto_wrap_policy=policy, device_id=rank_device(), **kwargs
    )
    return model, _adamw(model)


def fsdp1_nested(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _nested("fsdp1")


def bridge_nested(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _nested("bridge")


def fsdp1_every_module(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _policy("fsdp1", every_module)


def bridge_every_module(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _policy("bridge", every_module)


def fsdp1_blocks(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return _policy("fsdp1", ModuleWrapPolicy({Block}))


def bridge_lists_only(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _policy("bridge", lists_only)


def fsdp1_bf16_nested(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """Manual nesting in bf16: only the root casts its inputs (FSDP1's rule)."""
    return _bf16_nested("fsdp1")


def bridge_bf16_nested(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _bf16_nested("bridge")


def _bf16_nested(side: str) -> tuple[nn.Module, Any]:
    wrap = _wrapper(side)
    model = Net(positions=True).to(rank_device())
    for index, layer in enumerate(model.layers):
        model.layers[index] = wrap(layer, mixed_precision=_bf16_fsdp1(), device_id=rank_device())
    model = wrap(model, mixed_precision=_bf16_fsdp1(), device_id=rank_device())
    return model, _adamw(model)


def bridge_bf16(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return _policy("bridge", ModuleWrapPolicy({Block}), mixed_precision=_bf16_fsdp1())


def bridge_grouped(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """FSDP1's per-module optimizer grouping kept, on the bridge (flat parameters gone)."""
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    model = _wrapper("bridge")(
        Net().to(rank_device()), auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=rank_device()
    )
    return model, _grouped_adamw(model)


def fsdp1_lists_only(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    return _policy("fsdp1", lists_only)
