"""The releases a file runs on: per framework, a range from a floor to a top.

A project runs on a range of releases, not one. A rule asks two questions of it:

- :meth:`Releases.reported`: is the old form a problem on *any* release of the range
  (it is deprecated or removed at or below the top; for a changed default, the range
  holds releases on both sides of the change);
- :meth:`Releases.fixable`: does the new form run on *every* release of the range (it
  exists at the floor).

The command line builds one value per project (:mod:`codemods.cli.targets`); a floor
nobody declares is each file's *evidence floor*, the oldest release on which every API
the file uses exists (:mod:`codemods.screen.evidence`), filled in once the file is parsed
(:meth:`Releases.with_evidence`). The default value (``Releases()``) judges code at the
current release, as a run with no project did before ranges existed.

Example:
    >>> from codemods.registry import REGISTRY
    >>> releases = Releases.parse(torch="1.12..")
    >>> rule = REGISTRY["FSDP102"]  # `unwrapped_params`, removed in torch 2.0
    >>> releases.reported(rule), releases.fixable(rule)
    (True, False)
    >>> releases.breaks(rule)
    'no fix runs on torch 1.12..latest: it needs torch 2.0'
"""

from __future__ import annotations

import functools

from codemods.records import Frozen
from codemods.release_numbers import release

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Protocol

    from packaging.version import Version
else:
    Protocol = object  # the checkers' protocols are plain classes at run time

__all__ = ["RangeError", "Releases", "Span", "parse_span", "short_release"]

#: Framework key -> how messages name it.
TITLES = {"torch": "torch", "lightning": "Lightning"}


class Rule(Protocol):
    """What a range reads of a registry rule (:class:`codemods.registry.Rule` has it all).

    A protocol: this module, below the registry's users, imports nothing of theirs.
    """

    introduced: str | None
    deprecated: str | None
    removed: str | None
    kind: Any  # a ChangeKind
    dual_stack: bool

    @property
    def version_framework(self) -> Any:  # a Framework
        """Whose releases the rule's version fields count."""

    @property
    def fixable(self) -> bool:
        """Whether an automatic fix exists."""


@functools.cache
def _known(text: str) -> Version:
    """A rule's release, parsed once a process (every rule is asked, each run)."""
    return release(text)


class RangeError(ValueError):
    """A release or range that cannot be read; the message says why."""


class Span(Frozen):
    """One framework's releases: from ``floor`` to ``top``, and where each came from.

    Attributes:
        floor: The oldest release (None: not set, the current release stands in).
        top: The newest release (None: the newest there is).
        top_exclusive: ``top`` itself is not in the range (``torch<2.0``).
        floor_origin: Where the floor came from (``--target-torch``, a declaration,
            ``evidence: ...``).
        top_origin: Where the top came from (empty: the newest release).
        evidence: Nothing declares the floor: each file's evidence floor is used
            (:meth:`Releases.with_evidence` fills ``floor`` in).
        unversioned: A declaration that names no release (a URL or path pin): below the
            evidence floor the range is unknown. Empty where there is none.
        declared: The bounds are the project's declarations (not ``--target-...`` nor
            the configuration): a file whose evidence floor is above their top is
            judged at its evidence instead (:meth:`Releases.with_evidence`).
        set_aside: For such a file, the declared range set aside and where it came
            from (``1.10.2..<1.10.3 (declared: environment.yml:4: pytorch=1.10.2)``).
    """

    __slots__ = _fields = (
        "floor",
        "top",
        "top_exclusive",
        "floor_origin",
        "top_origin",
        "evidence",
        "unversioned",
        "declared",
        "set_aside",
    )

    floor: Version | None
    top: Version | None
    top_exclusive: bool
    floor_origin: str
    top_origin: str
    evidence: bool
    unversioned: str
    declared: bool
    set_aside: str

    def __init__(
        self,
        floor: Version | None = None,
        top: Version | None = None,
        top_exclusive: bool = False,
        floor_origin: str = "",
        top_origin: str = "",
        evidence: bool = False,
        unversioned: str = "",
        declared: bool = False,
        set_aside: str = "",
    ) -> None:
        self._set(
            floor=floor,
            top=top,
            top_exclusive=top_exclusive,
            floor_origin=floor_origin,
            top_origin=top_origin,
            evidence=evidence,
            unversioned=unversioned,
            declared=declared,
            set_aside=set_aside,
        )

    def reaches(self, release: Version) -> bool:
        """Whether some release of the range is ``release`` or newer."""
        if self.top is None:
            return True
        return release < self.top if self.top_exclusive else release <= self.top

    def all_at_least(self, release: Version) -> bool:
        """Whether every release of the range is ``release`` or newer."""
        return self.floor is None or self.floor >= release

    def below(self, release: Version) -> bool:
        """Whether some release of the range is older than ``release``."""
        return self.floor is not None and self.floor < release

    def text(self) -> str:
        """The range as written: ``1.12..latest``, ``2.2``, ``2.4..<2.6``, ``latest``.

        Example:
            >>> Span(release("1.12")).text(), Span(release("2.2"), release("2.2")).text()
            ('1.12..latest', '2.2')
        """
        if self.floor is not None:
            floor = short_release(self.floor)
        else:
            floor = "evidence" if self.evidence else "latest"
        if self.top is None:
            if self.evidence and self.floor is None:
                return "evidence..latest"
            return floor if self.floor is None else f"{floor}..latest"
        top = ("<" if self.top_exclusive else "") + short_release(self.top)
        return floor if top == floor else f"{floor}..{top}"

    def described(self, title: str) -> str:
        """``torch 1.12..latest (floor: ...; top: ...)`` for summaries and reports."""
        origins = []
        if self.floor_origin:
            origins.append(f"floor: {self.floor_origin}")
        if self.top_origin:
            origins.append(f"top: {self.top_origin}")
        if self.evidence and self.floor is None:
            origins.append("floor: each file's evidence floor, as nothing declares one")
        if self.unversioned:
            origins.append(f"unknown below the evidence floor: {self.unversioned}")
        if self.set_aside:
            origins.append(f"declared {self.set_aside} set aside: the code needs newer")
        return f"{title} {self.text()}" + (f" ({'; '.join(origins)})" if origins else "")


#: A framework's span where nothing sets one (the current release stands in).
_NOT_SET = Span()


class Releases(Frozen):
    """The releases of each framework a file runs on.

    FairScale rules are dated by torch's releases (``Rule.version_framework``).
    """

    __slots__ = _fields = ("torch", "lightning")

    torch: Span
    lightning: Span

    def __init__(self, torch: Span = _NOT_SET, lightning: Span = _NOT_SET) -> None:
        self._set(torch=torch, lightning=lightning)

    @classmethod
    def parse(cls, torch: str | None = None, lightning: str | None = None) -> Releases:
        """Releases from range texts (see :func:`parse_span`); None leaves a framework unset.

        Example:
            >>> Releases.parse(torch="2.4..2.13").torch.text()
            '2.4..2.13'
        """
        spans = {}
        for framework, text in (("torch", torch), ("lightning", lightning)):
            if text is not None:
                spans[framework] = parse_span(text, f"--target-{framework}")
        return cls(**spans)

    def span(self, framework: str) -> Span:
        """The span of ``"torch"`` / ``"lightning"`` (``"fairscale"``: torch's)."""
        return self.lightning if framework == "lightning" else self.torch

    def _rule_span(self, rule: Rule) -> Span:
        return self.span(rule.version_framework.value)

    def reported(self, rule: Rule) -> bool:
        """Whether ``rule``'s old form is a problem on some release of the range.

        It is once deprecated or removed there. A changed default with no warning is a
        problem where the range holds releases on both sides of the change. Advice to
        use a newer form (neither) is given once that form exists in the range.
        """
        span = self._rule_span(rule)
        flagged = [_known(v) for v in (rule.deprecated, rule.removed) if v is not None]
        if flagged:
            return span.reaches(min(flagged))
        if rule.introduced is None:
            return True
        introduced = _known(rule.introduced)
        if rule.kind.value == "default value change":
            return span.floor is None or (span.below(introduced) and span.reaches(introduced))
        return span.reaches(introduced)

    def fixable(self, rule: Rule) -> bool:
        """Whether ``rule``'s fix runs on every release of the range.

        Its new form does where every release has it; a rule that writes the new form
        beside the old one (``dual_stack``) needs only some release of the range to.

        Example:
            >>> from codemods.registry import REGISTRY
            >>> fsdp2 = REGISTRY["FSDP401"]  # FSDP2, from torch 2.4: beside FSDP1 below
            >>> [Releases.parse(torch=t).fixable(fsdp2) for t in ("1.13..", "2.4..", "2.3")]
            [True, True, False]
        """
        if rule.introduced is None or self._silent_default_change(rule):
            return True
        span, introduced = self._rule_span(rule), _known(rule.introduced)
        if span.all_at_least(introduced):
            return True
        return rule.dual_stack and span.reaches(introduced)

    @staticmethod
    def _silent_default_change(rule: Rule) -> bool:
        """A default that changed without a warning: ``introduced`` dates the change.

        Its fix states the argument, which the releases before the change take too
        (that is what makes it a changed default), so the fix runs on the whole range;
        on the releases before the change it changes behaviour, as the rule's message
        says (FSDP108: reentrant before torch 2.2, stated non-reentrant).
        """
        return (
            rule.kind.value == "default value change"
            and rule.deprecated is None
            and rule.removed is None
        )

    def at_least(self, release: str, framework: str = "torch") -> bool:
        """Whether every release of ``framework``'s range is ``release`` or newer."""
        return self.span(framework).all_at_least(_known(release))

    def breaks(self, rule: Rule) -> str:
        """Why ``rule``'s fix is not written here: the range it would not run on, or ``""``."""
        if self.fixable(rule):
            return ""
        span = self._rule_span(rule)
        title = TITLES[rule.version_framework.value]
        reason = f"no fix runs on {title} {span.text()}: it needs {title} {rule.introduced}"
        if span.unversioned:
            reason += f" ({span.unversioned} names no release)"
        return reason

    def with_evidence(self, floors: dict[str, tuple[Version, str]]) -> Releases:
        """These releases with each evidence span's floor set from ``floors``.

        A declared range whose top is below the file's evidence floor (``pytorch=1.10.2``
        where the file imports ``MixedPrecision``, torch 1.12) is not one the file runs
        on: the file is judged from its evidence floor up, as if nothing were declared,
        and the span keeps what it set aside (``set_aside``) for the note that says so.

        Args:
            floors: Framework -> (the file's evidence floor, what evidences it).

        Example:
            >>> pinned = Releases(torch=Span(release("1.10.2"), release("1.10.2"), declared=True))
            >>> used = {"torch": (release("1.12"), "`MixedPrecision` (torch 1.12)")}
            >>> pinned.with_evidence(used).torch.text()
            '1.12..latest'
        """
        spans = {}
        for framework in TITLES:
            span = self.span(framework)
            if framework not in floors:
                continue
            release, why = floors[framework]
            if span.declared and not span.reaches(release):
                spans[framework] = Span(
                    release,
                    floor_origin=f"evidence: {why}",
                    set_aside=f"{span.text()} ({span.top_origin})",
                )
            elif span.evidence:
                spans[framework] = span.replace(floor=release, floor_origin=f"evidence: {why}")
        return self.replace(**spans) if spans else self

    @property
    def needs_evidence(self) -> bool:
        """Whether a file's evidence is read: for a floor, or against a declared top."""
        return any(
            span.evidence or (span.declared and span.top is not None)
            for span in (self.torch, self.lightning)
        )

    def line(self) -> str:
        """``torch 1.12..latest (...); Lightning latest`` for summaries."""
        return "; ".join(self.span(f).described(title) for f, title in TITLES.items())


def short_release(version: Version) -> str:
    """``version`` as written in ranges: trailing zero parts dropped down to ``major.minor``.

    Example:
        >>> short_release(release("1.12.0")), short_release(release("2")), short_release(release("2.0.1"))
        ('1.12', '2.0', '2.0.1')
    """  # noqa: E501
    parts = list(version.release)
    while len(parts) > 2 and parts[-1] == 0:
        parts.pop()
    parts += [0] * (2 - len(parts))
    return ".".join(map(str, parts))


def _release(text: str, option: str) -> Version:
    try:
        return release(text.strip())
    except ValueError as exc:  # packaging's InvalidVersion
        raise RangeError(
            f"{option} must be a release like 2.2 or a range like 2.4..2.13, got {text!r}"
        ) from exc


def parse_span(text: str, option: str = "--target-torch") -> Span:
    """A span from ``2.2`` (that release only), ``2.4..2.13``, ``2.4..``, ``..2.13``, ``latest``.

    An open floor (``..2.13``) is the evidence floor of each file; ``latest`` judges the
    code at the current release only.

    Raises:
        RangeError: If a bound is not a release, or the floor is above the top.

    Example:
        >>> parse_span("2.4..").text(), parse_span("2.2").text(), parse_span("..2.6").evidence
        ('2.4..latest', '2.2', True)
    """
    text = str(text).strip()
    if text == "latest":  # the current release only, as a run with no project
        return Span(floor_origin=option, top_origin=option)
    if ".." not in text:
        release = _release(text, option)
        return Span(release, release, False, option, option)
    low, _, high = text.partition("..")
    floor = _release(low, option) if low.strip() else None
    top = _release(high, option) if high.strip() and high.strip() != "latest" else None
    if floor is not None and top is not None and floor > top:
        raise RangeError(f"{option}: the floor {floor} is above the top {top} in {text!r}")
    return Span(
        floor,
        top,
        False,
        option if floor is not None else "",
        option if top is not None else "",
        evidence=floor is None,
    )
