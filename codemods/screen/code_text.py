r"""A file's code alone: its comments and plain string literals blanked.

The text pre-filter (:mod:`codemods.screen.prefilter`) searches a file's bytes, so a
file that names an old API only in a docstring, a comment or a message passes it, and
was then parsed and scanned by ``ast`` for nothing (24 of the 42 files of torch's own
tree that passed it: ``torch.utils.checkpoint.checkpoint`` in prose). Asked again of
:func:`code_text`, the text test rules those out without a parse.

Only a file that Python compiles is asked (the caller knows): its tokens are then
those of the grammar, and one search for the next ``#`` or quote, then for the quote
that ends the literal, finds every comment and string that Python's tokenizer finds
(the same spans as :mod:`tokenize` on 4,130 files of torch, Lightning, libcst, numpy
and the corpus). An f-string (any prefix but ``r``, ``u``, ``b``, ``br``, ``rb``) is kept
whole: its fields are code. Each blanked byte becomes a space, each line break stays,
so every line and every import statement keeps its place.

Example:
    >>> code = code_text(b"x = 1  # torch.fsdp\nf('a.b', rb'\\'', f'{y}')\n")
    >>> code.split(b"\n")
    [b'x = 1              ', b"f(     ,       , f'{y}')", b'']
"""

from __future__ import annotations

import re
import sys

#: A comment, or a string literal after its prefix (each body as a run of the bytes
#: that cannot end it, then an escape or a lone quote and another run: the pattern
#: engine goes over a run in one step, about three times quicker than byte by byte).
_TOKEN = re.compile(
    rb"#[^\r\n]*"
    rb"|'''[^'\\]*(?:(?:\\(?:\r\n|.)|'(?!''))[^'\\]*)*'''"
    rb'|"""[^"\\]*(?:(?:\\(?:\r\n|.)|"(?!""))[^"\\]*)*"""'
    rb"|'[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*'"
    rb'|"[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*"',
    re.DOTALL,
)
#: The prefixes of a literal that holds no code (``if"x"``, an f-string: kept as it is).
_PLAIN = frozenset({b"", b"r", b"u", b"b", b"br", b"rb"})
_IDENTIFIER = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
#: Every byte to a space, but line breaks.
_BLANK = bytes(byte if byte in b"\r\n" else 0x20 for byte in range(256))
#: An encoding declaration (PEP 263) in the first two lines.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)
#: Since Python 3.12 an f-string's fields may hold its own quote and comments (PEP 701).
_NESTED_FIELDS = sys.version_info >= (3, 12)


def code_text(source: bytes) -> bytes | None:
    """``source`` with its comments and plain strings made spaces (line breaks kept).

    ``source`` must compile on this Python. None where its bytes cannot be split by
    their ASCII alone: a declared encoding other than UTF-8 (in some, the second byte
    of a character may be a quote or a backslash). From an f-string whose fields may
    hide where it ends (Python 3.12 and later), the rest is kept as it is.
    """
    if not source.isascii() and not _utf8(source):
        return None
    parts = []
    taken = 0  # the end of what ``parts`` holds
    for token in _TOKEN.finditer(source):
        begin, end = token.span()
        if source[begin] == 0x23:  # a comment
            parts += (source[taken:begin], b" " * (end - begin))
            taken = end
            continue
        prefix = begin
        while prefix > taken and source[prefix - 1] in _IDENTIFIER:
            prefix -= 1
        if prefix == begin or source[prefix:begin].lower() in _PLAIN:
            parts += (source[taken:prefix], source[prefix:end].translate(_BLANK))
            taken = end
        elif _NESTED_FIELDS and b"{" in source[begin:end]:
            break
    parts.append(source[taken:])
    return b"".join(parts)


def _utf8(source: bytes) -> bool:
    """Whether Python reads ``source`` as UTF-8 (no other encoding is declared)."""
    head = b"\n".join(source.split(b"\n", 2)[:2])
    declared = _COOKIE.search(head)
    if declared is None:
        return True
    name = declared.group(1).lower().replace(b"_", b"-")
    return name == b"utf-8" or name.startswith(b"utf-8-")
