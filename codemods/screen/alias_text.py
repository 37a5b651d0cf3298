"""Text patterns of the local names a module gives an old name: ``as m``, ``m = a.b.X``.

The pre-filter (:mod:`codemods.screen.prefilter`) asks them only of files that already
spell the words concerned; the detectors follow both kinds of alias
(``Names._find_aliases`` for the assignment), so the text test must let both through.
"""

from __future__ import annotations

import functools
import re

from codemods.screen.import_lines import IDENTIFIER_BYTES, whole_words

__all__ = ["alias", "aliases", "assigned", "assigns"]


@functools.cache
def alias(name: bytes) -> re.Pattern[bytes]:
    r"""``as name``, or ``name = ...`` opening a line (a module-level alias by assignment).

    :func:`aliases` asks the same, quicker.

    Example:
        >>> bool(alias(b"FSDP").search(b"x = 1\nFSDP = FullyShardedDataParallel\n"))
        True
        >>> bool(alias(b"FSDP").search(b"if FSDP == 1: pass\n"))
        False
    """
    name = re.escape(name)
    return re.compile(rb"\bas\s+" + name + rb"\b|^" + name + rb"[ \t]*=(?!=)", re.MULTILINE)


#: ``\s`` of a bytes pattern.
_SPACE = frozenset(b" \t\n\r\f\v")
_ASSIGNS = re.compile(rb"[ \t]*=(?!=)")


def aliases(name: bytes, source: bytes) -> bool:
    r"""Whether :func:`alias` finds ``name`` in ``source``.

    The pattern's two branches each start where no fast literal search can start them
    (a word boundary, a line's start), so the regex engine tries every position; here
    the name's own occurrences are found first and their left side is looked at (a
    name like ``dist`` in a 128 kB module of torch: about 1 ms for the pattern).

    Example:
        >>> aliases(b"FSDP", b"x = 1\nFSDP = FullyShardedDataParallel\n")
        True
        >>> aliases(b"fsdp", b"import torch.distributed.fsdp as\tfsdp\n")
        True
        >>> aliases(b"FSDP", b"if FSDP == 1: pass\nclass_FSDP = 2\n")
        False
    """
    # Both branches need the name whole: after a line's start or a blank, before a
    # non-identifier byte.
    for start in whole_words(source, name):
        if (start == 0 or source[start - 1] == 0x0A) and _ASSIGNS.match(source, start + len(name)):
            return True
        before = start - 1
        while before >= 0 and source[before] in _SPACE:
            before -= 1
        if (
            before < start - 1  # at least one space
            and source[before - 1 : before + 1] == b"as"
            and (before < 2 or source[before - 2] not in IDENTIFIER_BYTES)
        ):
            return True
    return False


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
    return re.compile(rb"^[A-Za-z_]\w*[ \t]*=[ \t]*" + value + _LINE_END, re.MULTILINE)


#: What may follow the value of an alias's line: blanks, then a comment or the end.
_LINE_END = rb"[ \t]*(?:#.*)?\r?$"


@functools.cache
def _ending_a_line(word: bytes) -> re.Pattern[bytes]:
    # Starts with the word itself, so the regex engine skips ahead by a fast literal
    # search; a pattern anchored at each line's start is tried on every line (15x slower
    # on a 128 kB module, where most files of a big tree spell the word elsewhere).
    return re.compile(re.escape(word) + _LINE_END, re.MULTILINE)


def assigns(word: bytes, source: bytes) -> bool:
    r"""Whether a line of ``source`` is ``alias = a.b.word`` (:func:`assigned`).

    Example:
        >>> assigns(b"FSDP", b"x = FSDP(m)\nF = fsdp.FSDP  # old\n")
        True
        >>> assigns(b"FSDP", b"x = FSDP(m)\nprint(FSDP)\n")
        False
    """
    for match in _ending_a_line(word).finditer(source):
        start = match.start()
        # An alias's value ends the line with the word after a dot, a blank or `=`; the
        # whole pattern is tried only from the start of such a line.
        if start and source[start - 1] in IDENTIFIER_BYTES:
            continue
        if assigned(word).match(source, source.rfind(b"\n", 0, start) + 1):
            return True
    return False
