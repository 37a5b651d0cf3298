"""Directories made absolute as :meth:`pathlib.Path.resolve` makes them, each once.

A run over a tree asks for the real place of every file (the project classes follow
imports to files, each file's project root is looked up): its files share a few
hundred directories. ``Path.resolve`` looks at every part of a path (``lstat`` of each
of a dozen parents for a file in torch's tree); here a directory that is not a link is
its parent's resolution and its name, so each directory costs one look once its
parent is known.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The parts of a path that name no directory of their own.
_NOT_NAMES = frozenset({"", os.curdir, os.pardir})


class ResolvedDirectories:
    """Each directory asked about, resolved (None: it cannot be, as a link that loops).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "real" / "sub").mkdir(parents=True)
        >>> (root / "link").symlink_to(root / "real")
        >>> resolved = ResolvedDirectories()
        >>> resolved(str(root / "link" / "sub")) == (root / "real" / "sub").resolve()
        True
    """

    def __init__(self) -> None:
        self._known: dict[str, Path | None] = {}

    def __call__(self, directory: str) -> Path | None:
        """``directory`` (as the run spells it; ``""``: the current one) made absolute."""
        known = self._known
        if directory not in known:
            known[directory] = self._resolve(directory)
        return known[directory]

    def _resolve(self, directory: str) -> Path | None:
        parent, name = os.path.split(directory)
        try:
            if parent and parent != directory and name not in _NOT_NAMES:
                if not os.path.islink(directory):
                    above = self(parent)
                    return None if above is None else above / name
            return Path(directory or os.curdir).resolve()
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop on Python < 3.13
            return None
