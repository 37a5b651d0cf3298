"""Where a word of a file may sit in an import: the text pre-filter's one look at lines.

A use of an old name needs an import of its package, and the class it lives on is
imported by name or spelled in the dotted path: :func:`on_import_line` tells, from a
word's own occurrences only, whether one of them may be in an import statement
(:mod:`codemods.screen.prefilter` asks it of package roots and classes).
"""

from __future__ import annotations

import functools
import re

#: The bytes of identifier characters (ASCII; a non-ASCII neighbour counts as a boundary,
#: which can only let more files through).
IDENTIFIER_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


#: An ``import`` or ``from`` keyword that begins a statement: at the start of its line
#: (after the file's byte order mark, on the first; a lone ``\r`` ends a line too) or
#: after a ``:`` or ``;`` (``try: import x``, ``a = 1; import x``). Prose ("restored
#: from checkpoint") and other code on the line (``importlib.import_module``) does not.
_STATEMENT = re.compile(rb"(?:^(?:\xef\xbb\xbf)?|[:;\r])[ \t\f]*(?:from|import)\b")


def on_import_line(source: bytes, word: bytes) -> bool:
    r"""Whether ``word``, as a whole identifier, may sit in the module path of an import.

    A module path is written on the physical line of its ``import`` or ``from`` keyword,
    or on a line a backslash continues. So an occurrence counts where a statement's
    ``import`` or ``from`` keyword comes before it on its line (:data:`_STATEMENT`), or
    where the line before ends with ``\``; and a name in a parenthesized list (``from m
    import (\n    P as Q,\n)``), which a class an old name lives on may be.
    Only the occurrences of ``word`` are looked at, never every line of the file.

    Example:
        >>> on_import_line(b"import os; from torch.nn import Linear\n", b"torch")
        True
        >>> on_import_line(b"import pytorch_lightning\n# torch is great\n", b"torch")
        False
        >>> on_import_line(b"from \\\n    torch import nn\n", b"torch")
        True
        >>> on_import_line(b"# loaded from torch's checkpoint\n", b"torch")
        False
        >>> on_import_line(b"try: import torch\nexcept ImportError: pass\n", b"torch")
        True
        >>> on_import_line(b"from torch.distributed.fsdp import (\n    FSDP as F,\n)\n", b"FSDP")
        True
    """
    start = source.find(word)
    while start != -1:
        end = start + len(word)
        if (start == 0 or source[start - 1] not in IDENTIFIER_BYTES) and (
            end == len(source) or source[end] not in IDENTIFIER_BYTES
        ):
            line_start = source.rfind(b"\n", 0, start) + 1
            before = source[line_start:start]
            if (b"import" in before or b"from" in before) and _STATEMENT.search(before):
                return True
            if source[max(0, line_start - 3) : line_start].rstrip(b"\r\n").endswith(b"\\"):
                return True
            if any(first <= start < last for first, last in _import_lists(source)):
                return True
        start = source.find(word, end)
    return False


#: The names of a ``from m import (...)`` list, up to its closing parenthesis; a comment
#: is taken whole to its line's end (it may hold a parenthesis).
_IMPORT_LIST = re.compile(rb"import[ \t\f]*\(((?:[^()#]|#[^\r\n]*(?![^\r\n]))*)\)")


@functools.lru_cache(maxsize=1)
def _import_lists(source: bytes) -> tuple[tuple[int, int], ...]:
    r"""Where the names of each parenthesized import list of ``source`` lie: ``(start, end)``.

    Looked for only where a word is on no import line, once a file (the last file's
    answer is kept: a ``bytes`` keeps its hash). Prose that says ``import (`` counts
    too, which can only let more files through.

    Example:
        >>> _import_lists(b"from a import (\n    B as C,  # (b)\n)\nimportlib.import_module(x)\n")
        ((15, 35),)
    """
    found = []
    at = source.find(b"import")
    while at != -1:
        if at == 0 or source[at - 1] not in IDENTIFIER_BYTES:
            match = _IMPORT_LIST.match(source, at)
            if match is not None:
                found.append(match.span(1))
        at = source.find(b"import", at + 6)
    return tuple(found)
