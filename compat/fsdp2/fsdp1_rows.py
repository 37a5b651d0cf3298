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


def full_state_as_rows(
    model: nn.Module, optim: torch.optim.Optimizer | None, full: dict[str, Any]
) -> dict[str, Any]:
    """A full optimizer state dict keyed by name, as ``optim.load_state_dict`` takes it here.

    FSDP1's legacy ``shard_full_optim_state_dict`` and ``scatter_full_optim_state_dict``
    hand back a state dict for ``optim.load_state_dict``: keyed by the position of each
    parameter in ``optim``'s groups (in ``model.parameters()`` without ``optim``), with
    this rank's part of every tensor. On a bridged model that part is the parameter's
    ``DTensor`` rows; a tensor not of the parameter's shape (Adam's ``step``) stays whole.

    Raises:
        ValueError: Where the state is keyed by position rather than by name, or its
            groups do not hold the optimizer's parameters.
    """
    from torch.distributed.tensor import DTensor, distribute_tensor

    from compat.checkpointing import clean_name

    names = {id(param): clean_name(name) for name, param in model.named_parameters()}
    groups = [list(g["params"]) for g in optim.param_groups] if optim is not None else None
    if groups is None:
        groups = [list(model.parameters())]
    order = [param for group in groups for param in group]
    where = {names.get(id(param)): (index, param) for index, param in enumerate(order)}
    if any(not isinstance(key, str) for key in full.get("state", {})):
        raise ValueError(
            "the full optimizer state is keyed by parameter ids: key it by name first "
            "(FSDP.rekey_optim_state_dict(state, OptimStateKeyType.PARAM_NAME, model))"
        )

    def part(param: Any, value: Any) -> Any:
        if not isinstance(param, DTensor) or not isinstance(value, torch.Tensor):
            return value
        if not value.dim() or value.shape != param.shape:
            return value
        mesh, placements = param.device_mesh, param.placements
        return distribute_tensor(value.to(param.device), mesh, placements, src_data_rank=None)

    state = {}
    for name, values in full.get("state", {}).items():
        if name not in where:
            raise ValueError(f"the full optimizer state holds {name!r}, which optim does not")
        index, param = where[name]
        state[index] = {key: part(param, value) for key, value in values.items()}
    saved = full.get("param_groups", [])
    if len(saved) != len(groups):
        raise ValueError(
            f"the full optimizer state has {len(saved)} parameter groups, optim {len(groups)}"
        )
    param_groups = []
    for group, kept in zip(saved, groups):
        indices = sorted(where[name][0] for name in group["params"] if name in where)
        if len(indices) != len(kept):
            raise ValueError("the full optimizer state's groups do not hold optim's parameters")
        param_groups.append({**group, "params": indices})
    return {"state": state, "param_groups": param_groups}
