r"""The README's figures of issue 44, written from a run of ``benchmarks/goals.py``.

``python benchmarks/goals.py --readme ...`` replaces what stands between the two markers
of README.md with the run's table and where it ran, so that the README quotes a
measurement, not a retelling of one.

Example:
    >>> text = f"intro\n{START}\nold\n{END}\nrest\n"
    >>> print(between_markers(text, "new"))
    intro
    <!-- goals.py: start -->
    new
    <!-- goals.py: end -->
    rest
    <BLANKLINE>
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

START = "<!-- goals.py: start -->"
END = "<!-- goals.py: end -->"


def between_markers(text: str, block: str) -> str:
    """``text`` with what lies between :data:`START` and :data:`END` replaced by ``block``.

    Raises:
        ValueError: The markers are missing, or in the wrong order.
    """
    start, end = text.find(START), text.find(END)
    if start == -1 or end < start:
        raise ValueError(f"README.md needs the lines {START} and {END}, in that order")
    return text[: start + len(START)] + "\n" + block + "\n" + text[end:]


def block(table: str, command: list[str], root: Path) -> str:
    """The table in a fenced block, after a line saying when, where and how it was made."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    return (
        f"`{' '.join(command)}` at {commit or 'an unknown commit'}, {when}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at the end:\n\n"
        f"```text\n{table}\n```"
    )


def write(readme: Path, table: str, command: list[str]) -> None:
    """Put ``table`` between README.md's markers (the rest of the file as it was)."""
    text = readme.read_text(encoding="utf-8")
    readme.write_text(between_markers(text, block(table, command, readme.parent)), encoding="utf-8")
