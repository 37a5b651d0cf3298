"""What the engine reports: one finding per old spelling, at a place in a file."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


class Finding:
    """One old spelling at one place.

    A plain class rather than a dataclass (whose class costs the one-file lint about
    half a millisecond to create): equal, ordered and hashed by every attribute but
    ``no_fix``, frozen, and written as a dataclass would be.

    Attributes:
        line: 1-based line.
        col: 1-based column.
        code: The rule code.
        message: The rule's message.
        fixable: An automatic fix exists for it (with ``--unsafe-fixes`` if unsafe).
        fixed: The fix was applied in this run.
        unsafe: The fix here is unsafe although the rule's fix is safe elsewhere (it
            applies only with ``--unsafe-fixes``).
        withheld: Why a fix this run would have applied was not written (the rewrite
            would have broken the file), or None.
        cell: The notebook cell (1-based) ``line`` counts in, in a notebook; else None.
        no_fix: Why the rule's fix is not offered here at all: the releases the code
            runs on include one the new form does not run on (``no fix runs on torch
            1.12..latest: it needs torch 2.0``), or None.
    """

    __slots__ = _FIELDS = (
        "line",
        "col",
        "code",
        "message",
        "fixable",
        "fixed",
        "unsafe",
        "withheld",
        "cell",
        "no_fix",
    )

    line: int
    col: int
    code: str
    message: str
    fixable: bool
    fixed: bool
    unsafe: bool
    withheld: str | None
    cell: int | None
    no_fix: str | None

    def __init__(
        self,
        line: int,
        col: int,
        code: str,
        message: str,
        fixable: bool = False,
        fixed: bool = False,
        unsafe: bool = False,
        withheld: str | None = None,
        cell: int | None = None,
        no_fix: str | None = None,
    ) -> None:
        values = (line, col, code, message, fixable, fixed, unsafe, withheld, cell, no_fix)
        for name, value in zip(self._FIELDS, values):
            object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> Finding:
        """A copy with ``changes`` (``dataclasses.replace``'s job for a dataclass).

        Example:
            >>> Finding(1, 2, "FSDP101", "m").replace(fixed=True).fixed
            True
        """
        return Finding(**{**{name: getattr(self, name) for name in self._FIELDS}, **changes})

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS[:-1])  # not no_fix

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if other.__class__ is Finding else NotImplemented

    def __lt__(self, other: Finding) -> bool:
        return self._key() < other._key() if other.__class__ is Finding else NotImplemented

    def __le__(self, other: Finding) -> bool:
        return self._key() <= other._key() if other.__class__ is Finding else NotImplemented

    def __gt__(self, other: Finding) -> bool:
        return self._key() > other._key() if other.__class__ is Finding else NotImplemented

    def __ge__(self, other: Finding) -> bool:
        return self._key() >= other._key() if other.__class__ is Finding else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"Finding({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Finding is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a Finding is frozen")

    def __reduce__(self) -> tuple[Any, ...]:
        # Slots are restored with setattr, which a frozen class refuses: rebuild instead.
        return Finding, tuple(getattr(self, name) for name in self._FIELDS)

    @property
    def position(self) -> str:
        """``line:col``, or ``cell N:line:col`` in a notebook (as ruff writes them)."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{cell}{self.line}:{self.col}"


#: The code of a file that does not parse, as ruff names it (no registry rule has it).
INVALID_SYNTAX = "invalid-syntax"


def applicability(finding: Finding, safety: str) -> str | None:
    """``"safe"`` or ``"unsafe"`` where an automatic fix exists for ``finding``, else None.

    ``safety`` is the rule's fix safety (``"safe"``, ``"unsafe"``, ``"manual"``).

    Example:
        >>> applicability(Finding(1, 1, "FSDP103", "m", fixable=True, unsafe=True), "safe")
        'unsafe'
    """
    if not finding.fixable:
        return None
    return "unsafe" if finding.unsafe else safety


def no_fix(
    settings: Any, rule: Any, fixable: bool, why_not: str | None = None, explained: bool = False
) -> str | None:
    """Why a finding of ``rule`` has no fix: the releases the code runs on, else ``why_not``.

    ``settings`` is the run's :class:`codemods.settings.Settings` (not imported here: the
    findings module sits below it). A manual rule's findings say that a human decides
    (the text output leaves that out: the rule's message is its recipe). None where the
    rule has a fix here, or where the finding's own text explains it (``explained``).
    """
    if not rule.fixable:
        return f"no automatic fix: a human decides (`--explain {rule.code}` gives the recipe)"
    breaks = settings.releases.breaks(rule)
    if breaks:
        return breaks
    if fixable or (explained and why_not is None):
        return None  # fixed, or the finding's own text (its detail) says what to do
    return why_not or "its fix does not rewrite this form with certainty: a human decides"
