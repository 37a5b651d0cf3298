"""The pre-filter's byte searches answer as the patterns they replaced.

:func:`~codemods.screen.alias_text.aliases`, :func:`~codemods.screen.alias_text.assigns` and
:func:`~codemods.screen.import_lines.whole_words` find their word's bytes first and look
around them, where the patterns (``alias``, ``assigned``, ``\\bword\\b``) start at every
position or line; on these edge cases, and on every text made of their pieces up to a
length, both give the same answer.
"""

from __future__ import annotations

import itertools
import re

import pytest

from codemods.screen.alias_text import alias, aliases, assigned, assigns
from codemods.screen.import_lines import whole, whole_words

EDGES = [
    b"as FSDP",
    b"xas FSDP",
    b" as\n\nFSDP",
    b"FSDP=1",
    b"FSDP ==1",
    b"\nFSDP\t= 2",
    b"\rFSDP = 1",
    b"as FSDPx",
    b"has  FSDP",
    b"_as FSDP",
    b"(as FSDP)",
    b"as\x0bFSDP",
    b"F = fsdp.FSDP  # old\n",
    b"F = some_FSDP\n",
    b"F = a . FSDP\r\n",
    b"x = FSDP(m)\nF = FSDP\n",
    b"F = FSDP  # FSDP\n",
    b"class_FSDP = 2",
    b"",
]

#: Pieces whose every arrangement up to four long is checked (about 30,000 texts).
PIECES = [b"as", b"a", b" ", b"\t", b"\n", b"=", b"==", b"ab", b"_", b".", b"#", b"x"]


def _texts():
    for size in range(5):
        for parts in itertools.product(PIECES, repeat=size):
            yield b"".join(parts)


@pytest.mark.parametrize("text", EDGES)
@pytest.mark.parametrize("prefix", [b"", b"x\n", b"yy "])
def test_edge_cases_answer_as_the_patterns(text, prefix):
    source = prefix + text
    assert aliases(b"FSDP", source) == bool(alias(b"FSDP").search(source))
    assert assigns(b"FSDP", source) == bool(assigned(b"FSDP").search(source))
    expected = [m.start() for m in re.finditer(rb"\bFSDP\b", source)]
    assert list(whole_words(source, b"FSDP")) == expected
    assert whole(source, b"FSDP") == bool(expected)


@pytest.mark.parametrize("word", [b"ab", b"a", b"x"])
def test_every_short_text_answers_as_the_patterns(word):
    pattern = re.compile(rb"\b" + re.escape(word) + rb"\b")
    for source in _texts():
        assert aliases(word, source) == bool(alias(word).search(source)), source
        assert assigns(word, source) == bool(assigned(word).search(source)), source
        assert list(whole_words(source, word)) == [m.start() for m in pattern.finditer(source)]
