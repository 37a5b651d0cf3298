"""Finding the files to process, and writing them back without ever losing one.

Files are read and written as bytes: libcst detects the encoding (coding cookie, BOM)
and keeps line endings, so a rewritten file keeps all three.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from codemods.batch.excludes import DEFAULT_EXCLUDES, excluded, named_excluded
from codemods.records import Frozen


class Problem(Frozen):
    """A path that could not be processed, and why (reported, never raised)."""

    __slots__ = _fields = ("path", "reason")

    path: str
    reason: str

    def __init__(self, path: str, reason: str) -> None:
        self._set(path=path, reason=reason)

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def discover(
    paths: Iterable[str],
    exclude: Sequence[str] = DEFAULT_EXCLUDES,
    skip: Callable[[Path], bool] | None = None,
    force_exclude: bool = False,
    respect_gitignore: bool = False,
) -> tuple[list[Path], list[Problem]]:
    """The Python files (and notebooks) under ``paths``, sorted and without duplicates.

    Directories are walked (not following directory symlinks, so a link loop cannot
    trap the walk) for ``*.py``, ``*.pyi`` and ``*.ipynb`` files, skipping names
    matching ``exclude``, paths ``skip`` rules out (a configuration's excludes) and,
    with ``respect_gitignore``, what the repository's ``.gitignore`` files ignore. A
    file named explicitly is included, unless ``force_exclude`` is set and it, or one of
    the directories it is named under, is excluded (pre-commit names every file).

    Returns:
        The files, and a problem for each path that does not exist.
    """
    files: dict[str, Path] = {}
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if force_exclude and _force_excluded(path, exclude, skip):
            continue
        if path.is_dir():
            git = None
            if respect_gitignore:
                from codemods.batch.gitignore import ignorer  # a walk's: not a named file's

                git = ignorer(path)
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(
                    d
                    for d in dirs
                    if not excluded(d, exclude)
                    and not (skip and skip(Path(root, d)))
                    and not (git and git.ignored_in(root, d, is_dir=True))
                )
                here = Path(root)  # each file a child of it: quicker than a Path of its own
                for name in names:
                    if name.endswith(SUFFIXES) and not excluded(name, exclude):
                        found = here / name
                        if not (skip and skip(found)) and not (
                            git and git.ignored_in(root, name, is_dir=False)
                        ):
                            files.setdefault(os.path.normpath(found), found)
        elif path.exists() or path.is_symlink():
            files.setdefault(os.path.normpath(path), path)
        else:
            problems.append(Problem(raw, "no such file or directory"))
    return [files[key] for key in sorted(files)], problems


#: What a directory walk collects.
SUFFIXES = (".py", ".pyi", ".ipynb")


def read_file(path: str | os.PathLike[str]) -> tuple[bytes, int]:
    """The bytes of ``path``, and its modification time (ns) as they were read.

    What ``Path.read_bytes`` reads, without its file object (a fifth of its cost over
    torch's 2,328 files); the time is the opened file's, where a later ``stat`` could
    see another file written in its place.

    Raises:
        OSError: It cannot be opened or read (a directory: ``Is a directory``).
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        status = os.fstat(descriptor)
        parts = [os.read(descriptor, status.st_size + 1)]
        while parts[-1]:  # up to the end: a file that grew, a pipe
            parts.append(os.read(descriptor, 1 << 16))
    finally:
        os.close(descriptor)
    return (parts[0] if len(parts) == 2 else b"".join(parts)), status.st_mtime_ns


def _force_excluded(
    path: Path, exclude: Sequence[str], skip: Callable[[Path], bool] | None
) -> bool:
    """Whether a path named on the command line, or a directory it is under, is excluded.

    Only the parts of the path as written count for the built-in names (``.venv``): a
    project that itself sits in a ``build`` directory is still checked.
    """
    if named_excluded(str(path), exclude):
        return True
    return skip is not None and any(skip(p) for p in [path, *(p for p in path.parents if p.name)])


class ChangedMeanwhile(Exception):
    """The file no longer holds the bytes the run read: it was saved (or deleted) since."""


_CHANGED = "changed on disk since it was read; not overwritten (run again to migrate it)"
_GONE = "deleted since it was read; not written again"


def write_atomic(
    path: Path,
    data: bytes,
    expected: bytes | None = None,
    last_check: Callable[[], None] | None = None,
) -> None:
    """Replace ``path``'s content with ``data`` in one step, keeping its permissions.

    The data goes to a temporary file beside ``path``, is flushed to disk, and is
    renamed over it, so a reader (or a crash) sees either the old file or the new one.
    Right before the rename, ``last_check()`` may raise to abandon the write, and the
    file is read again: if it no longer holds ``expected`` (someone saved it since it
    was read), it is left as it is. Only the rename itself comes after that look.

    Raises:
        ChangedMeanwhile: If the file does not hold ``expected`` any more.
        OSError: If the directory is not writable or the rename fails.
        BaseException: Whatever ``last_check`` raises.

        In every case ``path`` is unchanged and no temporary file is left behind.
    """
    target = Path(os.path.realpath(path))  # rewrite a symlink's target, keep the link
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        if expected is None:
            raise
        raise ChangedMeanwhile(_GONE) from None
    # The mode is honoured even for root, who could write anyway: read-only means hands off.
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise PermissionError(f"{path} is read-only")
    import tempfile  # here: a run that writes nothing never needs it (nor shutil, random)

    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        if last_check is not None:
            last_check()
        if expected is not None:
            current = _current(target)
            if current is None:
                raise ChangedMeanwhile(_GONE)
            if current != expected:
                raise ChangedMeanwhile(_CHANGED)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _current(path: Path) -> bytes | None:
    """What ``path`` holds now (None: it is gone or unreadable)."""
    try:
        return path.read_bytes()
    except OSError:
        return None
