"""Findings as JSON, in ruff's shape: ends, fixes with their edits, cells.

See :func:`as_json`; lint computes the ends (:func:`with_ends`) and the edits
(:mod:`codemods.cli.fix_edits`) only for this format.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from codemods.cli.output import RULES_URL, Located, rule_name
from codemods.findings import INVALID_SYNTAX


def with_ends(items: Sequence[Located]) -> list[Located]:
    """``items`` with their ends: the end of the token each finding points at.

    Each file is read again and tokenized (only for the formats that show ends); a
    file that cannot be, a notebook or standard input keeps ends equal to starts.
    """
    import io
    import tokenize

    ends: dict[str, dict[tuple[int, int], tuple[int, int]]] = {}
    for path in {i.path for i in items}:
        ends[path] = {}
        if path.endswith(".ipynb"):
            continue
        try:
            with open(path, "rb") as handle:
                tokens = list(tokenize.tokenize(io.BytesIO(handle.read()).readline))
        except (OSError, SyntaxError, tokenize.TokenError, UnicodeDecodeError, LookupError):
            continue
        for token in tokens:
            ends[path].setdefault(
                (token.start[0], token.start[1] + 1), (token.end[0], token.end[1] + 1)
            )
    return [
        i.replace(end=ends[i.path].get((i.finding.line, i.finding.col)))
        if i.finding.cell is None
        else i
        for i in items
    ]


def _fix_json(item: Located) -> dict | None:
    """The ``fix`` object of a finding in JSON: its applicability and its edits."""
    if item.applicability is None:
        return None
    return {"applicability": item.applicability, "edits": list(item.edits or ())}


def as_json(items: Sequence[Located]) -> str:
    """A JSON array, one object per finding (ruff's fields where they apply)."""
    return (
        json.dumps(
            [
                {
                    "cell": i.finding.cell,
                    "code": i.finding.code,
                    "name": rule_name(i.finding.code),
                    "message": i.finding.message,
                    "filename": i.path,
                    "location": {"row": i.finding.line, "column": i.finding.col},
                    "end_location": (
                        {"row": i.end[0], "column": i.end[1]}
                        if i.end
                        else {"row": i.finding.line, "column": i.finding.col}
                    ),
                    "fix": _fix_json(i),
                    "no_fix": i.finding.no_fix,
                    "noqa_row": i.finding.line,
                    "url": (
                        None
                        if i.finding.code == INVALID_SYNTAX
                        else f"{RULES_URL}#{i.finding.code.lower()}"
                    ),
                }
                for i in items
            ],
            indent=2,
        )
        + "\n"
    )
