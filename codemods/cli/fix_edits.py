"""The edits of each finding's fix, for ``--output-format json`` (ruff's ``fix.edits``).

A fix here is a libcst rewrite of the whole file, not a list of edits; so the edits of
a finding are found by running its rule's fix alone on the file (what ``--select CODE
--fix --unsafe-fixes`` would write) and cutting the change into line hunks: a hunk
that holds the finding's line is that finding's, and a hunk that holds no finding of
the rule (an import added or removed) goes to the rule's first finding in the file.
Only the formats that show edits pay for these runs.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from codemods.batch.runner import process_source
from codemods.cli.output import Located
from codemods.settings import Settings

#: One edit: ``{"content", "location", "end_location"}``, rows and columns 1-based.
Edit = dict


def hunks(old: bytes, new: bytes) -> list[tuple[int, int, Edit]]:
    r"""The line hunks turning ``old`` into ``new``: ``(first, last old line, edit)``.

    Example:
        >>> ((first, last, edit),) = hunks(b"a\nb\nc\n", b"a\nB\nc\n")
        >>> first, last, edit["content"], edit["location"], edit["end_location"]
        (2, 2, 'B\n', {'row': 2, 'column': 1}, {'row': 3, 'column': 1})
    """
    before = old.decode("utf-8", "replace").splitlines(keepends=True)
    after = new.decode("utf-8", "replace").splitlines(keepends=True)
    found = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edit = {
            "content": "".join(after[j1:j2]),
            "location": {"row": i1 + 1, "column": 1},
            "end_location": {"row": i2 + 1, "column": 1},
        }
        found.append((i1 + 1, max(i1 + 1, i2), edit))
    return found


def with_edits(items: Sequence[Located], settings_for: Callable[[str], Settings]) -> list[Located]:
    """``items``, each with a fix given the edits of that fix (see the module's text)."""
    by_file: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, item in enumerate(items):
        if item.applicability is not None and item.finding.cell is None:
            by_file[item.path][item.finding.code].append(index)
    edits: dict[int, list[Edit]] = defaultdict(list)
    for path, codes in by_file.items():
        try:
            source = Path(path).read_bytes()
        except OSError:
            continue
        for code, indexes in codes.items():
            settings = settings_for(path).replace(
                select=(code,), ignore=(), fix=True, unsafe_fixes=True
            )
            fixed = process_source(path, source, settings).new_source
            if fixed is None:
                continue
            lines = {items[i].finding.line: i for i in indexes}
            for first, last, edit in hunks(source, fixed):
                owner = next(
                    (lines[line] for line in range(first, last + 1) if line in lines),
                    indexes[0],
                )
                edits[owner].append(edit)
    return [
        item.replace(edits=tuple(edits[index])) if index in edits else item
        for index, item in enumerate(items)
    ]
