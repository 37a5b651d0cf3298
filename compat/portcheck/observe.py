"""One side of a port check, on every rank: build, look, train, gather to rank 0.

:func:`observe_side` runs in an initialised process group, on every rank with the same
arguments. Every decision that leads to a collective is agreed by all ranks first (an
error on one rank stops all of them at the same point), so a side that fails leaves
the ranks ready for the next side. Rank 0 gets the :class:`SideObservation`, the
others ``None``.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.nn as nn

from compat.portcheck import engines
from compat.portcheck.launch import rank_device
from compat.portcheck.spec import PortCase, default_loss, resolve


@dataclass
class SideObservation:
    """What rank 0 saw of one side (full tensors as float CPU copies).

    Attributes:
        label: ``before`` or ``after``.
        engine: ``FSDP1``, ``FSDP2`` or ``plain``.
        error: What stopped it (the first rank's message), if anything.
        phase: Where: ``build``, ``setup``, ``gather`` or ``step N``.
        units: Unit names in module order.
        settings: Each unit's sharding arguments (:func:`engines.unit_settings`).
        ties: Groups of names that are one parameter.
        meta: Names still on meta, on any rank.
        kinds: ``model.state_dict()`` keys and their tensor kinds.
        optimizer: Its groups (names, count, hyperparameters), how many of its
            parameters are not the model's (``foreign``), trainable names in no group.
        initial: The full state dict after setup.
        buffers: Every rank's buffers, in rank order.
        non_persistent: The names of the non-persistent buffers.
        inputs: Each unit's floating input dtypes at step 0 (rank 0).
        outputs: Each unit's first floating output at step 0 (rank 0).
        losses: Per step, each rank's loss (the mean of its micro-batches).
        grad_norms: Per step, the total gradient norm before the optimizer step.
        weights: Per step, the full state dict after the optimizer step.
        unread: What could not be read on this torch (FSDP's private state), and why.
    """

    label: str
    engine: str = engines.PLAIN
    error: str | None = None
    phase: str | None = None
    units: list[str] = field(default_factory=list)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    ties: list[list[str]] = field(default_factory=list)
    meta: list[str] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    optimizer: dict[str, Any] = field(default_factory=dict)
    initial: dict[str, torch.Tensor] = field(default_factory=dict)
    buffers: list[dict[str, torch.Tensor]] = field(default_factory=list)
    non_persistent: list[str] = field(default_factory=list)
    inputs: dict[str, list[str]] = field(default_factory=dict)
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)
    losses: list[list[float]] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    weights: list[dict[str, torch.Tensor]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


def _agree(error: str | None) -> str | None:
    """The first rank's error, on every rank (``None`` when all went well)."""
    errors: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(errors, error)
    for rank, found in enumerate(errors):
        if found is not None:
            return found if dist.get_world_size() == 1 else f"rank {rank}: {found}"
    return None


def _error() -> str:
    # The exception and the innermost frame of the user's code (not torch's, not ours):
    # enough to find it, short enough to read.
    error = sys.exc_info()[1]
    frames = traceback.extract_tb(error.__traceback__)
    skipped = (os.path.dirname(torch.__file__), os.path.dirname(__file__))
    mine = [f for f in frames if not f.filename.startswith(skipped)] or frames
    text = f"{type(error).__name__}: {error}".strip()
    if mine:
        frame = mine[-1]
        text += f" (at {os.path.basename(frame.filename)}:{frame.lineno}, in {frame.name})"
    return text


def _split(built: Any) -> tuple[nn.Module, Any]:
    if isinstance(built, nn.Module):
        return built, torch.optim.SGD(built.parameters(), lr=0.1)
    if isinstance(built, (tuple, list)) and len(built) == 2 and isinstance(built[0], nn.Module):
        model, optimizer = built
        if optimizer is None:
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        return model, optimizer
    raise TypeError(f"a builder returns (model, optimizer) or a model, got {type(built).__name__}")


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def _floating(value: Any) -> list[torch.Tensor]:
    return [v for v in _leaves(value) if isinstance(v, torch.Tensor) and v.is_floating_point()]


def to_device(value: Any, device: torch.device) -> Any:
    """``value`` with every tensor in it (tuples, lists, dicts) moved to ``device``."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


class _UnitProbe:
    """Forward hooks on each unit: its inputs' dtypes and its output, once, while on."""

    def __init__(self, units: list[tuple[str, nn.Module]]) -> None:
        self.on = False
        self.inputs: dict[str, list[str]] = {}
        self.outputs: dict[str, torch.Tensor] = {}
        self.handles = []
        for name, module in units:
            self.handles.append(module.register_forward_pre_hook(self._pre(name), with_kwargs=True))
            self.handles.append(module.register_forward_hook(self._post(name)))

    def _pre(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, kwargs: Any) -> None:
            if self.on and name not in self.inputs:
                found = _floating((args, kwargs))
                self.inputs[name] = [str(t.dtype).replace("torch.", "") for t in found]

        return hook

    def _post(self, name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            found = _floating(output) if self.on and name not in self.outputs else []
            if found:
                tensor = found[0]
                tensor = tensor.to_local() if hasattr(tensor, "to_local") else tensor
                self.outputs[name] = tensor.detach().float().cpu().clone()

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def observe_side(
    label: str, builder: Any, case: PortCase, rank: int, world_size: int
) -> SideObservation | None:
    """Build one side, look at it, train it ``case.steps`` steps; rank 0 gets the result."""
    seen = SideObservation(label)
    torch.manual_seed(case.seed + (rank if case.distinct_seeds else 0))
    model = optimizer = error = None
    try:
        model, optimizer = _split(resolve(builder)(rank, world_size))
    except Exception:  # noqa: BLE001 - reported, on every rank
        error = _error()
    if _stopped(seen, _agree(error), "build"):
        return _mine(seen, rank)
    try:
        _setup(seen, model, optimizer)
    except Exception:  # noqa: BLE001
        error = _error()
    if _stopped(seen, _agree(error), "setup"):
        return _mine(seen, rank)
    meta: list[Any] = [None] * world_size
    dist.all_gather_object(meta, seen.meta)
    seen.meta = sorted({name for names in meta for name in names})
    if seen.meta:  # a forward would fail, and nothing on meta can be gathered
        return _mine(seen, rank)
    try:
        _gather_start(seen, model, rank, world_size)
    except Exception:  # noqa: BLE001
        error = _error()
    if _stopped(seen, _agree(error), "gather"):
        return _mine(seen, rank)
    # Both sides draw the same random numbers in training (dropout), whatever their
    # builders drew.
    torch.manual_seed(case.seed + 1 + rank)
    _train(seen, model, optimizer, case, rank, world_size)
    return _mine(seen, rank)


def _stopped(seen: SideObservation, error: str | None, phase: str) -> bool:
    if error is not None:
        seen.error, seen.phase = error, phase
    return error is not None


def _mine(seen: SideObservation, rank: int) -> SideObservation | None:
    return seen if rank == 0 else None


def _setup(seen: SideObservation, model: nn.Module, optimizer: Any) -> None:
    engine = seen.engine = engines.engine_of(model)
    seen.units = [name for name, _ in engines.units(model, engine)]
    # These read FSDP's private state, which a torch release may change: without them
    # the check goes on, one comparison short, and says so.
    seen.settings = _private(seen, "the units' arguments", {}, engines.unit_settings, model, engine)
    seen.ties = _private(seen, "tied weights", [], engines.tie_groups, model, engine)
    seen.meta = engines.meta_names(model)
    seen.optimizer = _optimizer(model, optimizer, engine)


def _private(
    seen: SideObservation, what: str, empty: Any, read: Callable[..., Any], *args: Any
) -> Any:
    try:
        return read(*args)
    except (AttributeError, ImportError, TypeError) as error:
        seen.unread.append(f"{what} ({type(error).__name__}: {error})")
        return empty


def _optimizer(model: nn.Module, optimizer: Any, engine: str) -> dict[str, Any]:
    names = engines.parameter_names(model, engine)
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    groups, foreign, used = [], 0, set()
    for group in optimizer.param_groups:
        held: list[str] = []
        for param in group["params"]:
            if id(param) in names:
                held.extend(names[id(param)])
                used.add(id(param))
            else:
                foreign += 1
        hyper = {k: repr(v) for k, v in sorted(group.items()) if k != "params"}
        groups.append({"count": len(group["params"]), "names": sorted(held), "hyper": hyper})
    missing = sorted(
        n for pid, ns in names.items() if pid in trainable and pid not in used for n in ns
    )
    total = sum(len(g["params"]) for g in optimizer.param_groups)
    return {
        "type": type(optimizer).__name__,
        "groups": groups,
        "foreign": foreign,
        "total": total,
        "missing": missing,
    }


def _gather_start(seen: SideObservation, model: nn.Module, rank: int, world_size: int) -> None:
    seen.kinds = engines.state_dict_kinds(model)
    seen.initial = engines.full_state(model, seen.engine)
    local, seen.non_persistent = engines.buffers(model)
    every: list[Any] = [None] * world_size
    dist.all_gather_object(every, local)
    seen.buffers = every if rank == 0 else []
    if rank != 0:
        seen.initial = {}


@dataclass
class _Training:
    """What one side's steps need, set once."""

    model: nn.Module
    optimizer: Any
    case: PortCase
    rank: int
    engine: str
    probe: _UnitProbe

    def step(self, step: int) -> tuple[float, float]:
        """One optimizer step of ``accumulate`` micro-batches: the mean loss, the norm."""
        case, model = self.case, self.model
        batch_fn = resolve(case.batch)
        loss_fn = resolve(case.loss) if case.loss is not None else default_loss
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for micro in range(case.accumulate):
            batch = to_device(batch_fn(step * case.accumulate + micro, self.rank), rank_device())
            last = micro == case.accumulate - 1
            with engines.gradient_sync(model, self.engine, sync=last):
                self.probe.on = step == 0 and micro == 0
                try:
                    loss = loss_fn(model, batch)
                finally:
                    self.probe.on = False
                (loss / case.accumulate).backward()
            total += float(loss.detach())
        norm = engines.grad_norm(model, self.engine, case.max_norm)
        self.optimizer.step()
        return total / case.accumulate, norm


def _train(
    seen: SideObservation,
    model: nn.Module,
    optimizer: Any,
    case: PortCase,
    rank: int,
    world_size: int,
) -> None:
    probe = _UnitProbe(engines.units(model, seen.engine))
    training = _Training(model, optimizer, case, rank, seen.engine, probe)
    try:
        for step in range(case.steps):
            loss_value = norm = error = None
            try:
                loss_value, norm = training.step(step)
            except Exception:  # noqa: BLE001
                error = _error()
            if _stopped(seen, _agree(error), f"step {step}"):
                return
            losses: list[Any] = [None] * world_size
            dist.all_gather_object(losses, loss_value)
            weights = engines.full_state(model, seen.engine)
            if rank == 0:
                seen.losses.append(losses)
                seen.grad_norms.append(norm)
                seen.weights.append(weights)
    finally:
        probe.remove()
        seen.inputs, seen.outputs = probe.inputs, probe.outputs


__all__ = ["SideObservation", "observe_side", "to_device"]
