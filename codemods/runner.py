"""Run the engine over files, fast and without letting one bad file stop the rest.

Each file is pre-filtered (a text test, then an ``ast`` scan: see
:mod:`codemods.prefilter`) and only files that can hold a finding are parsed with
libcst, so a file with no legacy spelling is not parsed at all and its syntax errors are
not reported. Worker processes start only for large runs, and libcst is imported only
where a file needs it. Per-file errors are reported, never raised.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
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
#: Files that need parsing and are larger than this are reported and skipped: libcst's
#: name resolution takes minutes on them (generated code, as a rule).
MAX_PARSE_BYTES = 4 * 2**20
#: In a small run, this many files to parse go to worker processes; fewer are parsed
#: here (each worker loads libcst, about 0.2 s, before its first file).
PARSE_IN_WORKERS_FROM = 8
#: What separates the words of a path (directories, extension, snake case is kept whole).
_PATH_PARTS = re.compile(r"[/\\.\-]+")


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
    result = FileResult(path, error=_not_python(source))
    if result.error:
        return result
    if prefilter and not worth_parsing(source, settings):
        return result
    if len(source) > MAX_PARSE_BYTES:
        result.error = (
            f"too large to parse ({len(source) / 2**20:.1f} MiB; the limit is "
            f"{MAX_PARSE_BYTES / 2**20:.0f} MiB); skipped, unchanged"
        )
        return result
    import libcst

    from codemods.run import run

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


def _not_python(source: bytes) -> str | None:
    """Why ``source`` is certainly not Python, or None."""
    if b"\x00" in source:  # Python refuses such a file too; do not guess at its contents
        return "not Python source: it contains NUL bytes"
    return None


def _screen(path: Path, settings: Settings, prefilter: bool) -> FileResult | bytes:
    """Read and pre-filter one file: its finished result, or the bytes to parse."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        return FileResult(str(path), error=f"cannot read: {exc.strerror or exc}")
    error = _not_python(source)
    if error or (prefilter and not worth_parsing(source, settings)):
        return FileResult(str(path), error=error)
    return source


def _parse(args: tuple[Path, bytes, Settings, bool]) -> FileResult:
    """Run the engine on a screened file and (with ``write``) atomically rewrite it."""
    path, source, settings, write = args
    result = process_source(str(path), source, settings, prefilter=False)
    if write and result.new_source is not None:
        try:
            write_atomic(path, result.new_source)
            result.written = True
        except OSError as exc:
            result.error = f"cannot write: {exc.strerror or exc}; left unchanged"
    return result


def _process(args: tuple[Path, Settings, bool, bool]) -> FileResult:
    """Both stages for one file, in a worker: screen it, and parse it if it passes."""
    path, settings, prefilter, write = args
    screened = _screen(path, settings, prefilter)
    if isinstance(screened, FileResult):
        return screened
    return _parse((path, screened, settings, write))


@functools.lru_cache(maxsize=1)
def _module_words() -> frozenset[str]:
    """The module names along the registry's old names: ``fsdp``, ``strategies``, ..."""
    from codemods.registry import REGISTRY

    return frozenset(part for rule in REGISTRY for old in rule.old for part in old.split(".")[:-1])


def likeliest_first(paths: Sequence[Path]) -> list[int]:
    """The indexes of ``paths``, those named most like the old APIs' modules first.

    Only the order of the work changes, never its results. A file that needs parsing
    is the costliest (its worker loads libcst, then parses it), and the sooner one is
    met, the sooner that starts while the other workers go on screening; files named
    like the APIs (``distributed/fsdp/...``, ``strategies.py``) are the likeliest to
    need it. Ties keep their order.

    Example:
        >>> likeliest_first([Path("a/io.py"), Path("a/fsdp/wrap.py"), Path("b/c.py")])
        [1, 0, 2]
    """
    words = _module_words()
    score = [-sum(part in words for part in _PATH_PARTS.split(str(path))) for path in paths]
    return sorted(range(len(paths)), key=score.__getitem__)


def _chunksize(files: int, jobs: int) -> int:
    # Small enough that a worker held up by a slow file leaves the rest to the others;
    # large enough that sending the work costs little.
    return max(1, min(16, files // (jobs * 4)))


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

    Two stages: every file is read and pre-filtered, then the files that may hold a
    finding are parsed. A large run goes to worker processes whole, each screening its
    share of the files and parsing those that pass (so no process waits for the others
    to finish screening, and this one never loads libcst), the files named most like
    the old APIs' modules first (:func:`likeliest_first`). A small run is screened
    here, and its files to parse go to workers only when there are several.

    ``progress(done, total)`` is called as results come in. ``prefilter=False`` parses
    every file, even those the pre-filter rules out (for robustness runs).
    ``settings_for(path)``, if given, chooses each file's settings (``per-file-ignores``).
    """
    jobs = jobs or os.cpu_count() or 1
    choose = settings_for or (lambda _: settings)
    chosen = [choose(path) for path in paths]
    results: list[FileResult | None] = [None] * len(paths)
    done = 0

    def finished(index: int, result: FileResult) -> None:
        nonlocal done
        results[index], done = result, done + 1
        if progress is not None:
            progress(done, len(paths))

    if jobs > 1 and len(paths) >= POOL_THRESHOLD:
        order = likeliest_first(paths)
        work = [(paths[i], chosen[i], prefilter, write) for i in order]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            processed = pool.map(_process, work, chunksize=_chunksize(len(work), jobs))
            for index, result in zip(order, processed):
                finished(index, result)
        return [result for result in results if result is not None]
    todo = []
    for index, (path, s) in enumerate(zip(paths, chosen)):
        screened = _screen(path, s, prefilter)
        if isinstance(screened, FileResult):
            finished(index, screened)
        else:
            todo.append((index, (path, screened, s, write)))
    parsing = [args for _, args in todo]
    with contextlib.ExitStack() as stack:
        parsed: Iterable[FileResult] = map(_parse, parsing)
        if jobs > 1 and len(parsing) >= PARSE_IN_WORKERS_FROM:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=min(jobs, len(parsing))))
            parsed = pool.map(_parse, parsing)
        for (index, _), result in zip(todo, parsed):
            finished(index, result)
    return [result for result in results if result is not None]
