"""FSDP1's sharded optimizer state, as rows of the bridged model's ``DTensor`` parameters.

FSDP1's sharded checkpoints hold each rank's dim-0 chunk of a tensor as a
``ShardedTensor`` (``load_sharded_optimizer_state_dict`` gives them so); FSDP2 holds the
same chunk as a ``DTensor``. :func:`rows_as_dtensors` turns one into the other, for
``FSDP1Api.optim_state_dict_to_load``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn


def rows_as_dtensors(model: nn.Module, optim_state_dict: dict[str, Any]) -> dict[str, Any]:
    """FSDP1's sharded optimizer state (``ShardedTensor`` rows) as the model's ``DTensor`` rows.

    ``load_sharded_optimizer_state_dict`` gives FSDP1's form, which FSDP1 loads; each
    rank's rows are the dim-0 chunk FSDP2 holds of the same parameter, so they become
    that parameter's ``DTensor`` as they are. A tensor it gives whole (one too small to
    shard) becomes this rank's rows of it. Anything else is kept.

    Raises:
        ValueError: If a rank's rows are not the ones the bridge holds (another world
            size or layout): the checkpoint must be loaded as a full one.
    """
    from torch.distributed._shard.sharded_tensor import ShardedTensor
    from torch.distributed.tensor import DTensor, distribute_tensor

    from compat.checkpointing import clean_name

    params = {clean_name(name): param for name, param in model.named_parameters()}

    def rows(name: str, value: Any) -> Any:
        param = params.get(name)
        if not isinstance(param, DTensor):
            return value
        if isinstance(value, torch.Tensor) and not isinstance(value, (ShardedTensor, DTensor)):
            if value.dim() and value.shape == param.shape:  # whole (a tensor too small to shard)
                return distribute_tensor(
                    value.to(param.device), param.device_mesh, param.placements, src_data_rank=None
                )
            return value
        if not isinstance(value, ShardedTensor):
            return value
        local = param.to_local()
        shards = value.local_shards()
        mine = shards[0].tensor if shards else local.new_empty((0, *local.shape[1:]))
        offset = shards[0].metadata.shard_offsets[0] if shards else None
        if tuple(mine.shape) != tuple(local.shape) or (
            offset is not None and offset != _row_offset(param)
        ):
            raise ValueError(
                f"FSDP1's sharded optimizer state of {name!r} holds rows {tuple(mine.shape)} "
                f"at {offset} on this rank, the bridge {tuple(local.shape)}: load it as a "
                "full optimizer state dict (FULL_STATE_DICT) instead"
            )
        return DTensor.from_local(
            mine.to(local.device, local.dtype),
            param.device_mesh,
            param.placements,
            shape=param.shape,
            stride=param.stride(),
            run_check=False,
        )

    state = {
        name: {key: rows(name, value) for key, value in values.items()}
        if isinstance(values, dict)
        else values
        for name, values in optim_state_dict.get("state", {}).items()
    }
    return {**optim_state_dict, "state": state}


def _row_offset(param: Any) -> int:
    """The first row of ``param`` (a dim-0 sharded ``DTensor``) this rank holds."""
    from torch.distributed.tensor import Shard

    offset, rows = 0, param.shape[0]
    for dim, placement in enumerate(param.placements):
        if isinstance(placement, Shard) and placement.dim == 0:
            size = param.device_mesh.size(dim)
            chunk = -(-rows // size)
            offset = min(param.device_mesh.get_local_rank(dim) * chunk, param.shape[0])
    return offset
