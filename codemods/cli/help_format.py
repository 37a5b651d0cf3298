"""The tools' help formatter: argparse's, without ``shutil`` at start (issue 44)."""

from __future__ import annotations

import argparse
import os
import sys


def terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it: ``COLUMNS``, else asked."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, sized without importing ``shutil``.

    argparse builds a formatter for each option it adds (to check its metavar), and the
    first imported ``shutil`` and its compression modules for the terminal's width: about
    2 ms of a commit hook's 70 (issue 44).
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)
