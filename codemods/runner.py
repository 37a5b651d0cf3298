"""Run the engine over files, fast and without letting one bad file stop the rest.

A cheap text pre-filter means only files that can hold a finding are parsed (a file
with no legacy spelling is not parsed at all, so its syntax errors are not reported);
per-file errors are reported instead of raised; worker processes start only for large
runs.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from codemods.engine import Finding, Settings, run
from codemods.registry import REGISTRY, Rule
from codemods.sources import write_atomic

#: Below this many candidate files one process does the work: a pool costs more to start.
POOL_THRESHOLD = 64


def rule_tokens(rule: Rule) -> set[str]:
    """Words that must appear in a file for ``rule`` to find anything in it.

    An alias still needs the original name on its import line, so the last part of
    each old name (or the argument, for argument rules) is enough.
    """
    if rule.argument:
        tokens = {rule.argument}
    else:
        tokens = {name.rpartition(".")[2] for name in rule.old}
    tokens |= {value for value, _ in rule.values if isinstance(value, str)}
    return tokens


@functools.lru_cache(maxsize=16)
def prefilter(settings: Settings) -> re.Pattern[bytes]:
    """A pattern that matches every file in which an enabled rule could find something."""
    tokens = set().union(*(rule_tokens(r) for r in REGISTRY if settings.enabled(r)))
    if not tokens:
        return re.compile(rb"(?!)")  # matches nothing
    return re.compile(b"|".join(re.escape(t.encode()) for t in sorted(tokens)))


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
    """

    path: str
    findings: list[Finding] = field(default_factory=list)
    old_source: bytes | None = None
    new_source: bytes | None = None
    error: str | None = None
    written: bool = False


def process_source(path: str, source: bytes, settings: Settings) -> FileResult:
    """Run the engine on one file's bytes; parse failures become ``error``."""
    import libcst

    result = FileResult(path)
    if not prefilter(settings).search(source):
        return result
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
    result.findings = outcome.findings
    if outcome.new_source is not None:
        result.old_source, result.new_source = source, outcome.new_source
    return result


def process_file(path: Path, settings: Settings, write: bool) -> FileResult:
    """Read, process and (with ``write``) atomically rewrite one file."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        return FileResult(str(path), error=f"cannot read: {exc.strerror or exc}")
    result = process_source(str(path), source, settings)
    if write and result.new_source is not None:
        try:
            write_atomic(path, result.new_source)
            result.written = True
        except OSError as exc:
            result.error = f"cannot write: {exc.strerror or exc}; left unchanged"
    return result


def _process(args: tuple[Path, Settings, bool]) -> FileResult:
    return process_file(*args)


def process_files(
    paths: Sequence[Path], settings: Settings, write: bool, jobs: int | None = None
) -> list[FileResult]:
    """Process ``paths`` (in parallel when there are many), results in input order."""
    jobs = jobs or os.cpu_count() or 1
    work = [(path, settings, write) for path in paths]
    if jobs <= 1 or len(work) < POOL_THRESHOLD:
        return [_process(item) for item in work]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_process, work, chunksize=max(1, len(work) // (jobs * 8))))
