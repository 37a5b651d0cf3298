"""What a run's fixes were: each unsafe one named, and ``--show-fixes``'s listing.

An unsafe fix may change what the code does, and its finding's message says what: a
run that applies one prints that finding, as it prints those it leaves, so no change
of behaviour goes unnamed (the findings it fixed safely are only counted, as ruff's are).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from codemods.cli.output import applicability_of, rule_name
from codemods.findings import Finding

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.batch.results import FileResult


def fixed_unsafely(finding: Finding) -> bool:
    """Whether an unsafe fix fixed ``finding`` (its message names what may change)."""
    return finding.fixed and applicability_of(finding) == "unsafe"


def unsafe_fix_lines(results: Sequence[FileResult], applied: bool) -> list[str]:
    """A line for each unsafe fix in the files changed (``applied``: written, else shown).

    Example:
        >>> from codemods.batch.results import FileResult
        >>> fixed = Finding(3, 5, "FSDP202", "another backend", fixable=True, fixed=True)
        >>> result = FileResult("a.py", [fixed])
        >>> result.new_source = b""
        >>> unsafe_fix_lines([result], applied=False)
        ['a.py:3:5: FSDP202 another backend [unsafe fix: behaviour may change]']
    """
    state = "unsafe fix applied" if applied else "unsafe fix"
    return [
        f"{r.path}:{f.position}: {f.code} {f.message} [{state}: behaviour may change]"
        for r in results
        if _changed(r, applied)
        for f in r.findings
        if fixed_unsafely(f)
    ]


def _changed(result: FileResult, written: bool) -> bool:
    """Whether ``result``'s fixes took effect: written, or else shown as a change.

    A file that could not be written, or that changed on disk meanwhile, is as it was.
    """
    return result.written if written else result.new_source is not None


def fix_list(results: Sequence[FileResult], written: bool) -> str:
    """``--show-fixes``: the fixes applied (``written``), or that would be, by file and rule.

    A rule's fixes that were unsafe are counted apart, marked ``unsafe``.

    Example:
        >>> from codemods.batch.results import FileResult
        >>> from codemods.findings import Finding
        >>> result = FileResult("a.py", [Finding(1, 1, "FSDP101", "m", True, fixed=True)])
        >>> result.new_source, result.written = b"", True
        >>> print(fix_list([result], written=True), end="")
        <BLANKLINE>
        Fixed 1 finding:
        - a.py:
            1 × FSDP101 (default-auto-wrap-policy)
    """
    done = [
        (r.path, Counter((f.code, fixed_unsafely(f)) for f in r.findings if f.fixed))
        for r in results
        if _changed(r, written)
    ]
    done = [(path, counts) for path, counts in done if counts]
    total = sum(sum(counts.values()) for _, counts in done)
    if not total:
        return "\nNo fixes applied.\n" if written else "\nNo fixes available.\n"
    lines = ["", f"{'Fixed' if written else 'Would fix'} {total} finding{'s' * (total != 1)}:"]
    for path, counts in done:
        lines.append(f"- {path}:")
        lines += [
            f"    {count} × {code} ({rule_name(code)}{', unsafe' * unsafe})"
            for (code, unsafe), count in sorted(counts.items())
        ]
    return "\n".join(lines) + "\n"
