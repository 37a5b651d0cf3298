"""Two sides' observations in, a :class:`~compat.portcheck.report.PortReport` out.

Runs on rank 0 after both sides ran. Each ``_check_*`` function compares one thing and
appends its findings, naming the known cause where the evidence matches one
(:mod:`compat.portcheck.causes`).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

import torch

from compat.portcheck import engines
from compat.portcheck.observe import SideObservation
from compat.portcheck.report import Finding, PortReport, SideSummary, StepRow, UnitRow
from compat.portcheck.spec import PortCase

_LOW_PRECISION = {"bfloat16", "float16"}
#: Fields every fully_shard call of one model should share (FSDP2 unit settings).
_SHARED_ARGUMENTS = ("mesh", "param_dtype", "reduce_dtype", "output_dtype", "offload")
#: Words of an error that point at a known cause.
_ERROR_CAUSES = (
    ("shared with a parameter already managed", "tied-weights-split"),
    ("meta", "left-on-meta"),
)


class _Tolerance:
    def __init__(self, case: PortCase) -> None:
        self.atol, self.rtol = case.atol, case.rtol

    def number(self, a: float | None, b: float | None) -> bool:
        if a is None or b is None:
            return a is b
        return abs(a - b) <= self.atol + self.rtol * abs(b) or (a != a and b != b)

    def tensor(self, a: torch.Tensor, b: torch.Tensor) -> tuple[bool, float]:
        """Whether ``a`` and ``b`` agree, and their largest absolute difference."""
        if a.shape != b.shape:
            return False, float("inf")
        if a.numel() == 0:
            return True, 0.0
        gap = (a - b).abs()
        # NaN against a number is a difference; NaN against NaN, and equal infinities, are not.
        fine = (a == b) | (gap <= self.atol + self.rtol * b.abs()) | (a.isnan() & b.isnan())
        worst = (
            float(gap.nan_to_num(nan=float("inf"))[~fine].max())
            if not bool(fine.all())
            else float(gap.nan_to_num(nan=0.0).max())
        )
        return bool(fine.all()), worst


def compare(
    before: SideObservation, after: SideObservation, case: PortCase, world_size: int, backend: str
) -> PortReport:
    """The report for one case, from rank 0's observations of both sides."""
    report = PortReport(_summary(before), _summary(after), world_size, backend, case.steps)
    tolerance = _Tolerance(case)
    add = report.findings.append
    for side in (before, after):
        _check_error(side, add)
        _check_unread(side, add)
        _check_meta(side, add)
        _check_root_arguments(side, add)
        _check_optimizer_holds_the_model(side, add)
    _check_units(before, after, add)
    _check_unit_dtypes(before, after, add)
    _check_optimizer_groups(before, after, add)
    _check_ties(before, after, add)
    _check_state_dict(before, after, add)
    _check_buffers(before, after, tolerance, world_size, add)
    _check_initial(before, after, tolerance, world_size, add)
    _check_inputs(before, after, add)
    _check_steps(before, after, tolerance, case, add)
    report.findings.sort(key=lambda f: f.severity == "note")
    report.units = _unit_rows(before, after)
    report.step_rows = _step_rows(before, after, tolerance)
    return report


def _summary(side: SideObservation) -> SideSummary:
    return SideSummary(
        label=side.label,
        engine=side.engine,
        units=list(side.units),
        error=f"{side.phase}: {side.error}" if side.error else None,
        state_dict_kinds=dict(Counter(side.kinds.values())),
        optimizer_groups=[
            {"params": g["count"], **g["hyper"]} for g in side.optimizer.get("groups", [])
        ],
    )


Add = Callable[[Finding], None]


def _names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(n or "(root)" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _check_error(side: SideObservation, add: Add) -> None:
    if side.error is None:
        return
    cause = next((c for words, c in _ERROR_CAUSES if words in side.error), None)
    add(
        Finding(
            "difference",
            "error",
            f"stopped at {side.phase}: {side.error}",
            side=side.label,
            cause=cause,
        )
    )


def _check_unread(side: SideObservation, add: Add) -> None:
    for what in side.unread:
        add(Finding("note", "unread", f"not compared: {what} could not be read", side=side.label))


def _check_meta(side: SideObservation, add: Add) -> None:
    if side.meta:
        add(
            Finding(
                "hazard",
                "meta",
                f"{len(side.meta)} tensors are still on the meta device after setup "
                f"({_names(side.meta)}): the side cannot run",
                side=side.label,
                where=side.meta[0],
                cause="left-on-meta",
            )
        )


def _check_root_arguments(side: SideObservation, add: Add) -> None:
    if side.engine != engines.FSDP2 or len(side.settings) < 2:
        return
    root_name = "" if "" in side.settings else side.units[0]
    root = side.settings[root_name]
    for field in _SHARED_ARGUMENTS:
        others = {
            name: settings[field]
            for name, settings in side.settings.items()
            if name != root_name
            and field in settings
            and field in root
            and settings[field] != root[field]
        }
        if others:
            values = sorted(set(others.values()))
            add(
                Finding(
                    "hazard",
                    "arguments",
                    f"the root's {field} is {root[field]}, units {_names(sorted(others))} have "
                    f"{' / '.join(values)}",
                    side=side.label,
                    where=root_name,
                    cause="root-arguments",
                )
            )


def _check_optimizer_holds_the_model(side: SideObservation, add: Add) -> None:
    optimizer = side.optimizer
    if not optimizer:
        return
    if optimizer["foreign"]:
        add(
            Finding(
                "hazard",
                "optimizer",
                f"{optimizer['foreign']} of the optimizer's {optimizer['total']} parameters are "
                f"not the model's; {len(optimizer['missing'])} trainable parameters are in no "
                f"group ({_names(optimizer['missing'])})",
                side=side.label,
                cause="optimizer-before-sharding",
            )
        )
    elif optimizer["missing"]:
        add(
            Finding(
                "note",
                "optimizer",
                f"trainable parameters in no optimizer group: {_names(optimizer['missing'])}",
                side=side.label,
            )
        )


def _check_units(before: SideObservation, after: SideObservation, add: Add) -> None:
    if not (before.units and after.units):
        return
    if len(after.units) == 1 and len(before.units) > 1:
        add(
            Finding(
                "difference",
                "units",
                f"only {_names(after.units)} is a unit where before had {len(before.units)} "
                f"({_names(before.units)}): the whole model is one unit",
                side="after",
                cause="unit-filter",
            )
        )
        return
    only_before = [u for u in before.units if u not in after.units]
    only_after = [u for u in after.units if u not in before.units]
    if only_before or only_after:
        add(
            Finding(
                "difference",
                "units",
                f"other units: only before: {_names(only_before) or '-'}; only after: "
                f"{_names(only_after) or '-'}",
            )
        )


def _check_unit_dtypes(before: SideObservation, after: SideObservation, add: Add) -> None:
    """The dtype each common unit computes in (``param_dtype``), side by side."""
    for name in before.units:
        if name not in after.settings or name not in before.settings:
            continue
        one, other = before.settings[name]["param_dtype"], after.settings[name]["param_dtype"]
        if one != other:
            one, other = (d if d != "None" else "its parameters' own dtype" for d in (one, other))
            root = name == "" or name == after.units[0]
            add(
                Finding(
                    "difference",
                    "arguments",
                    f"computes in {other} (param_dtype) where before computed in {one}",
                    side="after",
                    where=name,
                    cause="root-arguments" if root and len(after.units) > 1 else None,
                )
            )


def _check_optimizer_groups(before: SideObservation, after: SideObservation, add: Add) -> None:
    one, other = before.optimizer, after.optimizer
    if not (one and other) or one["foreign"] or other["foreign"]:
        return  # a foreign optimizer is reported on its own
    groups, others = one["groups"], other["groups"]
    untied = {name for group in _split_ties(before, after) for name in group}
    # One tied parameter goes by all its names on one side (FSDP2) and by one on the
    # other (FSDP1's flat parameters): compare each group by its first name.
    alias = {name: min(group) for group in [*before.ties, *after.ties] for name in group}

    def named(group: dict) -> set[str]:
        return {alias.get(name, name) for name in group["names"]}

    if len(groups) != len(others):
        add(
            Finding(
                "difference",
                "optimizer",
                f"{len(others)} parameter groups where before had {len(groups)}",
                side="after",
                cause="optimizer-groups",
            )
        )
        return
    for index, (group, twin) in enumerate(zip(groups, others)):
        moved = sorted((named(group) ^ named(twin)) - untied)  # a split tie: told apart
        hyper = sorted(
            k
            for k in set(group["hyper"]) | set(twin["hyper"])
            if group["hyper"].get(k) != twin["hyper"].get(k)
        )
        if moved or hyper:
            parts = []
            if moved:
                parts.append(f"other parameters ({_names(moved)})")
            if hyper:
                parts.append(
                    "other "
                    + ", ".join(
                        f"{k} ({group['hyper'].get(k)} -> {twin['hyper'].get(k)})" for k in hyper
                    )
                )
            add(
                Finding(
                    "difference",
                    "optimizer",
                    f"group {index} has " + " and ".join(parts),
                    side="after",
                    cause="optimizer-groups",
                )
            )


def _split_ties(before: SideObservation, after: SideObservation) -> list[list[str]]:
    """The before side's tied groups that the after side does not keep together."""
    if before.error and before.phase == "build" or after.error and after.phase == "build":
        return []
    kept = [set(group) for group in after.ties]
    return [group for group in before.ties if not any(set(group) <= other for other in kept)]


def _check_ties(before: SideObservation, after: SideObservation, add: Add) -> None:
    for group in _split_ties(before, after):
        add(
            Finding(
                "difference",
                "ties",
                f"{' and '.join(group)} are one parameter before and separate after",
                side="after",
                where=group[0],
                cause="tied-weights-split",
            )
        )


def _check_state_dict(before: SideObservation, after: SideObservation, add: Add) -> None:
    if not (before.kinds and after.kinds):
        return
    only_before = sorted(set(before.kinds) - set(after.kinds))
    only_after = sorted(set(after.kinds) - set(before.kinds))
    if only_before or only_after:
        add(
            Finding(
                "difference",
                "state-dict",
                f"other keys in model.state_dict(): only before: {_names(only_before) or '-'}; "
                f"only after: {_names(only_after) or '-'}",
            )
        )
    one, other = Counter(before.kinds.values()), Counter(after.kinds.values())
    if one != other:
        full_to_shards = set(one) == {"Tensor"} and "DTensor" in other
        add(
            Finding(
                "note",
                "state-dict",
                f"model.state_dict() gives {_kinds(other)} where before it gave {_kinds(one)}",
                side="after",
                cause="state-dict-kind" if full_to_shards else None,
            )
        )


def _kinds(counts: Counter) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def _chunk_cause(
    one: torch.Tensor, other: torch.Tensor, tolerance: _Tolerance, world_size: int
) -> str | None:
    """``missed-broadcast`` when rank 0's dim-0 chunk agrees and another does not."""
    if one.shape != other.shape or one.dim() == 0 or one.shape[0] < world_size or world_size < 2:
        return None
    pairs = list(zip(one.chunk(world_size), other.chunk(world_size)))
    if not tolerance.tensor(*pairs[0])[0]:
        return None
    return "missed-broadcast" if any(not tolerance.tensor(a, b)[0] for a, b in pairs[1:]) else None


def _check_buffers(
    before: SideObservation,
    after: SideObservation,
    tolerance: _Tolerance,
    world_size: int,
    add: Add,
) -> None:
    if not (before.buffers and after.buffers):
        return
    names = list(dict.fromkeys([*before.buffers[0], *after.buffers[0]]))
    for name in names:
        if name not in before.buffers[0] or name not in after.buffers[0]:
            side = "before" if name in before.buffers[0] else "after"
            add(Finding("difference", "buffers", f"a buffer only {side}", where=name))
            continue
        ranks, worst = [], 0.0
        for rank in range(world_size):
            same, gap = tolerance.tensor(after.buffers[rank][name], before.buffers[rank][name])
            if not same:
                ranks.append(rank)
                worst = max(worst, gap)
        if not ranks:
            continue
        non_persistent = name in after.non_persistent
        cause = (
            "missed-broadcast"
            if 0 not in ranks
            else ("non-persistent-buffer" if non_persistent else None)
        )
        kind = "non-persistent buffer" if non_persistent else "buffer"
        add(
            Finding(
                "difference",
                "buffers",
                f"the {kind} differs from before on rank{'s' if len(ranks) > 1 else ''} "
                f"{', '.join(map(str, ranks))} after setup (max |Δ| {worst:.3g})",
                side="after",
                where=name,
                cause=cause,
            )
        )


def _check_initial(
    before: SideObservation,
    after: SideObservation,
    tolerance: _Tolerance,
    world_size: int,
    add: Add,
) -> None:
    if not (before.initial and after.initial):
        return
    differing: list[tuple[float, str, str | None]] = []
    for key in before.initial.keys() & after.initial.keys():
        same, gap = tolerance.tensor(after.initial[key], before.initial[key])
        if not same:
            cause = _chunk_cause(before.initial[key], after.initial[key], tolerance, world_size)
            differing.append((gap, key, cause))
    if not differing:
        return
    differing.sort(reverse=True)
    causes = {cause for _, _, cause in differing}
    cause = causes.pop() if len(causes) == 1 else None
    detail = (
        "it matches before on rank 0's part only"
        if cause
        else "another initialisation (another seed or init order, a broadcast or a load missing?)"
    )
    add(
        Finding(
            "difference",
            "weights",
            f"{len(differing)} full weights differ from before after setup, most {differing[0][1]} "
            f"(max |Δ| {differing[0][0]:.3g}): {detail}",
            side="after",
            where=differing[0][1],
            cause=cause,
        )
    )


def _check_inputs(before: SideObservation, after: SideObservation, add: Add) -> None:
    for name, dtypes in before.inputs.items():
        other = after.inputs.get(name)
        if other is None or other == dtypes:
            continue
        rounded = any(a == "float32" and b in _LOW_PRECISION for a, b in zip(dtypes, other))
        add(
            Finding(
                "difference",
                "inputs",
                f"its forward got {'/'.join(other) or 'no floating inputs'} at step 0 where "
                f"before it got {'/'.join(dtypes) or 'no floating inputs'}"
                + (": fp32 inputs rounded to low precision" if rounded else ""),
                side="after",
                where=name,
                step=0,
                cause="input-casting",
            )
        )


def _first_unit_output_gap(
    before: SideObservation, after: SideObservation, tolerance: _Tolerance
) -> str | None:
    for name, output in before.outputs.items():
        other = after.outputs.get(name)
        if other is not None and not tolerance.tensor(other, output)[0]:
            return name
    return None


def _low_precision(side: SideObservation) -> bool:
    return any(s.get("param_dtype") in _LOW_PRECISION for s in side.settings.values())


def _check_steps(
    before: SideObservation, after: SideObservation, tolerance: _Tolerance, case: PortCase, add: Add
) -> None:
    steps = min(len(before.losses), len(after.losses))
    loss_step = next(
        (
            s
            for s in range(steps)
            if not all(tolerance.number(a, b) for a, b in zip(after.losses[s], before.losses[s]))
        ),
        None,
    )
    if loss_step is not None:
        message = (
            f"the loss differs from step {loss_step}: before {before.losses[loss_step]}, "
            f"after {after.losses[loss_step]}"
        )
        unit = _first_unit_output_gap(before, after, tolerance) if loss_step == 0 else None
        if unit is not None:
            message += f"; the first unit whose output differs at step 0: {unit or '(root)'}"
        add(Finding("difference", "loss", message, side="after", where=unit, step=loss_step))
    norm_step = next(
        (
            s
            for s in range(steps)
            if not tolerance.number(after.grad_norms[s], before.grad_norms[s])
        ),
        None,
    )
    if norm_step is not None:
        add(
            Finding(
                "difference",
                "grad-norm",
                f"the gradient norm differs from step {norm_step}: before "
                f"{before.grad_norms[norm_step]:.6g}, after {after.grad_norms[norm_step]:.6g}",
                side="after",
                step=norm_step,
                cause="accumulation-dtype"
                if _accumulated_low_precision(before, after, case, loss_step)
                else None,
            )
        )
    for step in range(steps):
        worst, key = _weights_gap(before.weights[step], after.weights[step], tolerance)
        if key is None:
            continue
        add(
            Finding(
                "difference",
                "weights",
                f"the full weights differ after step {step}, most {key} (max |Δ| {worst:.3g})"
                + (
                    ": the after side's weights did not change"
                    if _stood_still(before, after, step)
                    else ""
                ),
                side="after",
                where=key,
                step=step,
                cause=_step_cause(before, after, step, loss_step, case),
            )
        )
        break


def _frozen(side: SideObservation, step: int) -> bool:
    """Whether the side's weights did not move in ``step`` (or before it) at all."""
    previous = side.initial if step == 0 else side.weights[step - 1]
    return all(torch.equal(previous[k], side.weights[step][k]) for k in previous)


def _stood_still(before: SideObservation, after: SideObservation, step: int) -> bool:
    """The after side's weights did not move in ``step`` while the before side's did."""
    return _frozen(after, step) and not _frozen(before, step)


def _step_cause(
    before: SideObservation,
    after: SideObservation,
    step: int,
    loss_step: int | None,
    case: PortCase,
) -> str | None:
    if _stood_still(before, after, step):
        return "optimizer-before-sharding"
    if _accumulated_low_precision(before, after, case, loss_step):
        return "accumulation-dtype"
    return None


def _accumulated_low_precision(
    before: SideObservation, after: SideObservation, case: PortCase, loss_step: int | None
) -> bool:
    # The first forward agrees and low-precision gradients were accumulated: the dtype
    # they were accumulated in is the suspect.
    low = _low_precision(before) or _low_precision(after)
    return case.accumulate > 1 and loss_step != 0 and low


def _weights_gap(one: dict, other: dict, tolerance: _Tolerance) -> tuple[float, str | None]:
    worst, where = 0.0, None
    for key in one.keys() & other.keys():
        same, gap = tolerance.tensor(other[key], one[key])
        if not same and (where is None or gap > worst):
            worst, where = gap, key
    return worst, where


def _unit_of(key: str, units: list[str]) -> str | None:
    owners = [u for u in units if u == "" or key == u or key.startswith(u + ".")]
    return max(owners, key=len) if owners else None


def _unit_rows(before: SideObservation, after: SideObservation) -> list[UnitRow]:
    names = list(dict.fromkeys([*before.units, *after.units]))
    keys = list(before.initial or after.initial)
    rows = []
    for name in names:
        mine = [k for k in keys if _unit_of(k, names) == name]
        row = UnitRow(
            name,
            engines.describe(before.settings[name]) if name in before.settings else "",
            engines.describe(after.settings[name]) if name in after.settings else "",
            tensors=len(mine),
            inputs_before=before.inputs.get(name, []),
            inputs_after=after.inputs.get(name, []),
        )
        row.initial = _largest(before.initial, after.initial, mine)
        steps = min(len(before.weights), len(after.weights))
        row.steps = [_largest(before.weights[s], after.weights[s], mine) for s in range(steps)]
        rows.append(row)
    return rows


def _largest(one: dict, other: dict, keys: list[str]) -> float | None:
    gaps = [
        float((one[k] - other[k]).abs().max())
        if one[k].shape == other[k].shape and one[k].numel()
        else 0.0
        for k in keys
        if k in one and k in other
    ]
    return max(gaps) if gaps else None


def _step_rows(
    before: SideObservation, after: SideObservation, tolerance: _Tolerance
) -> list[StepRow]:
    rows = []
    for step in range(max(len(before.losses), len(after.losses))):
        row = StepRow(step)
        if step < len(before.losses):
            row.loss_before, row.grad_norm_before = before.losses[step], before.grad_norms[step]
        if step < len(after.losses):
            row.loss_after, row.grad_norm_after = after.losses[step], after.grad_norms[step]
        if step < len(before.weights) and step < len(after.weights):
            row.weight_diff, row.worst = _weights_gap(
                before.weights[step], after.weights[step], tolerance
            )
            if row.worst is None:
                row.weight_diff = _largest(
                    before.weights[step], after.weights[step], list(before.weights[step])
                )
        rows.append(row)
    return rows


__all__ = ["compare"]
