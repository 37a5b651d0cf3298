r"""Python 3.12's type parameters, blanked out, for a Python that does not know them.

A file written for Python 3.12 or later (``def f[T](x: T) -> T``, ``class Box[T]:``,
``type Pair[T] = tuple[T, T]``) is not a syntax error, and a run on an older Python
does not report it (see :func:`codemods.batch.syntax_errors.newer_python`). Where those
are the only constructs this Python refuses, the file with each of them blanked out
(spaces, its line breaks kept, so every position stays) parses here: that answers
without loading libcst. Each parameter list is checked first: as the parameters of a
function (``T: bound``, ``*Ts``, ``**P``, 3.13's ``T = default``), so a list with a
syntax error of its own is never blanked away.

Example:
    >>> without(b"def f[T: int](x: T) -> T:\n    return x\n")
    b'def f        (x: T) -> T:\n    return x\n'
    >>> without(b"type Pair[T] = tuple[T, T]\n")
    b'     Pair    = tuple[T, T]\n'
    >>> without(b"def f[T: ](x): pass\n") is None  # a bound left empty
    True
    >>> without(b"x = 1\n") is None  # nothing to blank
    True
"""

from __future__ import annotations

import re

#: ``def NAME[`` or ``class NAME[`` (never valid before 3.12), and a ``type NAME`` or
#: ``type NAME[`` statement at the start of a line, followed by ``=``.
_OPENINGS = re.compile(
    rb"\b(?:def|class)[ \t]+\w+[ \t]*(?P<open>\[)"
    rb"|^[ \t]*(?P<type>type)[ \t]+\w+[ \t]*(?P<alias>\[)?",
    re.MULTILINE,
)
_BRACKETS = {ord("["): 1, ord("("): 1, ord("{"): 1, ord("]"): -1, ord(")"): -1, ord("}"): -1}


def without(source: bytes) -> bytes | None:
    """``source`` with its type parameters and ``type`` keywords blanked; None if it has none.

    None too where a parameter list does not close, holds a string or a comment, or
    is not valid as a function's parameters: such a file is left to libcst.
    """
    blanked = bytearray(source)
    found = False
    for match in _OPENINGS.finditer(source):
        opening = match.start("open") if match.group("open") else match.start("alias")
        end = match.end()
        if opening >= 0:
            closing = _closing(source, opening)
            if closing is None or not _parameters(source[opening + 1 : closing]):
                return None
            blanked[opening : closing + 1] = _spaces(source[opening : closing + 1])
            end = closing + 1
        if match.group("type"):
            if not re.match(rb"[ \t]*=(?!=)", source[end:]):
                continue  # not an alias (``type x`` in prose, say): left as it is
            blanked[match.start("type") : match.end("type")] = b"    "
        found = True
    return bytes(blanked) if found else None


def _closing(source: bytes, opening: int) -> int | None:
    """Where the bracket at ``opening`` closes (None: it does not, or a string is inside)."""
    depth = 0
    for index in range(opening, len(source)):
        byte = source[index]
        if byte in b"'\"#":
            return None
        depth += _BRACKETS.get(byte, 0)
        if depth == 0:
            return index
    return None


def _parameters(text: bytes) -> bool:
    """Whether ``text`` (a list's inside) is valid as a function's parameters."""
    try:
        compile(b"def _(" + text + b"): pass", "<type parameters>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return bool(text.strip())


def _spaces(text: bytes) -> bytes:
    """``text`` as spaces, its line breaks kept."""
    return bytes(byte if byte in b"\r\n" else 0x20 for byte in text)
