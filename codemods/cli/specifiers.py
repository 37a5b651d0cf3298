"""The lowest release a version constraint admits: PEP 440 specifiers, Poetry constraints.

The floor of a constraint is the largest of its lower bounds: ``>=X``, ``~=X``, ``==X``,
``==X.*`` (X), ``===X`` and ``>X`` (taken as X, with a note, since the release just above
X is not known). ``<``, ``<=`` and ``!=`` bound nothing below, so ``torch<2`` or a bare
``torch`` gives no floor. A floor is the release itself: a local label, pre-, post- and
dev-release parts are dropped (``==2.0.1+cu118`` gives 2.0.1, ``>=2.1.0.dev`` gives
2.1.0), since a target compares against releases.

Which distributions count: torch is ``torch``; Lightning is any of ``lightning``,
``pytorch-lightning`` and ``lightning-fabric`` (they share release numbers), compared
after PEP 503 normalisation (``PyTorch_Lightning`` is ``pytorch-lightning``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Optional

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from codemods.cli.requirement_names import FRAMEWORKS
from codemods.releases import TITLES  # Framework -> how a summary names it

__all__ = [
    "FRAMEWORKS",
    "TITLES",
    "pep440_floor_noted",
    "pep440_top",
    "poetry_floor",
    "poetry_floor_noted",
    "poetry_top",
    "release",
    "specifier_floor",
]


#: A floor and a note on how it was taken (empty: exactly as written).
Noted = tuple[Optional[Version], str]  # Optional: evaluated at run time on Python 3.9


def release(text: str) -> Version:
    """The release ``text`` names, without local, pre-, post- or dev-release parts.

    Raises:
        packaging.version.InvalidVersion: If ``text`` is not a version.

    Example:
        >>> release("2.0.1+cu118"), release("2.1.0rc1")
        (<Version('2.0.1')>, <Version('2.1.0')>)
    """
    return Version(Version(text).base_version)


def specifier_floor(specifiers: str | SpecifierSet) -> Version | None:
    """The lowest release a PEP 440 specifier set admits, where it bounds one.

    Args:
        specifiers: E.g. ``">=1.12,<2"``.

    Returns:
        The floor, or None when nothing bounds it from below.

    Raises:
        packaging.specifiers.InvalidSpecifier: If ``specifiers`` does not parse.

    Example:
        >>> specifier_floor(">=1.12,<2"), specifier_floor("~=2.1.0"), specifier_floor("==1.13.*")
        (<Version('1.12')>, <Version('2.1.0')>, <Version('1.13')>)
        >>> specifier_floor("<2,!=1.13.0") is None
        True
    """
    if isinstance(specifiers, str):
        specifiers = SpecifierSet(specifiers)
    return pep440_floor_noted(specifiers)[0]


def poetry_floor(constraint: str) -> Version | None:
    """The lowest release a Poetry version constraint admits, where it bounds one.

    Args:
        constraint: E.g. ``"^1.12"``, ``"~2.0"``, ``">=1.12,<2"``, ``"1.13.1"``,
            ``"^1.12 || ^2.0"``.

    Returns:
        The floor, or None when nothing bounds it from below (``"*"``, ``"<2"``).

    Raises:
        ValueError: If a version in it does not parse.

    Example:
        >>> poetry_floor("^1.12"), poetry_floor("~2.0.1"), poetry_floor(">=1.13, <3")
        (<Version('1.12')>, <Version('2.0.1')>, <Version('1.13')>)
    """
    return poetry_floor_noted(constraint)[0]


def _specifier_bound(specifier: Specifier) -> Noted:
    """The lower bound one specifier sets, and a note when it is approximate."""
    operator, text = specifier.operator, specifier.version
    if operator == "==" and text.endswith(".*"):
        text = text[:-2]
    if operator in (">=", "~=", "==", "==="):
        try:
            return release(text), ""
        except InvalidVersion:  # ``===foo`` admits an arbitrary string
            return None, ""
    if operator == ">":
        return release(text), f"'>{text}' taken as {release(text)}"
    return None, ""  # <, <=, !=: no lower bound


def pep440_floor_noted(specifiers: Iterable[Specifier]) -> Noted:
    """The largest lower bound of a conjunction of specifiers, with its note.

    Example:
        >>> pep440_floor_noted(SpecifierSet(">1.12"))
        (<Version('1.12')>, "'>1.12' taken as 1.12")
    """
    best: Noted = (None, "")
    for specifier in specifiers:
        bound = _specifier_bound(specifier)
        if bound[0] is not None and (best[0] is None or bound[0] > best[0]):
            best = bound
    return best


_POETRY_OPERATOR = re.compile(r"^(\^|~=|~|>=|<=|===|==|!=|>|<|=)?\s*(.*)$")


def poetry_floor_noted(constraint: str) -> Noted:
    """The floor of a Poetry constraint, the lowest of its ``||`` branches', with its note.

    Raises:
        ValueError: If a version in it does not parse.
    """
    floors: list[tuple[Version, str]] = []
    for branch in constraint.split("||"):
        floor = _poetry_branch_floor(branch)
        if floor[0] is None:
            return None, ""  # one branch with no lower bound: the union has none
        floors.append((floor[0], floor[1]))
    if not floors:
        return None, ""
    return min(floors, key=lambda item: item[0])


def _poetry_branch_floor(branch: str) -> Noted:
    # ">= 1.2, < 1.5" and ">=1.2 <1.5" are both a conjunction.
    squeezed = re.sub(r"(\^|~=|~|>=|<=|===|==|!=|>|<|=)\s+", r"\1", branch.strip())
    best: Noted = (None, "")
    for part in filter(None, re.split(r"[,\s]+", squeezed)):
        match = _POETRY_OPERATOR.match(part)
        assert match is not None  # the pattern matches any string
        operator, text = match.group(1) or "==", match.group(2)
        if text in ("*", ""):
            continue
        if operator in ("<", "<=", "!="):
            continue
        if text.endswith(".*"):
            text = text[:-2]
        try:
            version = release(text)
        except InvalidVersion as exc:
            raise ValueError(f"invalid version {text!r} in {branch.strip()!r}") from exc
        note = f"'>{text}' taken as {version}" if operator == ">" else ""
        if best[0] is None or version > best[0]:
            best = (version, note)
    return best


#: A release's top bound: ``(release, exclusive)``, or ``(None, False)`` for none.
Top = tuple[Optional[Version], bool]


def _next_release(text: str) -> Version:
    """The release after the prefix ``text``: ``1.13`` -> ``1.14``, ``2`` -> ``3``."""
    parts = [int(part) for part in release(text).release]
    parts[-1] += 1
    return Version(".".join(map(str, parts)))


def _tighter(best: Top, candidate: Top) -> Top:
    """The lower of two top bounds (an exclusive bound is below an inclusive one)."""
    if candidate[0] is None:
        return best
    if best[0] is None or candidate[0] < best[0]:
        return candidate
    if candidate[0] == best[0] and candidate[1]:
        return candidate
    return best


def pep440_top(specifiers: Iterable[Specifier]) -> Top:
    """The highest release a conjunction of PEP 440 specifiers admits.

    Example:
        >>> pep440_top(SpecifierSet("<2.1,>=1.12")), pep440_top(SpecifierSet("==1.13.1"))
        ((<Version('2.1')>, True), (<Version('1.13.1')>, False))
        >>> pep440_top(SpecifierSet("==2.0.*")), pep440_top(SpecifierSet(">=1.12"))
        ((<Version('2.1')>, True), (None, False))
    """
    best: Top = (None, False)
    for specifier in specifiers:
        operator, text = specifier.operator, specifier.version
        try:
            if operator == "<":
                best = _tighter(best, (release(text), True))
            elif operator in ("<=", "===") or (operator == "==" and not text.endswith(".*")):
                best = _tighter(best, (release(text), False))
            elif operator == "==":
                best = _tighter(best, (_next_release(text[:-2]), True))
            elif operator == "~=":
                prefix = ".".join(text.split(".")[:-1]) or text
                best = _tighter(best, (_next_release(prefix), True))
        except InvalidVersion:
            continue
    return best


def poetry_top(constraint: str) -> Top:
    """The highest release a Poetry constraint admits, the highest of its ``||`` branches'.

    Example:
        >>> poetry_top("^1.12"), poetry_top("~2.0.1"), poetry_top(">=1.13"), poetry_top("2.0.1")
        ((<Version('2')>, True), (<Version('2.1')>, True), (None, False), (<Version('2.0.1')>, False))

    Raises:
        ValueError: If a version in it does not parse.
    """  # noqa: E501
    tops: list[Top] = []
    for branch in constraint.split("||"):
        squeezed = re.sub(r"(\^|~=|~|>=|<=|===|==|!=|>|<|=)\s+", r"\1", branch.strip())
        best: Top = (None, False)
        for part in filter(None, re.split(r"[,\s]+", squeezed)):
            match = _POETRY_OPERATOR.match(part)
            assert match is not None
            operator, text = match.group(1) or "==", match.group(2)
            if text in ("*", ""):
                continue
            try:
                if operator == "^":
                    parts = list(release(text.rstrip(".*")).release) + [0, 0]
                    index = next((i for i, p in enumerate(parts[:3]) if p != 0), 0)
                    upper = parts[: index + 1]
                    upper[-1] += 1
                    best = _tighter(best, (Version(".".join(map(str, upper))), True))
                elif operator in ("~", "~="):
                    parts = text.split(".")
                    prefix = ".".join(parts[:2] if len(parts) > 1 else parts)
                    if operator == "~=" and len(parts) > 1:
                        prefix = ".".join(parts[:-1])
                    best = _tighter(best, (_next_release(prefix), True))
                elif operator == "<":
                    best = _tighter(best, (release(text), True))
                elif operator in ("<=",) or (operator in ("==", "=") and not text.endswith("*")):
                    best = _tighter(best, (release(text), False))
                elif operator in ("==", "="):
                    best = _tighter(best, (_next_release(text.rstrip(".*")), True))
            except InvalidVersion as exc:
                raise ValueError(f"invalid version {text!r} in {branch.strip()!r}") from exc
        if best[0] is None:
            return (None, False)  # one branch with no top: the union has none
        tops.append(best)
    if not tops:
        return (None, False)
    return max(tops, key=lambda top: (top[0], not top[1]))
