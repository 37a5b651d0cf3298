"""What a run's closing lines say about the files it held back or did not reach."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.batch.runner import FileResult


def skipped_lines(results: list[FileResult]) -> list[str]:
    """``skipped: path: why`` for each file whose new content was held back on purpose."""
    return [f"skipped: {r.path}: {r.skipped}" for r in results if r.skipped]


def stopped_lines(signal_name: str, results: list[FileResult], write: bool) -> list[str]:
    r"""What a stopped run did: a count, then each file written and not reached.

    ``signal_name`` is the signal that stopped it; empty, the run stopped by itself
    (a worker process died, and the pool took no more work).

    Example:
        >>> from codemods.batch.runner import FileResult
        >>> done = [FileResult("a.py", written=True), FileResult("b.py", reached=False)]
        >>> print("\n".join(stopped_lines("SIGTERM", done, write=True)))
        stopped by SIGTERM: 1 file written, 1 not reached (unchanged: run again to finish)
        written: a.py
        not reached: b.py
    """
    written = [r.path for r in results if r.written]
    missing = [r.path for r in results if not r.reached]
    done = (
        f"{_files(len(written))} written"
        if write
        else f"{_files(len(results) - len(missing))} done"
    )
    return [
        f"stopped {f'by {signal_name}' if signal_name else 'early'}: {done}, "
        f"{len(missing)} not reached "
        "(unchanged: run again to finish)",
        *(f"written: {path}" for path in written),
        *(f"not reached: {path}" for path in missing),
    ]


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"
