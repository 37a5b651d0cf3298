"""Findings as text, GitHub workflow commands or SARIF 2.1.0 (JSON: :mod:`.json_format`).

Every format is a pure function from the run's findings (and errors) to a string, so
the same data prints the same way from lint and from its tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from codemods._version import __version__
from codemods.findings import INVALID_SYNTAX, Finding, applicability
from codemods.records import Frozen
from codemods.registry import REGISTRY, FixSafety
from codemods.settings import Settings

FORMATS = ("text", "json", "github", "sarif")
TOOL = "fsdp-lint"
HOME = "https://github.com/fsdp-compat/fsdp-compat"
RULES_URL = f"{HOME}/blob/main/docs/rules.md"


#: The code of a ``noqa`` comment naming an FSDP code it does not use (opt-in: ruff's RUF100).
UNUSED_NOQA = "FSDP900"
#: The tool's own findings, beside the registry's rules: code to (name, what it says).
TOOL_RULES = {
    INVALID_SYNTAX: ("invalid-syntax", "the file does not parse as Python"),
    UNUSED_NOQA: (
        "unused-noqa",
        "a noqa comment names a code of this tool that it does not silence on its "
        "line; remove the code (or the comment) so that a real finding is not hidden later",
    ),
}


def rule_name(code: str) -> str:
    """The kebab-case name of a registry rule or of one of :data:`TOOL_RULES`."""
    return TOOL_RULES[code][0] if code in TOOL_RULES else REGISTRY[code].name


class Located(Frozen):
    """A finding with the file it is in.

    Attributes:
        path: The file.
        finding: The finding.
        end: Its end (line, column), where known (the end of the token it points at).
        edits: The edits of its fix, where asked for (:mod:`codemods.cli.fix_edits`).
    """

    __slots__ = _fields = ("path", "finding", "end", "edits")

    path: str
    finding: Finding
    end: tuple[int, int] | None
    edits: tuple[dict, ...] | None

    def __init__(
        self,
        path: str,
        finding: Finding,
        end: tuple[int, int] | None = None,
        edits: tuple[dict, ...] | None = None,
    ) -> None:
        self._set(path=path, finding=finding, end=end, edits=edits)

    @property
    def applicability(self) -> str | None:
        """``"safe"`` or ``"unsafe"`` where an automatic fix exists here, else None."""
        return applicability_of(self.finding)


def applicability_of(finding: Finding) -> str | None:
    """``"safe"`` or ``"unsafe"`` where an automatic fix exists for ``finding``, else None."""
    if finding.code in TOOL_RULES:
        return None
    return applicability(finding, REGISTRY[finding.code].fix.value)


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
    if finding.code in TOOL_RULES:
        return f"{path}:{finding.position}: {finding.code} {finding.message}"
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
        f"{path}:{finding.position}: {finding.code} "
        f"{'[*] ' if marker else ''}{finding.message}{hint}"
    )


def fix_marker(item: Located, settings: Settings) -> bool:
    """Whether ``--fix`` (with this run's ``--unsafe-fixes``) would fix ``item``."""
    finding = item.finding
    if finding.code in TOOL_RULES:
        return False
    rule = REGISTRY[finding.code]
    return not finding.withheld and settings.fixes(rule, finding.fixable, finding.unsafe)


def target_too_old(finding: Finding, settings: Settings | None = None) -> str:
    """Why a finding left unfixed has no fix on the releases the code runs on, or ``""``.

    Example:
        >>> finding = Finding(2, 1, "FSDP121", "deprecated", no_fix="no fix runs on torch 2.2")
        >>> target_too_old(finding)
        'no fix runs on torch 2.2'
    """
    if finding.fixed or finding.fixable or finding.code in TOOL_RULES:
        return ""
    if not REGISTRY[finding.code].fixable:
        return ""  # a manual rule: its message is the recipe (JSON and --report say so)
    return finding.no_fix or ""


def needs_unsafe(finding: Finding) -> bool:
    """Whether the finding is left and an unsafe fix exists for it (``--unsafe-fixes``)."""
    if finding.code in TOOL_RULES:
        return False
    unsafe = applicability(finding, REGISTRY[finding.code].fix.value) == "unsafe"
    return unsafe and not finding.fixed and not finding.withheld


def text(
    items: Sequence[Located],
    settings: Settings,
    settings_for: Callable[[str], Settings] | None = None,
) -> str:
    """:func:`finding_line` for each item, one line each (``settings_for``: each file's).

    A notebook's findings say their cell: ``path:cell 2:1:8: ...``.
    """
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
    r"""A count per rule, most frequent first (``count  CODE  [*] name``), then a trailer.

    Example:
        >>> item = Located("a.py", Finding(1, 1, "FSDP101", "renamed", fixable=True))
        >>> statistics([item, item], Settings()).splitlines()[0]
        '2\tFSDP101\t[*] default-auto-wrap-policy'
        >>> print(statistics([item, item], Settings()).split("\n", 1)[1], end="")
        Found 2 findings.
        [*] 2 fixable with the `--fix` option.
    """
    rows = statistics_rows(items, settings)
    width = len(str(max((row["count"] for row in rows), default=0)))
    table = "".join(
        f"{row['count']:>{width}}\t{row['code']}\t{'[*]' if row['fixable'] else '[ ]'} "
        f"{row['name']}\n"
        for row in rows
    )
    return table + summary(items, 0, settings)


def statistics_rows(items: Sequence[Located], settings: Settings) -> list[dict]:
    """The rows of ``--statistics`` (what its JSON form holds), most frequent first."""
    counts = Counter(i.finding.code for i in items)
    fixable = Counter(i.finding.code for i in items if fix_marker(i, settings))
    return [
        {
            "code": code,
            "name": rule_name(code),
            "count": count,
            "fixable": bool(fixable[code]),
            "fixable_count": fixable[code],
        }
        for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


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
        message = _escape_data(f"{i.path}:{f.position}: {f.code} {f.message}")
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
        if code in TOOL_RULES:
            name, why = TOOL_RULES[code]
            rules.append(
                {
                    "id": code,
                    "name": name,
                    "shortDescription": {"text": why},
                    "fullDescription": {"text": why},
                }
            )
            continue
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
            "level": (
                "error"
                if i.finding.code in TOOL_RULES
                or REGISTRY[i.finding.code].fix is not FixSafety.MANUAL
                else "warning"
            ),
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
