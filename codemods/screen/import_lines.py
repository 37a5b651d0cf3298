r"""The import statements of a file, as text: where the pre-filter looks for a package.

A use of an old name needs an import of its package, and the class it lives on is
imported by name or spelled in a dotted path. Every import statement spells the
keyword ``import`` on its logical line: the physical line of the keyword, the lines a
backslash joins to it (``from torch.distributed \`` then ``import fsdp``), and a
parenthesized list of names after it. :func:`import_text` keeps those lines and
nothing else, so that asking for a package's name there is a search of a few hundred
bytes, not of the whole file: one pass over the file finds every ``import``.

A line that only says ``import`` (a comment, a string) is kept too, which can only let
more files through; a line without the keyword (prose that begins "from torch") is
left out, and no import statement is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: The bytes of identifier characters (ASCII; a non-ASCII neighbour counts as a boundary,
#: which can only let more files through).
IDENTIFIER_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

#: A parenthesized list of names after ``import``, up to its closing parenthesis; a
#: comment is taken whole to its line's end (it may hold a parenthesis).
_IMPORT_LIST = re.compile(rb"import(?:[ \t\f]|\\\r?\n)*\((?:[^()#]|#[^\r\n]*(?![^\r\n]))*\)")


def import_text(source: bytes) -> bytes:
    r"""The logical lines of ``source`` that hold the keyword ``import``, one a line.

    Example:
        >>> import_text(b"import os\nx = 1  # torch\nfrom a \\\n    import b\n")
        b'import os\nfrom a \\\n    import b'
        >>> import_text(b"from t import (\n    C as D,  # (c)\n)\nimportlib.import_module(x)\n")
        b'from t import (\n    C as D,  # (c)\n)'
    """
    parts = []
    taken = 0  # where the last line kept ends
    size = len(source)
    at = source.find(b"import")
    while at != -1:
        after = at + 6
        if (at and source[at - 1] in IDENTIFIER_BYTES) or (
            after < size and source[after] in IDENTIFIER_BYTES
        ):
            at = source.find(b"import", after)  # inside a name: importlib, reimport
            continue
        start = source.rfind(b"\n", 0, at) + 1
        while start > taken and _joined(source, start):
            start = source.rfind(b"\n", 0, start - 1) + 1
        stop = _line_end(source, at)
        if source.find(b"(", after, stop) != -1 or _joined(source, stop + 1):
            listed = _IMPORT_LIST.match(source, at)  # most imports have no list: not tried
            if listed is not None:
                stop = max(stop, _line_end(source, listed.end()))
        while stop < size and _joined(source, stop + 1):
            stop = _line_end(source, stop + 1)
        parts.append(source[max(start, taken) : stop])
        taken = stop
        at = source.find(b"import", stop)
    return b"\n".join(parts)


def _line_end(source: bytes, at: int) -> int:
    """Where the physical line holding ``at`` ends (its line break, or the end)."""
    end = source.find(b"\n", at)
    return len(source) if end == -1 else end


def _joined(source: bytes, start: int) -> bool:
    """Whether the line before the one starting at ``start`` ends with a backslash."""
    if start < 2:
        return False
    before = source[start - 2]
    if before == 0x0D and start > 2:  # \r\n
        before = source[start - 3]
    return before == 0x5C


def on_import_line(source: bytes, word: bytes) -> bool:
    r"""Whether ``word``, as a whole identifier, is on a logical line of an import.

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
    return whole(import_text(source), word)


def whole_words(source: bytes, word: bytes) -> Iterator[int]:
    r"""Where ``word`` starts as a whole word of ``source`` (as ``\bword\b`` finds it).

    A search for the bytes, then a look at each side (see :func:`whole`).

    Example:
        >>> list(whole_words(b"fsdp fsdp_wrap x.fsdp", b"fsdp"))
        [0, 17]
    """
    start = source.find(word)
    while start != -1:
        end = start + len(word)
        if (start == 0 or source[start - 1] not in IDENTIFIER_BYTES) and (
            end == len(source) or source[end] not in IDENTIFIER_BYTES
        ):
            yield start
        start = source.find(word, start + 1)


def whole(source: bytes, word: bytes) -> bool:
    r"""Whether ``word`` is a whole word of ``source``, as ``\bword\b`` asks.

    ``word`` starts and ends with identifier bytes. A search for the bytes, then a look
    at each side: several times quicker than the pattern, which tries every position.

    Example:
        >>> whole(b"x = fsdp_wrap; fsdp.y", b"fsdp"), whole(b"fsdp_wrap", b"fsdp")
        (True, False)
    """
    return next(whole_words(source, word), None) is not None
