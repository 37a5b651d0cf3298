"""The names a run leaves out: the built-in ones, and the test of a path against them.

Kept apart from :mod:`codemods.batch.files` (which names files with ``pathlib``) so that
``fsdp-lint``'s answer for a file that names nothing legacy
(:mod:`codemods.cli.plain_file`) reads them without loading ``pathlib``.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Sequence

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


def excluded(name: str, patterns: Sequence[str]) -> bool:
    """Whether a file or directory name matches one of the glob ``patterns``.

    Example:
        >>> excluded("pkg.egg-info", DEFAULT_EXCLUDES), excluded("src", DEFAULT_EXCLUDES)
        (True, False)
    """
    names, globs = _matcher(tuple(patterns))
    name = os.path.normcase(name)
    return name in names or (globs is not None and globs.match(name) is not None)


@functools.lru_cache(maxsize=8)
def _matcher(patterns: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """The names among ``patterns`` without a wildcard, and one regex for the others.

    A name without ``*``, ``?`` or ``[`` matches itself alone, and a set answers for
    it: a commit hook's one file would otherwise compile a regex of all the built-in
    names (about 0.4 ms of its CPU). One regex for all the globs: a walk asks about
    every name it meets.

    Example:
        >>> names, globs = _matcher(("build", "*.egg-info"))
        >>> sorted(names), globs.match("pkg.egg-info") is not None
        (['build'], True)
    """
    cased = [os.path.normcase(p) for p in patterns]
    globs = [p for p in cased if _WILDCARDS.intersection(p)]
    names = frozenset(p for p in cased if not _WILDCARDS.intersection(p))
    return names, re.compile("|".join(fnmatch.translate(p) for p in globs)) if globs else None


#: What makes a pattern a glob for :mod:`fnmatch`.
_WILDCARDS = frozenset("*?[")


def named_excluded(path: str, patterns: Sequence[str]) -> bool:
    """Whether a path named on the command line, or a directory it is named under, is excluded.

    Only the parts of the path as written count (not ``.``, ``..``, a drive or the
    root): a project that itself sits in a ``build`` directory is still checked.

    Example:
        >>> named_excluded("vendor/.venv/site.py", DEFAULT_EXCLUDES)
        True
        >>> named_excluded("../build/./src/train.py", ("venv",))
        False
    """
    written = os.path.splitdrive(path)[1]
    if os.altsep:
        written = written.replace(os.altsep, os.sep)
    return any(
        excluded(part, patterns) for part in written.split(os.sep) if part not in ("", ".", "..")
    )
