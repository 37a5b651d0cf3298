"""Run the engine over files, fast and without letting one bad file stop the rest.

Each file is pre-filtered (a text test, then an ``ast`` scan: see
:mod:`codemods.screen.prefilter`), so a file with no legacy spelling is not parsed for
the rules (only checked for what Python refuses: :mod:`codemods.batch.syntax_errors`).
The files that pass are linted on the same ``ast`` tree (:mod:`codemods.astlint.detector`);
only those it leaves undecided, and in a fixing run those with a fix to apply, are parsed
with libcst. Workers start for large runs only, and libcst is imported only where a file
needs it. Per-file errors are reported, never raised.

A run stops cleanly (see :mod:`codemods.batch.stopping`): work goes to the workers a few
batches at a time, so that on SIGINT or SIGTERM no more is handed out; each worker looks
between files and right before each write, and the files the run did not finish come
back as not reached. A file is written only if it still holds the bytes that were read.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from codemods.batch import stopping
from codemods.batch.files import ChangedMeanwhile, read_file, write_atomic
from codemods.batch.pool import Work, in_process, in_workers, one
from codemods.batch.results import FileResult
from codemods.batch.syntax_errors import (
    SyntaxCheck,
    from_libcst,
    newer_python,
    syntax_error,
    unparsable,
)
from codemods.batch.to_parse import ToParse
from codemods.screen.evidence import against_declared, set_aside_notes, with_evidence
from codemods.screen.prefilter import screen
from codemods.settings import Settings
from codemods.syntax.ast_nodes import tree_index
from codemods.syntax.class_bases import names_and_bases

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.astlint.lint import Detection

#: A notebook's suffix: :mod:`codemods.batch.notebooks` loads for a notebook only.
NOTEBOOK = ".ipynb"

#: Below this many files one process does the work: a pool costs more to start than
#: reading and filtering them takes...
POOL_THRESHOLD = 256
#: ... unless they hold this many bytes: files full of FSDP pass the pre-filter, and
#: parsing them and running the ``ast`` detector soon costs more than a pool's start.
POOL_BYTES = 128 * 2**10
#: Files that need parsing and are larger than this are reported and skipped: libcst's
#: name resolution takes minutes on them (generated code, as a rule).
MAX_PARSE_BYTES = 4 * 2**20
#: In a small run, this many files to parse go to worker processes; fewer are parsed
#: here (each worker loads libcst before its first file).
PARSE_IN_WORKERS_FROM = 8


#: What separates the words of a path (directories, extension, snake case is kept whole).
@functools.cache
def _path_parts() -> re.Pattern[str]:
    return re.compile(r"[/\\.\-]+")


def process_source(
    path: str,
    source: bytes,
    settings: Settings,
    prefilter: bool = True,
    on_ast: bool = True,
    detection: Detection | None = None,
) -> FileResult:
    """Run the engine on one file's bytes; parse failures become ``error``.

    ``on_ast=False``: the ``ast`` detector has had its say already (see :func:`_screen`),
    and ``detection`` is its pass, where it made one.
    """
    result = FileResult(path, error=_not_python(source))
    if result.error:
        return result
    if on_ast:
        screened = _screen_source(path, source, settings, prefilter)
        if isinstance(screened, FileResult):
            return screened
        detection = screened.detection
        settings = screened.settings or settings
    result.releases = settings.releases.line()  # for --report: torch 2.4..latest (floor: ...)
    result.notes = set_aside_notes(path, settings)
    if len(source) > MAX_PARSE_BYTES:
        result.error = (
            f"too large to parse ({len(source) / 2**20:.1f} MiB; the limit is "
            f"{MAX_PARSE_BYTES / 2**20:.0f} MiB); skipped, unchanged"
        )
        return result
    import libcst

    from codemods.engine.run import run

    try:
        outcome = run(source, settings, filename=path, detection=detection)
    except libcst.ParserSyntaxError as exc:
        return unparsable(result, syntax_error(source) or from_libcst(exc))
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


def _screen(
    path: Path, settings: Settings, prefilter: bool, hooks: tuple[bytes, ...] = ()
) -> FileResult | ToParse:
    """Read and pre-filter one file: its finished result, or what the engine is to parse.

    ``hooks``: words the answer says whether a Python file's bytes hold (``hook``).
    """
    try:
        source, modified = read_file(path)
    except OSError as exc:
        return FileResult(str(path), error=f"cannot read: {exc.strerror or exc}")
    hook = bool(hooks) and os.fspath(path).endswith(".py") and any(h in source for h in hooks)
    screened = _screen_read(path, source, modified, settings, prefilter, hook)
    if hook and not screened.hook:
        if isinstance(screened, ToParse):
            return screened.replace(hook=True)
        screened.hook = True
    if isinstance(screened, FileResult):  # done: its tree is freed before the next file
        tree_index.cache_clear()
    return screened


def _screen_read(
    path: Path, source: bytes, modified: int, settings: Settings, prefilter: bool, hook: bool
) -> FileResult | ToParse:
    error = _not_python(source)
    if error:
        return FileResult(str(path), error=error)
    if path.suffix != NOTEBOOK:
        cached = modified if path.suffix == ".py" else None  # a stub's cache is its module's
        return _screen_source(str(path), source, settings, prefilter, cached, hook)
    from codemods.batch.notebooks import NotANotebook, Notebook, fixing, in_cells

    try:
        notebook = Notebook.read(source)
    except NotANotebook as exc:
        return FileResult(str(path), error=str(exc))
    screened = _screen_source(str(path), notebook.source, fixing(settings), prefilter)
    if isinstance(screened, ToParse):
        return screened.replace(notebook=notebook)
    return in_cells(screened, notebook)


def _screen_source(
    path: str,
    source: bytes,
    settings: Settings,
    prefilter: bool,
    modified: int | None = None,
    hook: bool = False,
) -> FileResult | ToParse:
    """The result of a file the pre-filter or the ``ast`` detector settles, else libcst's part.

    ``modified``: the modification time of the file ``path`` whose bytes ``source`` are
    (None: standard input, a notebook's cells), so its bytecode cache can vouch for its
    syntax. ``hook``: the file holds a hook's name; where it is ASCII (read as the
    project classes read it) and parsed here, its result's ``hook`` is its names and bases.

    Both pre-filter stages first (they rule out most files of most trees without loading
    the rules' behaviours, and so libcst); then the ``ast`` detector on the tree the
    second stage parsed, cheap enough to run here: only what it leaves goes on to
    libcst, in workers where there are several.
    """
    tree = None
    if prefilter:
        settings, tree = against_declared(source, settings)
        syntax = SyntaxCheck(path, source, modified)
        passed = screen(source, settings, tree, syntax)
        if passed is None:
            if tree is not None:  # parsed for its evidence (a second ask costs nothing)
                syntax.parsed(tree)
            # Nothing to find, but a file Python refuses is reported (see syntax_errors).
            result = FileResult(path, notes=set_aside_notes(path, settings))
            error = syntax.error()
            return result if error is None or newer_python(source) else unparsable(result, error)
        tree = passed.tree
        if tree is not None:  # what the parser takes and the symbol table refuses
            syntax.parsed(tree)
            error = syntax.error()
            if error is not None:
                return unparsable(FileResult(path, notes=set_aside_notes(path, settings)), error)
    evidenced = with_evidence(source, settings, tree)
    if evidenced is not None:
        settings, tree = evidenced
    if len(source) > MAX_PARSE_BYTES or settings.fsdp1_companion:
        # A file converted with its project's FSDP1 calls: FSDP401 rewrites its checks,
        # which the ``ast`` detector has no half for (an ``isinstance`` alone).
        return ToParse(source, settings=settings)
    from codemods.astlint import lint  # not before a file passes the pre-filter

    named = hook and tree is not None and source.isascii() and names_and_bases(tree)
    screened = lint.screen(source, settings, tree)
    if screened.findings is not None:
        found = FileResult(path, screened.findings, releases=settings.releases.line(), hook=named)
        found.notes = set_aside_notes(path, settings)
        return found
    return ToParse(source, screened.detection, settings, hook=named)


def _parse(args: Work) -> FileResult:
    """Run the engine on a screened file and (with ``write``) atomically rewrite it."""
    path, todo, settings, write, before_write = args
    source, notebook, settings = todo.source, todo.notebook, todo.settings or settings
    if notebook is not None:
        from codemods.batch.notebooks import fixing, into_notebook

        settings = fixing(settings)
    result = process_source(
        str(path), source, settings, prefilter=False, on_ast=False, detection=todo.detection
    )
    result.hook = todo.hook
    if notebook is not None:
        result = into_notebook(result, notebook)
        source = notebook.original  # what the file holds, for the write's check
    if write and result.new_source is not None:
        if before_write is not None:
            before_write(path)
        # From here on a signal no longer abandons the file: the write finishes or
        # gives up by itself, right before the replace.
        with stopping.STATE.writing():
            try:
                write_atomic(path, result.new_source, source, stopping.STATE.check)
                result.written = True
            except ChangedMeanwhile as exc:
                result.skipped = str(exc)
            except OSError as exc:
                result.error = f"cannot write: {exc.strerror or exc}; left unchanged"
    return result


def _process(args: Work) -> FileResult:
    """Both stages for one file, in a worker: screen it, and parse it if it passes."""
    path, settings, prefilter, write, before_write, hooks = args
    screened = _screen(path, settings, prefilter, hooks)
    if isinstance(screened, FileResult):
        return screened
    return _parse((path, screened, settings, write, before_write))


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
    score = [-sum(part in words for part in _path_parts().split(str(path))) for path in paths]
    return sorted(range(len(paths)), key=score.__getitem__)


def _chunksize(files: int, jobs: int) -> int:
    # Small enough that a slow file leaves the rest to the others; large enough to send cheaply.
    return max(1, min(16, files // (jobs * 4)))


def _worth_a_pool(paths: Sequence[Path]) -> bool:
    """Whether screening ``paths`` in worker processes beats doing it here."""
    if len(paths) >= POOL_THRESHOLD:
        return True
    if len(paths) < 2:
        return False
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue  # reading it will report why
        if total >= POOL_BYTES:
            return True
    return False


def process_files(
    paths: Sequence[Path],
    settings: Settings,
    write: bool,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    prefilter: bool = True,
    settings_for: Callable[[Path], Settings] | None = None,
    before_write: Callable[[Path], None] | None = None,
    hooks: tuple[bytes, ...] = (),
) -> list[FileResult]:
    """Process ``paths`` (in parallel when there are many), results in input order.

    Two stages: every file is read and pre-filtered, then the files that may hold a
    finding are parsed. A large run (many files, or many bytes: :func:`_worth_a_pool`)
    goes to worker processes whole, each screening its share of the files and parsing
    those that pass (so no process waits for the others to finish screening, and this
    one never loads libcst), the files named most like the old APIs' modules first
    (:func:`likeliest_first`). A small run is screened here, and its files to parse go
    to workers only when there are several.

    ``progress(done, total)`` is called as results come in. ``prefilter=False`` parses
    every file (robustness runs). ``settings_for(path)``, if given, chooses each file's
    settings (``per-file-ignores``).
    ``before_write(path)``, if given, is called right before a file is written (in the
    process that writes it, so it must be picklable when workers run). ``hooks``: words
    each Python file's result says whether its bytes hold (:attr:`FileResult.hook`),
    from the read that screens it.

    Inside :func:`codemods.batch.stopping.on_signals`, SIGINT and SIGTERM stop the run: the
    files it did not finish come back with ``reached=False``, unchanged.
    """
    jobs = jobs or os.cpu_count() or 1
    choose = settings_for or (lambda _: settings)
    results: list[FileResult | None] = [None] * len(paths)
    done = 0

    def finished(index: int, result: FileResult) -> None:
        nonlocal done
        results[index], done = result, done + 1
        if progress is not None:
            progress(done, len(paths))

    def lost(index: int, reason: str) -> None:
        finished(index, FileResult(str(paths[index]), error=reason))

    if jobs > 1 and _worth_a_pool(paths):
        # A work item: path, settings (chosen as its batch goes out, so that the workers
        # start on the first files at once), pre-filter or not, write or not, the hook,
        # the words to look for.
        work = [
            (i, (paths[i], None, prefilter, write, before_write, hooks))
            for i in likeliest_first(paths)
        ]
        chose = lambda item: (item[0], choose(item[0]), *item[2:])  # noqa: E731
        size = _chunksize(len(work), jobs)
        in_workers(_process, work, jobs, finished, size, lost, chose)
    else:
        todo = []
        for index, (path, s) in enumerate(zip(paths, map(choose, paths))):
            if stopping.STATE.requested:
                break
            screened = one(lambda a: _screen(*a), (path, s, prefilter, hooks))
            if screened is None:
                break
            if isinstance(screened, FileResult):
                finished(index, screened)
            elif jobs <= 1:  # parsed at once, on the screening's detector pass
                item = (index, (path, screened, s, write, before_write))
                for _, result in in_process(_parse, [item]):
                    finished(index, result)
            else:
                todo.append((index, (path, screened, s, write, before_write)))
        # The parse stage's items hold what the screening made of each file in place of
        # the pre-filter flag; a worker gets the bytes only (it makes its own ast pass).
        if jobs > 1 and len(todo) >= PARSE_IN_WORKERS_FROM:
            todo = [(i, (p, d.replace(detection=None), s, w, h)) for i, (p, d, s, w, h) in todo]
            workers = min(jobs, len(todo))
            in_workers(_parse, todo, workers, finished, _chunksize(len(todo), workers), lost)
        else:
            for index, result in in_process(_parse, todo):
                finished(index, result)
    return [
        result if result is not None else FileResult(str(path), reached=False)
        for path, result in zip(paths, results)
    ]
