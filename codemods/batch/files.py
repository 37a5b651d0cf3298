"""Finding the files to process, and writing them back without ever losing one.

Files are read and written as bytes: libcst detects the encoding (coding cookie, BOM)
and keeps line endings, so a rewritten file keeps all three.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Directories never walked into (files named explicitly are still processed).
DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "build",
    "dist",
    "__pycache__",
    "node_modules",
    "*.egg-info",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
)


@dataclass(frozen=True)
class Problem:
    """A path that could not be processed, and why (reported, never raised)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _excluded(name: str, patterns: Sequence[str]) -> bool:
    return _pattern(tuple(patterns)).match(os.path.normcase(name)) is not None


@functools.lru_cache(maxsize=8)
def _pattern(patterns: tuple[str, ...]) -> re.Pattern[str]:
    # One regex for all the globs: a walk asks about every name it meets.
    return re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns) or "(?!)")


def discover(
    paths: Iterable[str],
    exclude: Sequence[str] = DEFAULT_EXCLUDES,
    skip: Callable[[Path], bool] | None = None,
) -> tuple[list[Path], list[Problem]]:
    """The Python files under ``paths``, sorted and without duplicates.

    Directories are walked (not following directory symlinks, so a link loop cannot
    trap the walk) for ``*.py`` and ``*.pyi`` files, skipping names matching
    ``exclude`` and paths ``skip`` rules out (a configuration's excludes); a file named
    explicitly is always included.

    Returns:
        The files, and a problem for each path that does not exist.
    """
    files: dict[str, Path] = {}
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(
                    d
                    for d in dirs
                    if not _excluded(d, exclude) and not (skip and skip(Path(root, d)))
                )
                for name in names:
                    if name.endswith((".py", ".pyi")) and not _excluded(name, exclude):
                        found = Path(root, name)
                        if not (skip and skip(found)):
                            files.setdefault(os.path.normpath(found), found)
        elif path.exists() or path.is_symlink():
            files.setdefault(os.path.normpath(path), path)
        else:
            problems.append(Problem(raw, "no such file or directory"))
    return [files[key] for key in sorted(files)], problems


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
