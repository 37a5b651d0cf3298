r"""Jupyter notebooks (``.ipynb``): their code cells as one Python source, positions by cell.

A notebook is checked as ruff checks one: its code cells are joined into one source,
each cell after a boundary comment of its own, IPython's magics and shell escapes
(``%time``, ``!pip``, a ``%%bash`` cell) turned into comments of the same length, and each
finding is reported in its cell, at its line in that cell (cells counted as ruff
counts them, markdown cells included).

A fixed source is written back only where that loses nothing (:meth:`Notebook.write_back`):
every boundary comment is still there, in order, so each cell gets its own code back;
every magic comes back as it was; and the notebook's JSON is written exactly as it was
read (same key order, indentation and characters) but for the changed cells' source.
Outputs, metadata and the other cells are untouched. Otherwise the notebook is left as
it is and its findings are reported, with the reason.

Example:
    >>> cells = Notebook.read(b'{"cells": [{"cell_type": "code", "source": ["%time x\\n"]},'
    ...     b' {"cell_type": "markdown", "source": "# t"},'
    ...     b' {"cell_type": "code", "source": "import math\\nx = 1"}]}')
    >>> print(cells.source.decode(), end="")
    # fsdp-compat: cell 1
    #time x
    # fsdp-compat: cell 3
    import math
    x = 1
    >>> cells.cell_of(5)
    (3, 2)
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from codemods.batch.results import FileResult
from codemods.findings import Finding
from codemods.settings import Settings

#: Why a notebook's fixes are not written (followed by the reason).
NOT_REWRITTEN = "a notebook whose fixes cannot be written back safely"
#: The comment line that starts each code cell in the joined source.
_BOUNDARY = "# fsdp-compat: cell {}"
_BOUNDARY_LINE = re.compile(r"^# fsdp-compat: cell (\d+)\n", re.MULTILINE)


class NotANotebook(ValueError):
    """The file is not a notebook this tool can read (the message says why)."""


class CannotWriteBack(ValueError):
    """A fixed source cannot go back into the notebook without loss (the message says why)."""


@dataclass(frozen=True)
class Cell:
    """One code cell as read.

    Attributes:
        index: Its place in the notebook's ``cells`` list (0-based).
        text: Its source, as one string.
        as_list: Its source was a list of lines (Jupyter's form), not one string.
        lines: Its lines as joined into the source (magics commented out).
        magics: For each of ``lines``, the magic it was, or None.
    """

    index: int
    text: str
    as_list: bool
    lines: tuple[str, ...] = ()
    magics: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class Notebook:
    """The code cells of a notebook as one source.

    Attributes:
        source: The cells' code, joined, each after its boundary comment, magics
            commented out.
        starts: The line of ``source`` each code cell's first line is on (1-based).
        numbers: The number of each of those cells among all the notebook's cells
            (1-based; markdown cells count, as ruff counts them).
        cells: The code cells as read, in order.
        original: The notebook file's bytes.
    """

    source: bytes
    starts: tuple[int, ...]
    numbers: tuple[int, ...]
    cells: tuple[Cell, ...] = ()
    original: bytes = b""

    @classmethod
    def read(cls, data: bytes) -> Notebook:
        """The notebook in ``data`` (the ``.ipynb`` file's bytes).

        Raises:
            NotANotebook: For bytes that are not a notebook's JSON.
        """
        import json  # only for notebooks: a run over .py files never needs it

        try:
            document = json.loads(data)
            cells = document["cells"]
            if not isinstance(cells, list):
                raise TypeError("its cells are not a list")
        except (ValueError, KeyError, TypeError) as exc:
            raise NotANotebook(f"not a Jupyter notebook: {exc}") from None
        lines: list[str] = []
        starts: list[int] = []
        numbers: list[int] = []
        read: list[Cell] = []
        if _language(document) not in ("python", None):
            cells = []  # an R or Julia notebook: no Python to check, as ruff skips it
        for index, cell in enumerate(cells):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            raw = cell.get("source", "")
            text = "".join(raw) if isinstance(raw, list) else str(raw)
            cell_lines = text.splitlines() or [""]
            magic_cell = cell_lines[0].lstrip().startswith("%%")
            commented = [_commented(line, magic_cell) for line in cell_lines]
            magics = tuple(old if new != old else None for new, old in zip(commented, cell_lines))
            lines.append(_BOUNDARY.format(index + 1))
            starts.append(len(lines) + 1)
            numbers.append(index + 1)
            lines += commented
            read.append(Cell(index, text, isinstance(raw, list), tuple(commented), magics))
        source = "".join(line + "\n" for line in lines)
        return cls(source.encode("utf-8"), tuple(starts), tuple(numbers), tuple(read), data)

    def cell_of(self, line: int) -> tuple[int, int]:
        """The cell number and the line in that cell of ``source``'s ``line``."""
        if not self.starts:
            return (1, line)
        index = max(0, bisect.bisect_right(self.starts, line) - 1)
        return (self.numbers[index], line - self.starts[index] + 1)

    def locate(self, finding: Finding) -> Finding:
        """``finding`` (at a line of ``source``) at its line in its cell."""
        cell, line = self.cell_of(finding.line)
        return finding.replace(line=line, cell=cell)

    def write_back(self, fixed: bytes) -> bytes:
        r"""The notebook file's bytes with the cells of ``fixed`` (a fixed ``source``).

        Raises:
            CannotWriteBack: Where that would lose something: a boundary comment
                gone or moved, a magic not found again, a JSON layout this cannot
                reproduce.

        Example:
            >>> nb = Notebook.read(b'{"cells": [{"cell_type": "code", "source": "a = 1"}]}')
            >>> nb.write_back(nb.source.replace(b"a = 1", b"a = 2"))
            b'{"cells": [{"cell_type": "code", "source": "a = 2"}]}'
        """
        import json  # only for notebooks: a run over .py files never needs it

        text = fixed.decode("utf-8")
        found = list(_BOUNDARY_LINE.finditer(text))
        expected = [str(cell.index + 1) for cell in self.cells]
        if [m.group(1) for m in found] != expected or (found and found[0].start() != 0):
            raise CannotWriteBack("the fix moved code across the notebook's cells")
        document = json.loads(self.original)
        for cell, match, after in zip(self.cells, found, [*found[1:], None]):
            new = text[match.end() : after.start() if after else len(text)]
            new = _restore(new, cell)
            if not cell.text.endswith("\n") and new.endswith("\n"):
                new = new[:-1]  # the joined source ends every line; the cell did not
            if new == cell.text:
                continue
            document["cells"][cell.index]["source"] = (
                new.splitlines(keepends=True) if cell.as_list else new
            )
        return _dumps_like(document, self.original)


def _language(document: dict) -> str | None:
    """The notebook's language, as its metadata names it (None: it does not say)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str):
            return value[field].lower()
    return None


def _restore(text: str, cell: Cell) -> str:
    """``text`` (a cell's fixed code) with each commented magic made the magic it was.

    The k-th line equal to a magic's comment is the k-th such line read, so a comment of
    the user's own that reads the same is never taken for a magic; a fix that changed
    how many such lines there are is refused.
    """
    if not any(cell.magics):
        return text
    lines = text.split("\n")
    for comment in {line for line, magic in zip(cell.lines, cell.magics) if magic}:
        was = [magic for line, magic in zip(cell.lines, cell.magics) if line == comment]
        now = [n for n, line in enumerate(lines) if line == comment]
        if len(now) != len(was):
            raise CannotWriteBack("the fix changed a line holding an IPython magic")
        for n, magic in zip(now, was):
            if magic is not None:
                lines[n] = magic
    return "\n".join(lines)


def _dumps_like(document: object, original: bytes) -> bytes:
    """``document`` as JSON laid out as ``original`` is (Jupyter's or json's defaults).

    Raises:
        CannotWriteBack: If no layout tried gives ``original`` back from its own data.
    """
    import json  # only for notebooks: a run over .py files never needs it

    text = original.decode("utf-8")
    unchanged = json.loads(text)
    newline = "\n" if text.endswith("\n") else ""
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                options = {"indent": indent, "sort_keys": sort_keys, "ensure_ascii": ensure_ascii}
                if json.dumps(unchanged, **options) + newline == text:
                    return (json.dumps(document, **options) + newline).encode("utf-8")
    raise CannotWriteBack("its JSON is laid out in a way this tool cannot write back unchanged")


def _commented(line: str, magic_cell: bool) -> str:
    """``line`` with an IPython magic or shell escape made a comment of the same length."""
    stripped = line.lstrip()
    if magic_cell or stripped.startswith(("%", "!")):
        indent = len(line) - len(stripped)
        return line[:indent] + "#" + stripped[1:]
    return line


def fixing(settings: Settings) -> Settings:
    """``settings`` for a notebook: always a fixing run.

    So each fix is known to go back into the cells (:meth:`Notebook.write_back`)
    before ``[*]`` promises it.
    """
    return settings if settings.fix else settings.replace(fix=True)


def in_cells(result: FileResult, notebook: Notebook) -> FileResult:
    """A notebook's result with its positions in its cells."""
    result.findings = [notebook.locate(f) for f in result.findings]
    if result.syntax is not None:
        result.syntax = cell = notebook.locate(result.syntax)
        result.error = (
            f"cannot parse: {cell.message} (cell {cell.cell}, line {cell.line}, column {cell.col})"
        )
    return result


def into_notebook(result: FileResult, notebook: Notebook) -> FileResult:
    """A notebook's fixed result: its cells' new JSON, or its fixes withheld with why."""
    result = in_cells(result, notebook)
    if result.new_source is None:
        return result
    try:
        new = notebook.write_back(result.new_source)
    except CannotWriteBack as exc:
        why = f"fix withheld: {NOT_REWRITTEN} ({exc})"
        result.findings = [
            f.replace(fixed=False, withheld=why) if f.fixed else f for f in result.findings
        ]
        result.old_source = result.new_source = None
        return result
    result.old_source, result.new_source = notebook.original, new
    return result
