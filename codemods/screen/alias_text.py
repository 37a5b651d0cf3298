"""Text patterns of the local names a module gives an old name: ``as m``, ``m = a.b.X``.

The pre-filter (:mod:`codemods.screen.prefilter`) asks them only of files that already
spell the words concerned; the detectors follow both kinds of alias
(``Names._find_aliases`` for the assignment), so the text test must let both through.
"""

from __future__ import annotations

import functools
import re

__all__ = ["alias", "assigned"]


@functools.cache
def alias(name: bytes) -> re.Pattern[bytes]:
    r"""``as name``, or ``name = ...`` opening a line (a module-level alias by assignment).

    Example:
        >>> bool(alias(b"FSDP").search(b"x = 1\nFSDP = FullyShardedDataParallel\n"))
        True
        >>> bool(alias(b"FSDP").search(b"if FSDP == 1: pass\n"))
        False
    """
    name = re.escape(name)
    return re.compile(rb"\bas\s+" + name + rb"\b|^" + name + rb"[ \t]*=(?!=)", re.MULTILINE)


@functools.cache
def assigned(word: bytes) -> re.Pattern[bytes]:
    r"""A line ``alias = a.b.word``: ``word`` may be a module's member, aliased.

    Example:
        >>> pattern = assigned(b"FullyShardedDataParallel")
        >>> bool(pattern.search(b"F = fsdp.FullyShardedDataParallel\n"))
        True
        >>> bool(pattern.search(b"F = FullyShardedDataParallel(m)\n"))
        False
    """
    value = rb"(?:[A-Za-z_]\w*[ \t]*\.[ \t]*)*" + re.escape(word)
    return re.compile(rb"^[A-Za-z_]\w*[ \t]*=[ \t]*" + value + rb"[ \t]*(?:#.*)?\r?$", re.MULTILINE)
