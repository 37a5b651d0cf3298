"""Run the engine over files, fast and without letting one bad file stop the rest.

Each file is pre-filtered (a text test, then an ``ast`` scan: see
:mod:`codemods.prefilter`) and only files that can hold a finding are parsed with
libcst, so a file with no legacy spelling is not parsed at all and its syntax errors are
not reported. Worker processes start only for large runs, and libcst is imported only
where a file needs it. Per-file errors are reported, never raised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from codemods.findings import Finding
from codemods.prefilter import worth_parsing
from codemods.settings import Settings
from codemods.sources import write_atomic

#: Below this many files one process does the work: a pool costs more to start than
#: reading and filtering them (about half a millisecond each) takes.
POOL_THRESHOLD = 256


@dataclass
class FileResult:
    """What happened to one file.

    Attributes:
        path: The file as named on the command line (or found in a directory).
        findings: What the engine found.
        old_source: The bytes read (kept only when the file changes, for diffs).
        new_source: The rewritten bytes, or None when nothing changes.
        error: Why the file could not be processed, or None.
        written: The new bytes were written to disk.
        crashed: The engine itself failed on this file (a bug to report).
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    old_source: bytes | None = None
    new_source: bytes | None = None
    error: str | None = None
    written: bool = False
    crashed: bool = False


def process_source(
    path: str, source: bytes, settings: Settings, prefilter: bool = True
) -> FileResult:
    """Run the engine on one file's bytes; parse failures become ``error``."""
    result = FileResult(path)
    if prefilter and not worth_parsing(source, settings):
        return result
    import libcst

    from codemods.engine import run

    try:
        outcome = run(source, settings, filename=path)
    except libcst.ParserSyntaxError as exc:
        result.error = (
            f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column + 1})"
        )
        return result
    except (UnicodeDecodeError, LookupError, SyntaxError, ValueError) as exc:
        result.error = f"cannot decode or parse: {exc}"
        return result
    except Exception as exc:  # noqa: BLE001 - one file's engine failure must not stop the run
        result.error = f"internal error ({type(exc).__name__}: {exc}); please report it"
        result.crashed = True
        return result
    result.findings = outcome.findings
    if outcome.new_source is not None:
        result.old_source, result.new_source = source, outcome.new_source
    return result


def process_file(path: Path, settings: Settings, write: bool, prefilter: bool = True) -> FileResult:
    """Read, pre-filter, process and (with ``write``) atomically rewrite one file."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        return FileResult(str(path), error=f"cannot read: {exc.strerror or exc}")
    result = process_source(str(path), source, settings, prefilter)
    if write and result.new_source is not None:
        try:
            write_atomic(path, result.new_source)
            result.written = True
        except OSError as exc:
            result.error = f"cannot write: {exc.strerror or exc}; left unchanged"
    return result


def _process(args: tuple[Path, Settings, bool, bool]) -> FileResult:
    return process_file(*args)


def process_files(
    paths: Sequence[Path],
    settings: Settings,
    write: bool,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    prefilter: bool = True,
    settings_for: Callable[[Path], Settings] | None = None,
) -> list[FileResult]:
    """Process ``paths`` (in parallel when there are many), results in input order.

    ``progress(done, total)`` is called as results come in. ``prefilter=False`` parses
    every file, even those the pre-filter rules out (for robustness runs).
    ``settings_for(path)``, if given, chooses each file's settings (``per-file-ignores``).
    """
    jobs = jobs or os.cpu_count() or 1
    choose = settings_for or (lambda _: settings)
    work = [(path, choose(path), write, prefilter) for path in paths]
    results: list[FileResult] = []
    with contextlib.ExitStack() as stack:
        if jobs <= 1 or len(work) < POOL_THRESHOLD:
            stream: Iterable[FileResult] = map(_process, work)
        else:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs))
            # Big chunks: most files are only read and filtered, which costs less than
            # sending each one to a worker on its own.
            stream = pool.map(_process, work, chunksize=max(1, len(work) // (jobs * 4)))
        for result in stream:
            results.append(result)
            if progress is not None:
                progress(len(results), len(work))
    return results
