"""FSDP401's conversions that stand together across files: all written, or none.

Before the run, :class:`codemods.cli.project_fsdp1.ProjectFsdp1Checks` settles which
files convert, asking FSDP401 of each file alone: a wrapper call converts because the
FSDP1 checks its models reach are rewritten with their own file, and a file of checks
converts because every wrapper call whose models reach it does. The run itself may
still decide otherwise for one of them (a per-file ignore, the verifier, a failed
write), and then the others' rewrites answer wrong. So such files are run first
without writing (:func:`run_together`); where one of a group did not convert, the
group runs again with FSDP401 held, its finding saying why; a group's files are then
written together, and a write that fails puts back those already written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from codemods.batch import stopping
from codemods.batch.files import ChangedMeanwhile, write_atomic
from codemods.batch.results import FileResult
from codemods.settings import Settings

#: Runs the engine on files: (paths, write, settings for a path) -> their results.
Process = Callable[[list[Path], bool, Callable[[Path], Settings]], list[FileResult]]


def groups(links: Iterable[tuple[Path, Path]]) -> list[frozenset[Path]]:
    """The files linked to each other (directly or through others), group by group.

    Example:
        >>> a, b, c, d = (Path(name) for name in "abcd")
        >>> sorted(sorted(p.name for p in g) for g in groups([(a, b), (c, b), (d, d)]))
        [['a', 'b', 'c'], ['d']]
    """
    found: list[set[Path]] = []
    for first, second in links:
        joined = [group for group in found if first in group or second in group]
        merged = {first, second}.union(*joined)
        found = [group for group in found if group not in joined] + [merged]
    return [frozenset(group) for group in found]


def not_converted(result: FileResult, settings: Settings) -> str | None:
    """Why FSDP401 does not convert the file of ``result`` as settled; None where it does.

    Converted: every FSDP401 finding of the file fixed, or none where FSDP401 runs
    there (its checks answer FSDP2 models already: nothing to rewrite).
    """
    from codemods.registry import REGISTRY

    ours = [finding for finding in result.findings if finding.code == "FSDP401"]
    if result.error is not None:
        return result.error
    if not ours:
        return None if settings.enabled(REGISTRY["FSDP401"]) else "FSDP401 is ignored there"
    withheld = next((f.withheld for f in ours if f.withheld), None)
    if withheld:
        return withheld.removeprefix("fix withheld: ")
    if not all(f.fixed for f in ours) or result.new_source is None:
        return "its fix is not applied in this run"
    return None


def run_together(
    files: Sequence[Path],
    together: list[frozenset[Path]],
    process: Process,
    settings_for: Callable[[Path], Settings],
    write: bool,
) -> list[FileResult]:
    """Run ``files``, the members of each group of ``together`` all or none converted.

    Args:
        files: The run's files, in order.
        together: Groups of files (resolved) whose conversions stand together.
        process: Runs the engine on some files.
        settings_for: Each file's settings.
        write: Write the results (a group's files together).

    Returns:
        The results, in the order of ``files``.
    """
    where = {path.resolve(): index for index, path in enumerate(files)}
    members = [sorted(where[p] for p in group if p in where) for group in together]
    members = [group for group in members if len(group) > 1]
    grouped = sorted({index for group in members for index in group})
    results: list[FileResult | None] = [None] * len(files)
    rest = [index for index in range(len(files)) if index not in set(grouped)]
    for index, result in zip(rest, process([files[i] for i in rest], write, settings_for)):
        results[index] = result
    first = dict(zip(grouped, process([files[i] for i in grouped], False, settings_for)))
    held: dict[Path, str] = {}
    for group in members:
        why = {i: not_converted(first[i], settings_for(files[i])) for i in group}
        missing = next((i for i in group if why[i] is not None), None)
        if missing is None:
            continue
        because = (
            f"{files[missing]} converts together with this file (its FSDP1 checks and the "
            f"models they see) and does not in this run: {why[missing]}"
        )
        held.update({files[i]: because for i in group if first[i].new_source is not None})
    again = [i for i in grouped if files[i] in held]

    def holding(path: Path) -> Settings:
        return settings_for(path).replace(fsdp1_held=held[path])

    first.update(zip(again, process([files[i] for i in again], False, holding)))
    for group in members:
        written = _write_group([first[i] for i in group], [files[i] for i in group], write)
        for index, result in zip(group, written):
            results[index] = result
    return [r if r is not None else FileResult(str(files[i])) for i, r in enumerate(results)]


def _write_group(results: list[FileResult], paths: list[Path], write: bool) -> list[FileResult]:
    """Write a group's results; where one write fails, put back those written before it."""
    if not write:
        return results
    done: list[FileResult] = []
    with stopping.STATE.writing():
        for result, path in zip(results, paths):
            if result.new_source is None or result.old_source is None:
                continue
            try:
                write_atomic(path, result.new_source, result.old_source)
            except (ChangedMeanwhile, OSError) as exc:
                failed = f"{path}: {exc}"
                if isinstance(exc, ChangedMeanwhile):
                    result.skipped = str(exc)
                else:
                    result.error = f"cannot write: {getattr(exc, 'strerror', None) or exc}"
                for other in done:
                    _put_back(other, Path(other.path), failed)
                return results
            result.written = True
            done.append(result)
    return results


def _put_back(result: FileResult, path: Path, failed: str) -> None:
    """Restore a file of a group whose other file could not be written."""
    assert result.old_source is not None and result.new_source is not None
    try:
        write_atomic(path, result.old_source, result.new_source)
    except (ChangedMeanwhile, OSError) as exc:
        result.error = f"written, and not put back ({exc}) after {failed} failed"
        return
    result.written = False
    result.error = f"put back unchanged: its FSDP401 conversion stands with {failed}"
