"""What the port checker found: a :class:`PortReport`, as text and as JSON.

Plain data (no tensors): it travels from rank 0 to the caller, and ``to_dict`` gives
what ``json.dumps`` takes.

Example:
    >>> side = SideSummary("before", "FSDP1", ["", "layers.0"])
    >>> report = PortReport(side, SideSummary("after", "FSDP2", [""]), 2, "gloo", 1)
    >>> report.findings.append(Finding("difference", "units", "only the root is a unit",
    ...                                side="after", cause="unit-filter"))
    >>> report.passed
    False
    >>> print(report.render().splitlines()[0])
    port check: before (FSDP1, 2 units) vs after (FSDP2, 1 unit), 2 ranks (gloo), 1 step: FAILED
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from compat.portcheck.causes import CAUSES

#: Finding severities: a difference or a hazard fails the check, a note does not.
SEVERITIES = ("difference", "hazard", "note")


@dataclass
class Finding:
    """One thing the checker found.

    Attributes:
        severity: ``difference`` (the two runs differ), ``hazard`` (a known port bug
            seen on one side, even where the numbers agree) or ``note`` (an FSDP2
            behaviour a port accepts, with its consequence).
        topic: What was compared: ``units``, ``arguments``, ``meta``, ``weights``,
            ``buffers``, ``loss``, ``grad-norm``, ``inputs``, ``optimizer``, ``ties``,
            ``state-dict``, ``error``, ``unread`` (what this torch would not show).
        message: The finding in words.
        side: ``before`` or ``after`` when it is about one side.
        where: The unit, parameter or buffer.
        step: The step (0-based), where it is about one.
        cause: The code of the known cause (:data:`compat.portcheck.causes.CAUSES`).
    """

    severity: str
    topic: str
    message: str
    side: str | None = None
    where: str | None = None
    step: int | None = None
    cause: str | None = None

    def render(self) -> str:
        """One line (two with a cause): ``[severity] topic: message``."""
        place = ", ".join(
            part
            for part in (
                self.side,
                f"{self.where or '(root)'}" if self.where is not None else None,
                f"step {self.step}" if self.step is not None else None,
            )
            if part
        )
        text = f"[{self.severity}] {self.topic}{f' ({place})' if place else ''}: {self.message}"
        if self.cause in CAUSES:
            cause = CAUSES[self.cause]
            text += (
                f"\n    cause: {cause.title} [{cause.code}]: {cause.why}.\n    fix: {cause.fix}."
            )
        return text


@dataclass
class SideSummary:
    """One side of the comparison.

    Attributes:
        label: ``before`` or ``after``.
        engine: ``FSDP1``, ``FSDP2`` or ``plain`` (no FSDP unit).
        units: The units' names (``""``: the root), in the model's module order.
        error: What it raised, if it could not run to the end.
        state_dict_kinds: How many entries of ``model.state_dict()`` are of each kind.
        optimizer_groups: Per group: how many parameters and its hyperparameters.
    """

    label: str
    engine: str
    units: list[str] = field(default_factory=list)
    error: str | None = None
    state_dict_kinds: dict[str, int] = field(default_factory=dict)
    optimizer_groups: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class UnitRow:
    """One unit, compared: how far its tensors are apart at the start and after each step.

    Attributes:
        name: The unit's name (``""``: the root).
        before: The unit's settings on the before side (``""``: not a unit there).
        after: The same on the after side.
        tensors: How many state-dict entries it holds.
        initial: Largest absolute difference of its entries at the start.
        steps: The same after each step (``None`` where a side did not get there).
        inputs_before: The dtypes of the floating inputs its forward got at step 0.
        inputs_after: The same on the after side.
    """

    name: str
    before: str
    after: str
    tensors: int = 0
    initial: float | None = None
    steps: list[float | None] = field(default_factory=list)
    inputs_before: list[str] = field(default_factory=list)
    inputs_after: list[str] = field(default_factory=list)


@dataclass
class StepRow:
    """One training step, compared.

    Attributes:
        step: 0-based.
        loss_before: The loss on each rank, before side.
        loss_after: The same, after side.
        grad_norm_before: The total gradient norm before the optimizer step.
        grad_norm_after: The same, after side.
        weight_diff: Largest absolute difference of the full weights after the step.
        worst: The entry where it is.
    """

    step: int
    loss_before: list[float] = field(default_factory=list)
    loss_after: list[float] = field(default_factory=list)
    grad_norm_before: float | None = None
    grad_norm_after: float | None = None
    weight_diff: float | None = None
    worst: str | None = None


@dataclass
class PortReport:
    """The port checker's answer for one pair of builders.

    Attributes:
        before: The reference side (FSDP1, or the script before migration).
        after: The port.
        world_size: Ranks it ran on.
        backend: ``gloo`` or ``nccl``.
        steps: Training steps each side ran (at most).
        findings: Differences, hazards and notes, most important first.
        units: Unit by unit.
        step_rows: Step by step.
    """

    before: SideSummary
    after: SideSummary
    world_size: int
    backend: str
    steps: int
    findings: list[Finding] = field(default_factory=list)
    units: list[UnitRow] = field(default_factory=list)
    step_rows: list[StepRow] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No difference and no hazard (notes allowed)."""
        return not any(f.severity != "note" for f in self.findings)

    @property
    def causes(self) -> list[str]:
        """The codes of the known causes named, in order, each once."""
        return list(dict.fromkeys(f.cause for f in self.findings if f.cause))

    def failing(self) -> list[Finding]:
        """The differences and hazards."""
        return [f for f in self.findings if f.severity != "note"]

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (what ``json.dumps`` takes), with ``passed``."""
        data = dataclasses.asdict(self)
        data["passed"] = self.passed
        data["causes"] = self.causes
        return data

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON (non-finite numbers as ``null``)."""
        return json.dumps(_finite(self.to_dict()), indent=indent)

    def assert_passed(self) -> None:
        """Raise ``AssertionError`` with the rendered report unless :attr:`passed`."""
        if not self.passed:
            raise AssertionError("the port differs from its reference:\n" + self.render())

    def render(self) -> str:
        """The report as text: a headline, the findings, unit by unit, step by step."""
        lines = [self._headline(), ""]
        for severity in SEVERITIES:
            found = [f for f in self.findings if f.severity == severity]
            if found:
                lines.append(f"{severity}s ({len(found)}):")
                lines.extend("  " + f.render().replace("\n", "\n  ") for f in found)
                lines.append("")
        lines.extend(self._unit_table())
        lines.extend(self._step_table())
        return "\n".join(lines).rstrip() + "\n"

    def __str__(self) -> str:
        return self.render()

    def _headline(self) -> str:
        sides = " vs ".join(
            f"{side.label} ({side.engine}, {_count(len(side.units), 'unit')})"
            for side in (self.before, self.after)
        )
        verdict = "passed" if self.passed else "FAILED"
        return (
            f"port check: {sides}, {_count(self.world_size, 'rank')} ({self.backend}), "
            f"{_count(self.steps, 'step')}: {verdict}"
        )

    def _unit_table(self) -> list[str]:
        if not self.units:
            return []
        steps = max((len(row.steps) for row in self.units), default=0)
        header = ["unit", "before", "after", "tensors", "|Δ| init"]
        header += [f"|Δ| step {i}" for i in range(steps)] + ["inputs at step 0"]
        rows = [header]
        for row in self.units:
            inputs = ""
            if row.inputs_before or row.inputs_after:
                inputs = (
                    f"{'/'.join(row.inputs_before) or '-'} -> {'/'.join(row.inputs_after) or '-'}"
                )
            rows.append(
                [
                    row.name or "(root)",
                    row.before or "-",
                    row.after or "-",
                    str(row.tensors),
                    _number(row.initial),
                    *(_number(v) for v in row.steps),
                    *(["-"] * (steps - len(row.steps))),
                    inputs,
                ]
            )
        return ["unit by unit:", *_table(rows), ""]

    def _step_table(self) -> list[str]:
        if not self.step_rows:
            return []
        rows = [["step", "loss before", "loss after", "grad norm before", "after", "|Δ| weights"]]
        for row in self.step_rows:
            rows.append(
                [
                    str(row.step),
                    " ".join(_number(v) for v in row.loss_before) or "-",
                    " ".join(_number(v) for v in row.loss_after) or "-",
                    _number(row.grad_norm_before),
                    _number(row.grad_norm_after),
                    _number(row.weight_diff) + (f" ({row.worst})" if row.worst else ""),
                ]
            )
        return ["step by step (losses per rank):", *_table(rows), ""]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:.6g}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows
    ]


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


__all__ = ["SEVERITIES", "Finding", "PortReport", "SideSummary", "StepRow", "UnitRow"]
