"""Progress of a long run on stderr: a live line on a terminal, a line per step in CI logs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

#: Runs with at least this many files show progress.
PROGRESS_MIN_FILES = 200
#: Without a terminal (a CI log), a line each time this share of the files is done.
LOG_STEP = 0.10


def progress_printer(
    total: int, clock: Callable[[], float] = time.monotonic
) -> Callable[[int, int], None] | None:
    r"""A ``progress(done, total)`` printer for long runs, else None.

    On a terminal one line is rewritten in place: ``done/total files (P%), ETA Ns``.
    Elsewhere (stderr is a file or a pipe, as in CI), a line is printed each tenth of
    the run, so a log shows the run moving without a line per file.

    Example:
        >>> import contextlib, io
        >>> times, err = iter([0.0, 10.0]), io.StringIO()
        >>> with contextlib.redirect_stderr(err):  # not a terminal: a line each tenth
        ...     show = progress_printer(200, clock=lambda: next(times))
        ...     show(19, 200)
        ...     show(20, 200)
        >>> err.getvalue()
        '20/200 files (10%), ETA 90s\n'
    """
    if total < PROGRESS_MIN_FILES:
        return None
    terminal = sys.stderr.isatty()
    start = clock()
    step = max(1, int(total * LOG_STEP))

    def show(done: int, total: int) -> None:
        if not terminal and done % step and done != total:
            return
        elapsed = clock() - start
        left = elapsed / done * (total - done) if done else 0.0
        text = f"{done}/{total} files ({100 * done // total}%)"
        text += f", ETA {left:.0f}s" if done < total else f", {elapsed:.0f}s"
        if terminal:
            end = "\n" if done == total else ""
            print(f"\r\033[K{text}", end=end, file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr, flush=True)

    return show
