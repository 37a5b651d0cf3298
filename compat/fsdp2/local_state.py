"""FSDP1's ``LOCAL_STATE_DICT`` on a bridged model: each unit's flat parameter, sharded.

FSDP1 flattens the parameters of each unit into one ``FlatParameter`` and keeps a chunk
of it on each rank; its local state dict holds that chunk as a ``ShardedTensor`` under
``<unit>._flat_param``, and ``load_state_dict`` takes the same back. FSDP2 keeps no flat
parameters, so the bridge writes FSDP1's layout from the rows of each parameter that
each rank holds, and reads it back into them: each rank sends what it holds to the
ranks whose FSDP1 chunk it falls in (one all-to-all per unit), and no parameter is
gathered whole, as none is in FSDP1's. The layout is FSDP1's:

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
    """The model's FSDP2 units; NotImplementedError for a grouped one (a container's)."""
    from torch.distributed.fsdp import FSDPModule

    units = [(clean_name(n), m) for n, m in model.named_modules() if isinstance(m, FSDPModule)]
    states = [id(m._get_fsdp_state()) for _, m in units]
    if len(set(states)) != len(states):
        raise NotImplementedError(
            "LOCAL_STATE_DICT of a model whose auto_wrap_policy picked a container "
            "(one FSDP2 unit over several modules): FSDP1's flat layout of it is not "
            "written; use SHARDED_STATE_DICT"
        )
    return units


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


def _not_parameters(model: nn.Module, params: dict[str, Any]) -> dict[str, Any]:
    """What else the model's own state dict holds: buffers, ``get_extra_state()``'s."""
    own = nn.Module.state_dict(model)
    return {clean_name(k): v for k, v in own.items() if clean_name(k) not in params}


@dataclasses.dataclass(frozen=True)
class Segment:
    """Flat elements ``[low, high)`` of one parameter, where each FSDP lays them.

    FSDP2 rank ``holder`` holds them (-1: every rank, a plain tensor); FSDP1 rank
    ``owner`` keeps them in its chunk.
    """

    piece: Piece
    holder: int
    owner: int
    low: int
    high: int


def _rows(param: Any) -> int:
    """``param``'s rows (dim 0), the dimension FSDP2 shards; 1 for a scalar."""
    return param.shape[0] if param.dim() else 1


def _rows_held(param: Any, world: int) -> list[tuple[int, int]]:
    """Per rank of the shard group, the rows ``[first, end)`` of ``param`` FSDP2 keeps there."""
    rows = _rows(param)
    chunk = -(-rows // world)
    return [(min(r * chunk, rows), min((r + 1) * chunk, rows)) for r in range(world)]


def _segments(pieces: list[Piece], params: dict[str, Any], world: int, chunk: int) -> list[Segment]:
    """Every stretch of the unit's flat parameter, by who holds it and who keeps it.

    Each rank computes the same list, in flat order, so that what one sends another
    expects without being told. A parameter FSDP2 does not shard (a plain tensor) is
    held whole by every rank: each takes its part from its own copy (holder -1).
    """
    out: list[Segment] = []
    for piece in pieces:
        if piece.name is None:
            continue
        param = params[piece.name]
        sharded = hasattr(param, "device_mesh")
        per_row = _per_row(param, piece)
        held = _rows_held(param, world) if sharded else [(0, _rows(param))]
        for holder, (first, end) in enumerate(held):
            low, high = piece.start + first * per_row, piece.start + end * per_row
            while low < high:
                owner = low // chunk
                stop = min(high, (owner + 1) * chunk)
                out.append(Segment(piece, holder if sharded else -1, owner, low, stop))
                low = stop
    return out


def _exchange(
    send: list[torch.Tensor], receive_sizes: list[int], group: Any, like: torch.Tensor
) -> list[torch.Tensor]:
    """Each rank's ``send[r]`` to rank ``r``; what each rank sent here, by rank."""
    inputs = torch.cat(send) if send else like.new_empty(0)
    output = like.new_empty(sum(receive_sizes))
    dist.all_to_all_single(output, inputs, receive_sizes, [t.numel() for t in send], group=group)
    return list(output.split(receive_sizes))


def local_state_dict(model: nn.Module, aligned: torch.dtype | None) -> dict[str, Any]:
    """FSDP1's local state dict of the bridged ``model`` (see the module).

    No rank gathers a whole parameter: each sends the rows it holds to the ranks whose
    FSDP1 chunks they fall in (one all-to-all per unit).
    """
    from torch.distributed._shard.sharded_tensor import Shard, init_from_local_shards

    params = {clean_name(n): p for n, p in model.named_parameters()}
    state = _not_parameters(model, params)
    for unit_name, unit in _units(model):
        prefix = f"{unit_name}." if unit_name else ""
        pieces = _layout(model, prefix, unit, aligned)
        if not pieces:  # FSDP1's unit without parameters has no flat parameter
            continue
        group = _group(unit)
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        numel = _flat_numel(pieces, aligned, world)
        chunk = max(-(-numel // world), 1)
        start, end = min(rank * chunk, numel), min((rank + 1) * chunk, numel)
        device = next(unit.parameters()).device
        dtype = next(unit.parameters()).dtype
        mine = torch.full((end - start,), PADDING, dtype=dtype, device=device)
        segments = _segments(pieces, params, world, chunk)
        send: list[list[torch.Tensor]] = [[] for _ in range(world)]
        sizes = [0] * world
        for seg in segments:
            param = params[seg.piece.name]  # type: ignore[index]
            if seg.holder == rank and seg.owner != rank:
                send[seg.owner].append(_held(param, seg, rank, world).to(device, dtype))
            elif seg.owner == rank and seg.holder in (rank, -1):  # here already
                mine[seg.low - start : seg.high - start] = _held(param, seg, rank, world)
            elif seg.owner == rank:
                sizes[seg.holder] += seg.high - seg.low
        outgoing = [torch.cat(p) if p else mine.new_empty(0) for p in send]
        received = _exchange(outgoing, sizes, group, mine)
        cursor = [0] * world
        for seg in segments:
            if seg.owner != rank or seg.holder in (rank, -1):
                continue
            n = seg.high - seg.low
            got = received[seg.holder][cursor[seg.holder] : cursor[seg.holder] + n]
            cursor[seg.holder] += n
            mine[seg.low - start : seg.high - start] = got
        # The placement names the global rank (FSDP1 passes the group's, which fails under
        # HYBRID_SHARD: "Global rank 0 does not exist in input process group").
        owner = dist.get_global_rank(group, rank) if group is not None else rank
        shards = [Shard.from_tensor_and_offsets(mine, [rank * chunk], owner)] if end > start else []
        if aligned is not None:  # each parameter's part of this rank's chunk, as FSDP1's views
            for piece in pieces:
                if piece.name is not None:
                    low, high = max(piece.start, start), min(piece.start + piece.numel, end)
                    state[piece.name] = mine[low - start : max(low, high) - start].clone()
        state[f"{prefix}{FLAT_PARAM}"] = init_from_local_shards(shards, numel, process_group=group)
    return state


def _per_row(param: Any, piece: Piece) -> int:
    return piece.numel // max(_rows(param), 1)


def _held(param: Any, seg: Segment, rank: int, world: int) -> torch.Tensor:
    """The segment's elements in what this rank holds of ``param`` (a view: writable)."""
    if seg.holder == -1:
        flat, offset = param.detach().view(-1), seg.piece.start
    else:
        first = _rows_held(param, world)[rank][0]
        flat = param.to_local().detach().view(-1)
        offset = seg.piece.start + first * _per_row(param, seg.piece)
    return flat[seg.low - offset : seg.high - offset]


def _flat_numel(pieces: list[Piece], aligned: torch.dtype | None, world: int) -> int:
    """The size of FSDP1's flat parameter: its pieces, padded to the world with alignment."""
    numel = pieces[-1].start + pieces[-1].numel if pieces else 0
    if aligned is not None and numel % world:
        numel += world - numel % world
    return numel


def load_local_state_dict(
    model: nn.Module, state_dict: dict[str, Any], aligned: torch.dtype | None
) -> None:
    """Load FSDP1's local state dict into the bridged ``model``'s ``DTensor`` rows.

    No rank gathers a whole flat parameter: each sends the parts of its chunk to the
    ranks that hold those rows (one all-to-all per unit).

    Raises:
        ValueError: Where a unit's flat parameter is not of the size FSDP1 would give
            this model (another model, or another ``use_orig_params``).
    """
    params = {clean_name(n): p for n, p in model.named_parameters()}
    with torch.no_grad():
        for unit_name, unit in _units(model):
            prefix = f"{unit_name}." if unit_name else ""
            pieces = _layout(model, prefix, unit, aligned)
            if not pieces:
                continue
            group = _group(unit)
            rank, world = dist.get_rank(group), dist.get_world_size(group)
            saved = state_dict[f"{prefix}{FLAT_PARAM}"]
            numel = _flat_numel(pieces, aligned, world)
            if saved.size(0) != numel:
                raise ValueError(
                    f"{prefix}{FLAT_PARAM} holds {saved.size(0)} elements, FSDP1 would give "
                    f"{numel} for this model: load it as it was saved (same model and "
                    "use_orig_params)"
                )
            chunk = max(-(-numel // world), 1)
            start = min(rank * chunk, numel)
            shards = saved.local_shards()
            first_param = next(unit.parameters())
            device, dtype = first_param.device, first_param.dtype
            mine = (
                shards[0].tensor.reshape(-1).to(device, dtype)
                if shards
                else torch.zeros(0, dtype=dtype, device=device)
            )
            segments = _segments(pieces, params, world, chunk)
            send: list[list[torch.Tensor]] = [[] for _ in range(world)]
            sizes = [0] * world
            for seg in segments:
                if seg.holder == -1:
                    continue
                if seg.owner == rank and seg.holder != rank:
                    send[seg.holder].append(mine[seg.low - start : seg.high - start])
                elif seg.holder == rank and seg.owner != rank:
                    sizes[seg.owner] += seg.high - seg.low
            outgoing = [torch.cat(p) if p else mine.new_empty(0) for p in send]
            received = _exchange(outgoing, sizes, group, mine)
            cursor = [0] * world
            for seg in segments:
                if seg.holder != rank:  # another rank's rows, or a plain tensor (not FSDP1's)
                    continue
                if seg.owner == rank:
                    values = mine[seg.low - start : seg.high - start]
                else:
                    n = seg.high - seg.low
                    values = received[seg.owner][cursor[seg.owner] : cursor[seg.owner] + n]
                    cursor[seg.owner] += n
                _held(params[seg.piece.name], seg, rank, world).copy_(values)  # type: ignore[index]
    rest = _not_parameters(model, params)
    given = {k: v for k, v in state_dict.items() if k in rest}
    nn.Module.load_state_dict(model, given, strict=False)
