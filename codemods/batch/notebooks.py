r"""Jupyter notebooks (``.ipynb``): their code cells as one Python source, positions by cell.

A notebook is checked as ruff checks one: its code cells are joined into one source
(each cell starting on a new line), IPython's magics and shell escapes (``%time``,
``!pip``, a ``%%bash`` cell) turned into comments of the same length, and each finding
is reported in its cell, at its line in that cell. Notebooks are reported, never
rewritten: splitting a rewritten source back into cells (an import added to the first,
magics restored) is not something this tool can yet promise to do without loss.

Example:
    >>> cells = Notebook.read(b'{"cells": [{"cell_type": "code", "source": ["%time x\\n"]},'
    ...     b' {"cell_type": "markdown", "source": "# t"},'
    ...     b' {"cell_type": "code", "source": "import torch\\nx = 1"}]}')
    >>> cells.source
    b'#time x\nimport torch\nx = 1\n'
    >>> cells.cell_of(2)
    (3, 1)
"""

from __future__ import annotations

import bisect
import dataclasses
import json
from dataclasses import dataclass

from codemods.findings import Finding

SUFFIX = ".ipynb"

#: Why a notebook's fixes are not written.
NOT_REWRITTEN = "a notebook: its findings are reported, its cells are not rewritten"


class NotANotebook(ValueError):
    """The file is not a notebook this tool can read (the message says why)."""


@dataclass(frozen=True)
class Notebook:
    """The code cells of a notebook as one source.

    Attributes:
        source: The cells' code, joined, magics commented out.
        starts: The line of ``source`` each code cell starts on (1-based), in order.
        numbers: The number of each of those cells among all the notebook's cells
            (1-based; markdown cells count, as ruff counts them).
    """

    source: bytes
    starts: tuple[int, ...]
    numbers: tuple[int, ...]

    @classmethod
    def read(cls, data: bytes) -> Notebook:
        """The notebook in ``data`` (the ``.ipynb`` file's bytes).

        Raises:
            NotANotebook: For bytes that are not a notebook's JSON.
        """
        try:
            document = json.loads(data)
            cells = document["cells"]
        except (ValueError, KeyError, TypeError) as exc:
            raise NotANotebook(f"not a Jupyter notebook: {exc}") from None
        lines: list[str] = []
        starts: list[int] = []
        numbers: list[int] = []
        for number, cell in enumerate(cells, start=1):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            text = cell.get("source", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            starts.append(len(lines) + 1)
            numbers.append(number)
            cell_lines = text.splitlines() or [""]
            magic_cell = cell_lines[0].lstrip().startswith("%%")
            lines += [_commented(line, magic_cell) for line in cell_lines]
        source = "".join(line + "\n" for line in lines)
        return cls(source.encode("utf-8"), tuple(starts), tuple(numbers))

    def cell_of(self, line: int) -> tuple[int, int]:
        """The cell number and the line in that cell of ``source``'s ``line``."""
        if not self.starts:
            return (1, line)
        index = max(0, bisect.bisect_right(self.starts, line) - 1)
        return (self.numbers[index], line - self.starts[index] + 1)

    def locate(self, finding: Finding) -> Finding:
        """``finding`` (at a line of ``source``) at its line in its cell."""
        cell, line = self.cell_of(finding.line)
        return dataclasses.replace(finding, line=line, cell=cell)


def _commented(line: str, magic_cell: bool) -> str:
    """``line`` with an IPython magic or shell escape made a comment of the same length."""
    stripped = line.lstrip()
    if magic_cell or stripped.startswith(("%", "!")):
        indent = len(line) - len(stripped)
        return line[:indent] + "#" + stripped[1:]
    return line
