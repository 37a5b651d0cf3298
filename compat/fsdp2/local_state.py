"""FSDP1's ``LOCAL_STATE_DICT`` on a bridged model: each unit's flat parameter, sharded.

FSDP1 flattens the parameters of each unit into one ``FlatParameter`` and keeps a chunk
of it on each rank; its local state dict holds that chunk as a ``ShardedTensor`` under
``<unit>._flat_param``, and ``load_state_dict`` takes the same back. FSDP2 keeps no flat
parameters, so the bridge writes FSDP1's layout from the whole parameters and reads it
back into each parameter's ``DTensor`` rows. The layout is FSDP1's:

- a unit's parameters are those of its modules that no inner unit holds, in
  ``named_modules()`` order, each module's own in order, a shared one once;
- with ``use_orig_params=True`` each starts at a 16-byte boundary of the unit's
  compute dtype and the whole is padded to a multiple of the world size, and the state
  dict also holds each parameter's part of this rank's chunk, flattened, under its name;
- rank ``r`` holds elements ``[r * c, (r + 1) * c)`` of the ``N`` (``c = ceil(N / world)``),
  the part short of ``N`` as a ``ShardedTensor`` of global size ``N`` at offset ``r * c``.

Buffers and extra states (``get_extra_state()``) are in the state dict whole, as in
FSDP1's. Unlike FSDP1's, the tensors are copies, not views of the parameters: values
written into them in place (``torch.distributed.checkpoint.load``) reach the model
through ``load_state_dict``, as torch's recipes do it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn

from compat.checkpointing import clean_name

#: FSDP1's key for a unit's flat parameter.
FLAT_PARAM = "_flat_param"
#: The value FSDP1 fills its alignment padding with.
PADDING = 42.0


@dataclasses.dataclass(frozen=True)
class Piece:
    """One stretch of a unit's flat parameter: a parameter's elements, or padding."""

    name: str | None  # the parameter's name in the model; None for padding
    start: int
    numel: int


def _units(model: nn.Module) -> list[tuple[str, nn.Module]]:
    from torch.distributed.fsdp import FSDPModule

    return [(clean_name(n), m) for n, m in model.named_modules() if isinstance(m, FSDPModule)]


def _layout(
    model: nn.Module, prefix: str, unit: nn.Module, aligned: torch.dtype | None
) -> list[Piece]:
    """FSDP1's flat parameter of ``unit``: its pieces in order (see the module)."""
    from torch.distributed.fsdp import FSDPModule

    inner = {id(m) for _, m in _units(unit) if m is not unit}
    skipped: set[int] = set()
    for module in unit.modules():
        if id(module) in inner:
            skipped |= {id(m) for m in module.modules()}
    seen: set[int] = set()
    pieces: list[Piece] = []
    total = 0
    step = 16 // torch.empty((), dtype=aligned).element_size() if aligned else 0
    for name, module in unit.named_modules(remove_duplicate=False):
        if id(module) in skipped or (module is not unit and isinstance(module, FSDPModule)):
            continue
        for param_name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            pad = step - total % step if step else 0
            if 0 < pad < step:
                pieces.append(Piece(None, total, pad))
                total += pad
            full = f"{prefix}{name}.{param_name}" if name else f"{prefix}{param_name}"
            pieces.append(Piece(clean_name(full), total, param.numel()))
            total += param.numel()
    return pieces


def _group(unit: nn.Module) -> Any:
    """FSDP1's group for ``unit``: the shard dimension of its parameters' mesh."""
    from torch.distributed.tensor import DTensor

    for param in unit.parameters():
        if isinstance(param, DTensor):
            mesh = param.device_mesh
            return mesh.get_group(mesh.ndim - 1)
    return None


def _full(param: Any) -> torch.Tensor:
    return param.full_tensor() if hasattr(param, "full_tensor") else param.detach()


def _not_parameters(model: nn.Module, params: dict[str, Any]) -> dict[str, Any]:
    """What else the model's own state dict holds: buffers, ``get_extra_state()``'s."""
    own = nn.Module.state_dict(model)
    return {clean_name(k): v for k, v in own.items() if clean_name(k) not in params}


def local_state_dict(model: nn.Module, aligned: torch.dtype | None) -> dict[str, Any]:
    """FSDP1's local state dict of the bridged ``model`` (see the module)."""
    from torch.distributed._shard.sharded_tensor import Shard, init_from_local_shards

    params = {clean_name(n): p for n, p in model.named_parameters()}
    state = _not_parameters(model, params)
    for unit_name, unit in _units(model):
        prefix = f"{unit_name}." if unit_name else ""
        pieces = _layout(model, prefix, unit, aligned)
        group = _group(unit)
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        parts = []
        for piece in pieces:
            if piece.name is None:
                parts.append(torch.full((piece.numel,), PADDING))
            else:
                parts.append(_full(params[piece.name]).detach().reshape(-1).cpu())
        flat = torch.cat(parts) if parts else torch.zeros(0)
        if aligned is not None and flat.numel() % world:
            flat = torch.cat([flat, flat.new_full((world - flat.numel() % world,), PADDING)])
        chunk = -(-flat.numel() // world)
        start, end = min(rank * chunk, flat.numel()), min((rank + 1) * chunk, flat.numel())
        device = next(unit.parameters()).device
        mine = flat[start:end].to(device)
        shards = [Shard.from_tensor_and_offsets(mine, [rank * chunk], rank)] if end > start else []
        if aligned is not None:  # each parameter's part of this rank's chunk, as FSDP1's views
            for piece in pieces:
                if piece.name is not None:
                    low, high = max(piece.start, start), min(piece.start + piece.numel, end)
                    state[piece.name] = flat[low : max(low, high)].to(device)
        state[f"{prefix}{FLAT_PARAM}"] = init_from_local_shards(
            shards, flat.numel(), process_group=group
        )
    return state


def load_local_state_dict(
    model: nn.Module, state_dict: dict[str, Any], aligned: torch.dtype | None
) -> None:
    """Load FSDP1's local state dict into the bridged ``model``'s ``DTensor`` rows.

    Raises:
        ValueError: Where a unit's flat parameter is not of the size FSDP1 would give
            this model (another model, or another ``use_orig_params``).
    """
    from torch.distributed.tensor import distribute_tensor

    params = {clean_name(n): p for n, p in model.named_parameters()}
    with torch.no_grad():
        for unit_name, unit in _units(model):
            prefix = f"{unit_name}." if unit_name else ""
            pieces = _layout(model, prefix, unit, aligned)
            group = _group(unit)
            world = dist.get_world_size(group)
            saved = state_dict[f"{prefix}{FLAT_PARAM}"]
            numel = pieces[-1].start + pieces[-1].numel if pieces else 0
            if aligned is not None and numel % world:
                numel += world - numel % world
            if saved.size(0) != numel:
                raise ValueError(
                    f"{prefix}{FLAT_PARAM} holds {saved.size(0)} elements, FSDP1 would give "
                    f"{numel} for this model: load it as it was saved (same model and "
                    "use_orig_params)"
                )
            chunk = -(-numel // world)
            shards = saved.local_shards()
            mine = shards[0].tensor.reshape(-1) if shards else torch.zeros(0)
            device = next(unit.parameters()).device
            padded = torch.zeros(chunk, dtype=mine.dtype, device=device)
            padded[: mine.numel()] = mine.to(device)
            gathered = [torch.empty_like(padded) for _ in range(world)]
            dist.all_gather(gathered, padded, group=group)
            flat = torch.cat(gathered)[:numel]
            for piece in pieces:
                if piece.name is None:
                    continue
                param = params[piece.name]
                value = flat[piece.start : piece.start + piece.numel].view(param.shape)
                if hasattr(param, "device_mesh"):
                    rows = distribute_tensor(
                        value.to(param.dtype),
                        param.device_mesh,
                        param.placements,
                        src_data_rank=None,
                    )
                    param.to_local().copy_(rows.to_local())
                else:
                    param.copy_(value)
    rest = _not_parameters(model, params)
    given = {k: v for k, v in state_dict.items() if k in rest}
    nn.Module.load_state_dict(model, given, strict=False)
