"""The legacy call a warning is about, as its source spells it, and what ``migrate`` does with it.

FSDP301's and FSDP202's fixes rewrite a call only where every argument has a certain
translation (:mod:`codemods.rules.call_blockers`). A warning from ``compat`` about such
a call says what ``migrate`` will do with *that* call: it reads the call from the
source (Python 3.11+ keeps each instruction's position, 3.10 its line; the source comes from
``linecache``, so notebooks and ``python -c`` work too) and asks the codemod's own
helper; where the source cannot be read, it asks with the argument values compat
received, which cannot show ``**kwargs`` or a variable passed for a literal.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import types
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from codemods.releases import Releases
from codemods.rules.call_blockers import (
    Argument,
    ddp_fully_sharded_blockers,
    fairscale_fsdp_blockers,
    from_ast,
)
from codemods.syntax import ast_nodes as on_ast
from compat.project_releases import file_releases

#: The rules whose fix decides call by call, and how it decides.
BLOCKERS: dict[str, Callable[[Sequence[Argument]], list[str]]] = {
    "FSDP301": fairscale_fsdp_blockers,
    "FSDP202": ddp_fully_sharded_blockers,
}


def described(given: Mapping[str, Any], positional: Sequence[Any] = ()) -> list[Argument]:
    """Arguments as their values describe them: ``positional`` ones, then ``given`` by keyword.

    Example:
        >>> described({"reshard_after_forward": False, "bucket_cap_mb": 25})[0].flag
        False
    """
    arguments = [Argument(spelled=_spelled(value)) for value in positional]
    arguments += [
        Argument(name, spelled=_spelled(value), classes=_classes(value))
        for name, value in given.items()
    ]
    return arguments


def _spelled(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return str(value)
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value)  # torch.float16: written as that name
    return None


def _classes(value: Any) -> bool:
    if isinstance(value, type):
        return True
    return isinstance(value, (list, tuple, set, frozenset)) and all(
        isinstance(item, type) for item in value
    )


def _call_position(frame: types.FrameType, code: str) -> tuple[int, int, int, int] | None:
    """``(line, end line, column, end column)`` of the call ``frame`` is making."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:  # Python < 3.11: only the frame's line is known
        return _only_call_on_line(frame, code)
    try:
        found = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    return None if None in found else found


def _only_call_on_line(frame: types.FrameType, code: str) -> tuple[int, int, int, int] | None:
    """The position of the one call on the frame's line that the lint reports ``code`` at.

    Python 3.10 gives a call's first line, not its columns: a line with one such call
    (the usual shape) still names it; a line with two names neither.
    """
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    source = "".join(lines).encode()
    verdicts = _verdicts(source, code, file_releases(frame.f_code.co_filename)) if lines else None
    starts = [col - 1 for line, col in verdicts or () if line == frame.f_lineno]
    if len(starts) != 1:
        return None
    for node in ast.walk(ast.parse(source)):
        if type(node) is ast.Call and (node.lineno, node.col_offset) == (frame.f_lineno, starts[0]):
            return node.lineno, node.end_lineno, node.col_offset, node.end_col_offset  # type: ignore[return-value]
    return None


def call_arguments(frame: types.FrameType, code: str) -> list[Argument] | None:
    """The arguments of the call of rule ``code`` that ``frame`` is making, as spelled.

    None where Python has no position for the call or the source is not at hand.
    """
    position = _call_position(frame, code)
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    if position is None or len(lines) < position[1]:
        return None
    start, end, col, end_col = position
    encoded = [line.encode() for line in lines[start - 1 : end]]  # columns count UTF-8 bytes
    if start == end:
        text = encoded[0][col:end_col]
    else:
        text = b"".join([encoded[0][col:], *encoded[1:-1], encoded[-1][:end_col]])
    try:
        node = ast.parse(text.decode(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    if type(node) is not ast.Call:
        return None
    # `classes` here: spelled as names (the codemod resolves those to classes, or not)
    return [from_ast(arg, _names(on_ast.value(arg))) for arg in on_ast.arguments(node)]


def _names(node: ast.expr) -> bool:
    items = node.elts if type(node) in (ast.List, ast.Tuple, ast.Set) else [node]  # type: ignore[attr-defined]
    return all(on_ast.dotted(item) is not None for item in items)


def _absent_from_line(frame: types.FrameType, code: str) -> bool:
    """Whether the codemod's lint reports no ``code`` on the line ``frame`` is at."""
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    releases = file_releases(frame.f_code.co_filename)
    verdicts = _verdicts("".join(lines).encode(), code, releases) if lines else None
    return verdicts is not None and all(line != frame.f_lineno for line, _ in verdicts)


def _codemods_verdict(code: str, frame: types.FrameType) -> str:
    """What the codemod's lint says of the finding of ``code`` at the call ``frame`` makes.

    ``"fixed"``, ``"kept"``, ``"absent"`` where it reports no ``code`` there (a FairScale
    ``wrap(...)`` building the FSDP), ``"unknown"`` where it cannot tell (no source, a
    file its ``ast`` lint leaves to libcst).
    """
    position = _call_position(frame, code)
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    releases = file_releases(frame.f_code.co_filename)
    source = "".join(lines).encode()
    verdicts = None if position is None or not lines else _verdicts(source, code, releases)
    if verdicts is None:
        return "unknown"
    fixable = verdicts.get((position[0], position[2] + 1))  # type: ignore[index]
    return "absent" if fixable is None else "fixed" if fixable else "kept"


@functools.lru_cache(maxsize=32)
def _verdicts(
    source: bytes, code: str, releases: Releases | None = None
) -> dict[tuple[int, int], bool] | None:
    """Whether each finding of ``code`` in ``source`` is fixable, by (line, column).

    ``releases``: those the file runs on (None: the current releases).
    """
    from codemods.astlint.lint import lint  # the codemod's own lint, on ast
    from codemods.settings import Settings

    try:
        findings = lint(source, Settings(select=(code,), releases=releases or Releases()))
    except Exception:  # noqa: BLE001 - a warning must never break the user's program
        return None
    return {(f.line, f.col): f.fixable for f in findings}


def migrate_blockers(
    code: str, frame: types.FrameType | None, values: Sequence[Argument] | None
) -> list[str] | None:
    """Why ``migrate`` leaves the call of rule ``code`` at ``frame`` for a human.

    Args:
        code: The rule.
        frame: The user's frame, making the call.
        values: The call's arguments as compat received them (:func:`described`).

    Returns:
        The reasons (empty where the fix rewrites the call), or None where ``code``'s fix
        does not decide call by call, nothing is known of the call, or the codemod
        reports no ``code`` at it.
    """
    decide = BLOCKERS.get(code)
    if decide is None:
        return None
    spelled = call_arguments(frame, code) if frame is not None else None
    if spelled is None:
        if frame is not None and _absent_from_line(frame, code):
            return None  # Python < 3.11 knows the line only: no call of `code` is on it
        return None if values is None else decide(values)
    # Module classes: spelled as names in the source, and classes at run time.
    classes = {arg.keyword for arg in values or () if arg.classes}
    reasons = decide(
        [_with_classes(arg, arg.classes and arg.keyword in classes) for arg in spelled]
    )
    verdict = _codemods_verdict(code, frame) if frame is not None else "unknown"
    if verdict == "absent":
        return None  # not a call the fix is about: nothing to say of it
    if verdict == "fixed":
        return []  # the codemod's lint has the last word
    if verdict == "kept" and not reasons:
        name = os.path.basename(frame.f_code.co_filename)  # type: ignore[union-attr]
        reasons.append(
            f"it renames a file's uses together, and not every one in {name} is certain "
            f"(`fsdp-lint --select {code} {name}` lists them)"
        )
    return reasons


def _with_classes(arg: Argument, classes: bool) -> Argument:
    return Argument(arg.keyword, arg.star, arg.spelled, classes)


__all__ = ["BLOCKERS", "call_arguments", "described", "migrate_blockers"]
