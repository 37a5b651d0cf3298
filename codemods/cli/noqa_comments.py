"""``# noqa`` comments from the command line: ``--add-noqa``, and unused ones (FSDP900).

``--add-noqa`` (as ruff's) writes ``# noqa: CODE`` at the end of each line that holds a
finding, so that a code base can adopt the lint and fix its findings later. A comment
is added only where the file's syntax tree stays the same with it (never inside a
multi-line string, nor after a backslash), and a file that changed meanwhile is left.

FSDP900 (opt-in, as ruff's RUF100 is) reports a ``# noqa: FSDP...`` whose code silences
nothing on its line: the file is linted once more with its ``noqa`` comments made inert
(the same length, so every position holds), and each code of this tool in a comment
that no finding of that line matches is reported.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from codemods.batch.files import ChangedMeanwhile, write_atomic
from codemods.batch.runner import FileResult, process_source
from codemods.cli.output import TOOL_RULES, UNUSED_NOQA
from codemods.findings import Finding
from codemods.screen import noqa
from codemods.settings import Settings


@functools.cache
def _comment() -> re.Pattern[bytes]:
    return re.compile(
        rb"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]*(?:[\s,]+[A-Za-z]+[0-9]*)*))?", re.I
    )


@functools.cache
def _inert() -> re.Pattern[bytes]:
    return re.compile(rb"noqa", re.I)


def wanted(settings: Settings) -> bool:
    """Whether the run reports unused ``noqa`` codes (FSDP900 selected, not ignored)."""
    return any(UNUSED_NOQA.startswith(p) for p in settings.select) and not any(
        UNUSED_NOQA.startswith(p) for p in settings.ignore
    )


def unused(path: str, source: bytes, settings: Settings) -> list[Finding]:
    r"""The FSDP900 findings of ``source``: this tool's codes its ``noqa`` comments waste.

    Example:
        >>> source = b"import os  # noqa: FSDP101\n"
        >>> [f.message for f in unused("a.py", source, Settings(select=("FSDP",)))]
        ['unused `noqa` directive (unused: `FSDP101`)']
    """
    if b"noqa" not in source.lower():
        return []
    comments = {
        number: match
        for number, line in enumerate(source.splitlines(), start=1)
        for match in [_comment().search(line)]
        if match and match.group("codes")
    }
    directives = noqa.parse(source).lines
    ours = {
        line: sorted(
            c for c in codes if c.startswith("FSDP") and c not in TOOL_RULES and line in comments
        )
        for line, codes in directives.items()
    }
    ours = {line: codes for line, codes in ours.items() if codes}
    if not ours:
        return []
    # The same bytes with every noqa made inert (``noqa`` to ``xxxx``): what they silence.
    bare = _inert().sub(b"xxxx", source)
    heard = process_source(path, bare, settings.replace(fix=False))
    seen: dict[int, set[str]] = defaultdict(set)
    for finding in heard.findings:
        seen[finding.line].add(finding.code)
    found = []
    for line, codes in sorted(ours.items()):
        waste = [
            c
            for c in codes
            if not any(code.startswith(c) or c in noqa.FORMER.get(code, ()) for code in seen[line])
        ]
        # As ruff words it: a code of no rule this run reports is "non-enabled".
        off = [c for c in waste if not any(settings.enabled(r) for r in _rules(c))]
        kinds = [
            (kind, [c for c in waste if (c in off) == disabled])
            for kind, disabled in (("unused", False), ("non-enabled", True))
        ]
        parts = [
            f"{kind}: {', '.join(f'`{c}`' for c in listed)}" for kind, listed in kinds if listed
        ]
        if parts:
            found.append(
                Finding(
                    line,
                    comments[line].start() + 1,
                    UNUSED_NOQA,
                    f"unused `noqa` directive ({'; '.join(parts)})",
                )
            )
    return found


def _rules(prefix: str) -> list:
    """The registry's rules a ``noqa`` code (or prefix) names."""
    from codemods.registry import REGISTRY

    return [rule for rule in REGISTRY if rule.code.startswith(prefix)]


def add_unused(results: list[FileResult], settings_for: Callable[[str], Settings]) -> None:
    """Add each file's FSDP900 findings to its result (files read again; notebooks not)."""
    for result in results:
        if result.error or result.path.endswith(".ipynb") or not result.reached:
            continue
        try:
            source = Path(result.path).read_bytes()
        except OSError:
            continue
        settings = settings_for(result.path)
        result.findings = sorted([*result.findings, *unused(result.path, source, settings)])


def add_noqa(results: list[FileResult], problems: list[str]) -> int:
    """``--add-noqa``: write the comments; say how many; the exit code (ruff's: 0, 2 on errors)."""
    added = 0
    errors = list(problems)
    for result in results:
        lines: dict[int, set[str]] = defaultdict(set)
        for finding in result.findings:
            if not finding.fixed and finding.code != UNUSED_NOQA:
                lines[finding.line].add(finding.code)
        if not lines or result.error or result.path.endswith(".ipynb"):
            if result.error:
                errors.append(f"{result.path}: {result.error}")
            elif lines:
                print(f"{result.path}: a notebook: no `# noqa` added", file=sys.stderr)
            continue
        path = Path(result.path)
        try:
            source = path.read_bytes()
            new, count, refused = with_noqa(source, lines)
            if count:
                write_atomic(path, new, source)
        except (OSError, ChangedMeanwhile) as exc:
            errors.append(f"{result.path}: not changed: {exc}")
            continue
        added += count
        for line in refused:
            print(
                f"{result.path}:{line}: no `# noqa` added (the line ends inside a string "
                "or a continuation)",
                file=sys.stderr,
            )
    print(f"Added {added} noqa directive{'s' * (added != 1)}.", file=sys.stderr)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 2 if errors else 0


def with_noqa(source: bytes, lines: dict[int, set[str]]) -> tuple[bytes, int, list[int]]:
    r"""``source`` with ``# noqa: CODES`` on ``lines``; how many added; the lines refused.

    Codes join a ``# noqa: ...`` already there; a bare ``# noqa`` already silences all.

    Example:
        >>> with_noqa(b"x = f(\n  a)\ny = 1  # noqa: E501\n", {2: {"FSDP101"}, 3: {"FSDP2"}})
        (b'x = f(\n  a)  # noqa: FSDP101\ny = 1  # noqa: E501, FSDP2\n', 2, [])
        >>> with_noqa(b"s = '''\nold\n'''\n", {2: {"FSDP101"}})
        (b"s = '''\nold\n'''\n", 0, [2])
    """
    try:
        reference = ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):
        return source, 0, sorted(lines)
    rows = source.splitlines(keepends=True)
    added, refused = 0, []
    for number in sorted(lines):
        if number > len(rows):
            continue
        row = rows[number - 1]
        body = row.rstrip(b"\r\n")
        ending = row[len(body) :]
        codes = ", ".join(sorted(lines[number]))
        match = _comment().search(body)
        if match and not match.group("codes"):
            continue  # a bare noqa silences every code already
        if match:
            candidate = body[: match.end()] + b", " + codes.encode() + body[match.end() :]
        else:
            candidate = body + b"  # noqa: " + codes.encode()
        trial = [*rows[: number - 1], candidate + ending, *rows[number:]]
        try:
            same = ast.dump(ast.parse(b"".join(trial))) == reference
        except (SyntaxError, ValueError):
            same = False
        if same:
            rows, added = trial, added + 1
        else:
            refused.append(number)
    return b"".join(rows), added, refused
