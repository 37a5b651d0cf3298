"""What FSDP1 does to a unit's tensors before it shards them, done before ``fully_shard``.

For each unit, in its wrapping order, FSDP1 (``_init_param_handle_from_module``):

1. materialises it if it holds meta tensors (:func:`materialize`): calls
   ``param_init_fn`` on each module of the unit, breadth-first, not entering
   already-wrapped units or the ignored modules it sees; without ``param_init_fn``, on
   each such module holding tensors of its own, ``to_empty(recurse=False)`` on the
   device and then ``reset_parameters()`` (which must exist);
2. moves its CPU parameters and buffers to ``device_id``, when given
   (:func:`move_to_device`);
3. with ``sync_module_states=True``, broadcasts its parameters and every buffer not yet
   broadcast, non-persistent ones included, from rank 0 of its group (hybrid: over the
   inter-node group, then the intra-node group) (:func:`broadcast_from_rank0`).

FSDP2's ``fully_shard`` does none of these: it shards whatever each rank holds, and
keeps meta tensors on meta. Without ``sync_module_states`` both FSDPs trust the ranks
to hold the same values, but they keep different parts of differing tensors (FSDP1 a
slice of its flattened unit, FSDP2 rows of each parameter), so the bridge checks the
ranks agree and warns where they do not (:func:`check_same_on_ranks`).
"""

from __future__ import annotations

import collections
import itertools
import warnings
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.nn as nn


def managed_params(
    module: nn.Module, ignored_params: set[nn.Parameter], earlier: set[nn.Module]
) -> list[nn.Parameter]:
    """The parameters a unit shards: not ignored, not in a unit sharded before it.

    Args:
        module: The unit.
        ignored_params: Every ignored parameter.
        earlier: The units before it in FSDP1's order (sharded or about to be).
    """
    inner = {id(p) for sub in module.modules() if sub in earlier for p in sub.parameters()}
    return [p for p in module.parameters() if p not in ignored_params and id(p) not in inner]


def check_single_device(
    module: nn.Module, params: list[nn.Parameter], device_id: Any, device: torch.device
) -> None:
    """FSDP1's device checks of a unit's parameters.

    Raises:
        RuntimeError: Parameters on CPU and another device without ``device_id``, or on
            two non-CPU devices (FSDP1's errors).
        ValueError: Parameters on an accelerator other than ``device_id``'s device.
    """
    devices = {p.device for p in params}
    cpu = torch.device("cpu")
    if len(devices) == 2 and cpu in devices:
        if device_id is None:
            raise RuntimeError(
                "To support a module with both CPU and GPU params, please pass in device_id "
                f"argument (FSDP1's rule); parameters are on {sorted(map(str, devices))}"
            )
    elif len(devices) > 1:
        raise RuntimeError(f"FSDP only supports single device modules but got params on {devices}")
    placed = next((p.device for p in params if p.device.type not in ("cpu", "meta")), None)
    if device_id is not None and placed is not None and placed != device:
        raise ValueError(
            f"Inconsistent compute device and device_id: {placed} vs {device} (FSDP1's rule)"
        )


def needs_materializing(
    module: nn.Module,
    params: list[nn.Parameter],
    ignored_modules: frozenset[nn.Module],
    skip: set[nn.Module] | None = None,
) -> bool:
    """Whether FSDP1 materialises the unit: a managed parameter or a buffer is on meta.

    Args:
        module: The unit.
        params: Its managed parameters.
        ignored_modules: The ignored modules it sees (their buffers do not count).
        skip: Units whose buffers do not count either. FSDP1 counts them all, at a time
            when the earlier units are materialised already; a plan made before that
            passes the earlier units here.
    """
    if any(p.is_meta for p in params):
        return True
    skipped = {inner for unit in skip or () for inner in unit.modules()}
    return any(
        buffer.is_meta
        for sub in module.modules()
        if sub not in ignored_modules and sub not in skipped
        for buffer in sub.buffers(recurse=False)
    )


def modules_to_materialize(
    module: nn.Module, ignored_modules: frozenset[nn.Module], earlier: set[nn.Module]
) -> list[nn.Module]:
    """The unit's modules breadth-first, not entering earlier units or ignored modules."""
    ordered: list[nn.Module] = []
    queue = collections.deque([module])
    seen = {module}
    while queue:
        current = queue.popleft()
        ordered.append(current)
        for child in current.children():
            if child not in seen and child not in earlier and child not in ignored_modules:
                seen.add(child)
                queue.append(child)
    return ordered


def _owns_tensors(module: nn.Module) -> bool:
    return next(itertools.chain(module.parameters(False), module.buffers(False)), None) is not None


def check_materializable(
    name: str,
    module: nn.Module,
    ignored_modules: frozenset[nn.Module],
    earlier: set[nn.Module],
    param_init_fn: Any,
) -> None:
    """Raise now what :func:`materialize` would raise for this unit (before any sharding).

    Raises:
        ValueError: ``param_init_fn`` is not callable (FSDP1's rule).
        AttributeError: Without ``param_init_fn``, a module holding tensors of its own
            has no ``reset_parameters()`` (FSDP1 raises there too).
    """
    if param_init_fn is not None:
        if not callable(param_init_fn):
            raise ValueError(f"param_init_fn={param_init_fn!r} is not callable (FSDP1's rule)")
        return
    for sub in modules_to_materialize(module, ignored_modules, earlier):
        if _owns_tensors(sub) and not callable(getattr(sub, "reset_parameters", None)):
            raise AttributeError(
                f"param_init_fn=None: unit {name or '(the root)'!r} holds meta tensors and its "
                f"module {type(sub).__name__} has tensors of its own but no reset_parameters(), "
                "which FSDP1 calls after to_empty() (and fails the same way). Give the class a "
                "reset_parameters(), or pass param_init_fn"
            )


def materialize(
    name: str,
    module: nn.Module,
    ignored_modules: frozenset[nn.Module],
    earlier: set[nn.Module],
    param_init_fn: Callable[[nn.Module], Any] | None,
    device: torch.device,
) -> None:
    """Materialise one unit as FSDP1 does (the caller checked it needs it).

    Raises:
        ValueError, AttributeError: As :func:`check_materializable`.
    """
    check_materializable(name, module, ignored_modules, earlier, param_init_fn)
    modules = modules_to_materialize(module, ignored_modules, earlier)
    if param_init_fn is not None:
        for sub in modules:
            param_init_fn(sub)
        return
    with torch.no_grad():
        for sub in modules:
            if _owns_tensors(sub):
                sub.to_empty(device=device, recurse=False)
                sub.reset_parameters()


def move_to_device(
    module: nn.Module,
    ignored_params: set[nn.Parameter],
    ignored_buffers: set[int],
    earlier: set[nn.Module],
    device: torch.device,
) -> None:
    """Move the unit's CPU tensors to ``device`` as FSDP1 does with ``device_id``.

    Breadth-first, not entering earlier units (ignored modules included: FSDP1 moves
    their buffers too, unless the unit sees them as ignored, and never their parameters).
    """
    cpu = torch.device("cpu")
    queue = collections.deque([module])
    tensors: list[torch.Tensor] = []
    while queue:
        current = queue.popleft()
        tensors.extend(
            p
            for p in current.parameters(recurse=False)
            if p.device == cpu and p not in ignored_params
        )
        tensors.extend(
            b
            for b in current.buffers(recurse=False)
            if b.device == cpu and id(b) not in ignored_buffers
        )
        queue.extend(child for child in current.children() if child not in earlier)
    if device == cpu:
        return
    with torch.no_grad():
        for tensor in tensors:
            tensor.data = tensor.to(device)
            if tensor.grad is not None:
                tensor.grad.data = tensor.grad.to(device)


def broadcast_from_rank0(
    module: nn.Module,
    params: list[nn.Parameter],
    groups: tuple[Any, ...],
    synced: set[int],
    device: torch.device,
) -> None:
    """FSDP1's ``sync_module_states`` for one unit: rank 0's values everywhere.

    Broadcasts ``params`` and every buffer of ``module`` not broadcast for an earlier
    unit, over each group in turn from its group rank 0 (``None``: the default group).

    Raises:
        ValueError: A tensor still on meta, or a CPU tensor for an accelerator group.
    """
    buffers = [b for b in module.buffers() if id(b) not in synced]
    synced.update(id(b) for b in buffers)
    tensors = [t.detach() for t in itertools.chain(buffers, params)]
    for tensor in tensors:
        if tensor.is_meta:
            raise ValueError(
                "sync_module_states=True: a tensor is still on meta after materialisation; "
                "pass param_init_fn or build the module on a real device"
            )
        if device.type != "cpu" and tensor.device.type == "cpu":
            raise ValueError(
                "sync_module_states=True: the module has CPU tensors while it computes on "
                f"{device}; pass device_id={device} or move the module first (FSDP1's rule)"
            )
    for group in groups:
        source = 0 if group is None else dist.get_global_rank(group, 0)
        for tensor in tensors:
            dist.broadcast(tensor, src=source, group=group)


_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_CHUNK = 1 << 24


def _fingerprint(params: list[nn.Parameter], device: torch.device) -> torch.Tensor:
    """Two integer sums of each parameter's bits: exact, whatever the reduction order."""
    rows = []
    for p in params:
        if p.is_meta:
            rows.append(torch.zeros(2, dtype=torch.int64, device=device))
            continue
        flat = p.detach().contiguous().reshape(-1)
        if flat.is_floating_point() or flat.is_complex():
            flat = flat.view(_INT_OF_SIZE[flat.element_size()])
        total = torch.zeros(2, dtype=torch.int64, device=flat.device)
        for start in range(0, flat.numel(), _CHUNK):
            chunk = flat[start : start + _CHUNK].to(torch.int64)
            weights = torch.arange(start, start + chunk.numel(), device=chunk.device) % 1021 + 1
            total += torch.stack([chunk.sum(), (chunk * weights).sum()])
        rows.append(total.to(device))
    return torch.stack(rows) if rows else torch.zeros(0, 2, dtype=torch.int64, device=device)


class RankMismatchWarning(UserWarning):
    """The ranks start from different values, so FSDP1 and FSDP2 would build different models."""


def check_same_on_ranks(
    root: nn.Module,
    params: list[nn.Parameter],
    group: Any,
    device: torch.device,
    stacklevel: int = 3,
) -> bool:
    """Warn unless every rank of ``group`` holds the same values in ``params``.

    FSDP1 keeps rank r's slice of each unit's flattened parameters, FSDP2 rank r's rows
    of each parameter: where the ranks start from different values the two models
    differ. It warns rather than raises: a program that loads its weights after
    sharding (a checkpoint, ``set_model_state_dict``) is not affected, and FSDP1 itself
    accepts such ranks. Two collectives of two integers a parameter.

    Returns:
        Whether the ranks agree.
    """
    if group is None or dist.get_world_size(group) == 1:
        return True
    highest = _fingerprint(params, device)
    lowest = highest.clone()
    dist.all_reduce(highest, op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(lowest, op=dist.ReduceOp.MIN, group=group)
    differ = (highest != lowest).any(dim=1).nonzero().flatten().tolist()
    if not differ:
        return True
    names = {id(p): n for n, p in root.named_parameters()}
    first = names.get(id(params[differ[0]]), "?")
    warnings.warn(
        f"sync_module_states=False, but the ranks hold different values in {first!r} (and "
        f"{len(differ) - 1} more parameters): FSDP1 would keep each rank's slice of its own "
        "flattened values, FSDP2 keeps each rank's rows of each parameter, so the sharded "
        "model differs from FSDP1's. Harmless if you load weights after sharding; otherwise "
        "pass sync_module_states=True (rank 0's values everywhere), or seed every rank alike "
        "before building the model",
        RankMismatchWarning,
        stacklevel=stacklevel,
    )
    return False


__all__ = [
    "RankMismatchWarning",
    "check_materializable",
    "broadcast_from_rank0",
    "check_same_on_ranks",
    "check_single_device",
    "managed_params",
    "materialize",
    "modules_to_materialize",
    "move_to_device",
    "needs_materializing",
]
