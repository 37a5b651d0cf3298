"""Unified diffs of rewritten files (``--diff`` of both tools), and writing bytes to stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from codemods.batch.runner import FileResult


def unified_diff(result: FileResult) -> bytes:
    r"""A unified diff of the file, in its own bytes, that ``git apply`` accepts.

    Lines end where ``\n`` ends them (a CRLF line keeps its ``\r``, a form feed
    does not split one), and a last line without a newline gets git's
    ``\ No newline at end of file`` marker, so the next file's header starts a line.
    """
    import difflib  # here: a run without --diff never needs it

    # git's a/ and b/ prefixes for relative paths; an absolute path is shown as it is.
    path = os.fsencode(Path(result.path).as_posix())
    before, after = (
        (path, path) if Path(result.path).is_absolute() else (b"a/" + path, b"b/" + path)
    )
    lines = difflib.diff_bytes(
        difflib.unified_diff,
        split_lines(result.old_source or b""),
        split_lines(result.new_source or b""),
        before,
        after,
    )
    return b"".join(
        line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n"
        for line in lines
    )


def split_lines(source: bytes) -> list[bytes]:
    r"""``source`` split after each ``\n`` only, as git and patch count lines."""
    lines = source.split(b"\n")
    return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def write_stdout(data: bytes) -> None:
    """Write ``data`` to standard output as bytes (text-only streams get it decoded)."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (an embedding program's)
        sys.stdout.write(data.decode("utf-8", "replace"))
    else:
        buffer.write(data)
        buffer.flush()
