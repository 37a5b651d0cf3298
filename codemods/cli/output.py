"""Findings as text, JSON, GitHub workflow commands or SARIF 2.1.0.

Every format is a pure function from the run's findings (and errors) to a string, so
the same data prints the same way from lint and from its tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codemods._version import __version__
from codemods.findings import Finding, applicability
from codemods.registry import REGISTRY, FixSafety
from codemods.settings import Settings

FORMATS = ("text", "json", "github", "sarif")
TOOL = "fsdp-lint"
HOME = "https://github.com/fsdp-compat/fsdp-compat"
RULES_URL = f"{HOME}/blob/main/docs/rules.md"


@dataclass(frozen=True)
class Located:
    """A finding with the file it is in."""

    path: str
    finding: Finding

    @property
    def applicability(self) -> str | None:
        """``"safe"`` or ``"unsafe"`` where an automatic fix exists here, else None."""
        return applicability(self.finding, REGISTRY[self.finding.code].fix.value)


def finding_line(
    path: str, finding: Finding, settings: Settings | None = None, target: Settings | None = None
) -> str:
    """How both commands print a finding: ``path:line:col: CODE [*] message [hint]``.

    ``[*]``: ``--fix`` with this run's ``--unsafe-fixes`` (``settings``) fixes it (lint's
    summary counts the fixes ``--unsafe-fixes`` would add). A fixing run prints what it
    left, with no ``settings``: no marker, and a hint where only ``--unsafe-fixes``
    would fix it. A withheld fix's reason is shown either way, and so is a fix the
    file's target release (``target``, else ``settings``) is too old for.

    Example:
        >>> finding = Finding(3, 5, "FSDP101", "renamed", fixable=True)
        >>> finding_line("a.py", finding, Settings())
        'a.py:3:5: FSDP101 [*] renamed'
    """
    # A finding fixed in a file that could not be written is still there, and --fix
    # still fixes it: it keeps its marker.
    marker = settings is not None and fix_marker(Located(path, finding), settings)
    hint = ""
    too_old = target_too_old(finding, target or settings)
    if finding.withheld:
        hint = f" [{finding.withheld}]"
    elif settings is None and needs_unsafe(finding):
        hint = " [fix with --unsafe-fixes]"
    elif too_old:
        hint = f" [{too_old}]"
    return (
        f"{path}:{finding.line}:{finding.col}: {finding.code} "
        f"{'[*] ' if marker else ''}{finding.message}{hint}"
    )


def fix_marker(item: Located, settings: Settings) -> bool:
    """Whether ``--fix`` (with this run's ``--unsafe-fixes``) would fix ``item``."""
    finding = item.finding
    rule = REGISTRY[finding.code]
    return not finding.withheld and settings.fixes(rule, finding.fixable, finding.unsafe)


def target_too_old(finding: Finding, settings: Settings | None = None) -> str:
    """Why a finding left unfixed has no fix on the releases the code runs on, or ``""``.

    Example:
        >>> finding = Finding(2, 1, "FSDP121", "deprecated", no_fix="no fix runs on torch 2.2")
        >>> target_too_old(finding)
        'no fix runs on torch 2.2'
    """
    if finding.fixed or finding.fixable:
        return ""
    return finding.no_fix or ""


def needs_unsafe(finding: Finding) -> bool:
    """Whether the finding is left and an unsafe fix exists for it (``--unsafe-fixes``)."""
    unsafe = applicability(finding, REGISTRY[finding.code].fix.value) == "unsafe"
    return unsafe and not finding.fixed and not finding.withheld


def text(
    items: Sequence[Located],
    settings: Settings,
    settings_for: Callable[[str], Settings] | None = None,
) -> str:
    """:func:`finding_line` for each item, one line each (``settings_for``: each file's)."""
    return "".join(
        finding_line(i.path, i.finding, settings, settings_for(i.path) if settings_for else None)
        + "\n"
        for i in items
    )


def summary(
    items: Sequence[Located], fixed: int, settings: Settings, unchecked: int = 0, unreached: int = 0
) -> str:
    """The closing lines of the text format, as ruff words them.

    A run with files it ``unchecked`` (unreadable, unparsable or missing) or
    ``unreached`` (a signal stopped it) never claims that all checks passed.

    Example:
        >>> print(summary([], 0, Settings(), unchecked=1), end="")
        No findings in the files checked; 1 file could not be checked.
    """
    notes = []
    if unchecked:
        notes.append(f"{_files(unchecked)} could not be checked")
    if unreached:
        notes.append(f"{_files(unreached)} not reached")
    fixed_note = f" ({fixed} fixed)" if fixed else ""
    if not items:
        if notes:
            return f"No findings in the files checked{fixed_note}; {', '.join(notes)}.\n"
        return f"All checks passed!{fixed_note}\n"
    total = len(items) + fixed
    counted = f"Found {total} finding{'s' if total != 1 else ''}"
    if fixed:
        counted += f" ({fixed} fixed, {len(items)} remaining)"
    lines = [counted + "."]
    fixable = sum(fix_marker(i, settings) for i in items)
    hidden = sum(i.applicability == "unsafe" and not settings.unsafe_fixes for i in items)
    hint = (
        f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
        "`--unsafe-fixes` option"
    )
    if fixable:
        lines.append(
            f"[*] {fixable} fixable with the `--fix` option" + (f" ({hint})." if hidden else ".")
        )
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    if notes:
        lines.append(f"{', '.join(notes)}.")
    return "\n".join(lines) + "\n"


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"


def statistics(items: Sequence[Located], settings: Settings) -> str:
    """A count per rule, most frequent first: ``count  CODE  [*] name``."""
    counts = Counter(i.finding.code for i in items)
    fixable = {i.finding.code for i in items if fix_marker(i, settings)}
    width = len(str(max(counts.values(), default=0)))
    return "".join(
        f"{count:>{width}}\t{code}\t{'[*]' if code in fixable else '[ ]'} {REGISTRY[code].name}\n"
        for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )


def as_json(items: Sequence[Located]) -> str:
    """A JSON array, one object per finding."""
    import json  # only for this format: every run imports this module

    return (
        json.dumps(
            [
                {
                    "code": i.finding.code,
                    "name": REGISTRY[i.finding.code].name,
                    "message": i.finding.message,
                    "filename": i.path,
                    "location": {"row": i.finding.line, "column": i.finding.col},
                    "fix": {"applicability": i.applicability} if i.applicability else None,
                    "no_fix": i.finding.no_fix,
                    "url": f"{RULES_URL}#{i.finding.code.lower()}",
                }
                for i in items
            ],
            indent=2,
        )
        + "\n"
    )


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(items: Sequence[Located]) -> str:
    """GitHub Actions ``::error`` workflow commands: annotations on the pull request."""
    lines = []
    for i in items:
        f = i.finding
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("title", f"{TOOL} ({f.code})"),
                ("file", i.path),
                ("line", f.line),
                ("col", f.col),
            )
        )
        message = _escape_data(f"{i.path}:{f.line}:{f.col}: {f.code} {f.message}")
        lines.append(f"::error {properties}::{message}\n")
    return "".join(lines)


def _uri(path: str) -> str:
    """A SARIF artifact URI: relative paths stay relative (to the checkout), with ``/``."""
    candidate = Path(path)
    return candidate.as_uri() if candidate.is_absolute() else candidate.as_posix()


def sarif(items: Sequence[Located], errors: Sequence[str] = ()) -> str:
    """A SARIF 2.1.0 log with one run: the rules that fired, their results, and errors."""
    codes = sorted({i.finding.code for i in items})
    index = {code: n for n, code in enumerate(codes)}
    rules = []
    for code in codes:
        rule = REGISTRY[code]
        rules.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": rule.message},
                "fullDescription": {"text": rule.why},
                "helpUri": f"{RULES_URL}#{code.lower()}",
                "properties": {"fix": rule.fix.value, "framework": rule.framework.value},
            }
        )
    results = [
        {
            "ruleId": i.finding.code,
            "ruleIndex": index[i.finding.code],
            "level": "error" if REGISTRY[i.finding.code].fix is not FixSafety.MANUAL else "warning",
            "message": {"text": i.finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(i.path)},
                        "region": {"startLine": i.finding.line, "startColumn": i.finding.col},
                    }
                }
            ],
        }
        for i in items
    ]
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL,
                        "version": __version__,
                        "informationUri": HOME,
                        "rules": rules,
                    }
                },
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": not errors,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": error}} for error in errors
                        ],
                    }
                ],
            }
        ],
    }
    import json

    return json.dumps(log, indent=2) + "\n"
