"""The text test asked again of a file's code alone: its comments and plain strings blanked.

A file that names an old API only in prose (a docstring, a comment, a message) is ruled
out before ``ast`` parses it, where Python compiles it; where it does not, it goes on
as before, so its syntax error is reported the same way.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

from codemods import lint
from codemods.batch.syntax_errors import SyntaxCheck
from codemods.screen.code_text import code_text
from codemods.screen.prefilter import may_have_findings, names_in_code, screen
from codemods.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
#: Prefixes of a literal that holds no code.
PLAIN = {"", "r", "u", "b", "br", "rb"}


def tokenized(source: bytes) -> bytes:
    """What :func:`code_text` should give, from Python's own tokenizer (UTF-8 sources)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + len(lines[row - 1].decode()[:column].encode())

    out = bytearray(source)
    for token in tokenize.tokenize(io.BytesIO(source).readline):
        if token.type == tokenize.STRING:
            prefix = re.match(r"[A-Za-z]*", token.string).group()  # type: ignore[union-attr]
            if prefix.lower() not in PLAIN:
                continue  # an f-string: its fields are code
        elif token.type != tokenize.COMMENT:
            continue
        begin, end = offset(*token.start), offset(*token.end)
        out[begin:end] = re.sub(rb"[^\r\n]", b" ", bytes(out[begin:end]))
    return bytes(out)


def assert_blanked_as_tokenized(source: bytes) -> None:
    """:func:`code_text` blanks what the tokenizer finds (from Python 3.12, at most that).

    From 3.12 on, the rest of a file after an f-string with a field is kept as it is (its
    fields may hold its own quote): there, a byte is the tokenizer's or the source's.
    """
    code, expected = code_text(source), tokenized(source)
    assert code is not None and len(code) == len(source)
    if sys.version_info < (3, 12):
        assert code == expected
    else:
        assert all(c in (e, s) for c, e, s in zip(code, expected, source))


SOURCES = [
    b"x = 1  # torch.distributed.fsdp\n",
    b'def f():\n    """Use torch.utils.checkpoint.checkpoint("x").\n\n    More.\n    """\n',
    b"s = '''a \\''' b ''' + \"\"\"c\"\"\"\"\"\n",
    b"s = 'a\\\nb'  # a line joined inside the literal\n",
    b"s = 'a\\\r\nb'\r\nt = 1  # CRLF\r\n",
    b"x = rb'\\'' + BR\"y\" + u'z' + Rb'''w'''\n",
    b"x = f'{torch.fsdp}' + rf\"{y}\" + F'#{z}'\n",
    b'if x:"b"\n',
    b"x = '#' + \"'\"  # a '\n",
    b"x = 1 # comment with 'quote\ny = '# not a comment'\n",
    "# é in a comment\ns = 'ü'\n".encode(),
]


@pytest.mark.parametrize("source", SOURCES)
def test_comments_and_plain_strings_are_blanked_as_pythons_tokenizer_finds_them(source):
    compile(source, "<source>", "exec")  # code_text is asked of files Python compiles
    assert_blanked_as_tokenized(source)
    assert code_text(source).count(b"\n") == source.count(b"\n")  # type: ignore[union-attr]


def test_the_projects_own_modules_are_blanked_as_the_tokenizer_finds_them():
    files = [*ROOT.glob("codemods/screen/*.py"), *ROOT.glob("examples/legacy/*.py")]
    assert len(files) > 10
    for path in files:
        assert_blanked_as_tokenized(path.read_bytes())


def test_an_f_strings_fields_are_kept():
    assert b"torch.fsdp" in code_text(b"x = f'{torch.fsdp}'\n")  # type: ignore[operator]


def test_a_literal_right_after_a_keyword_is_kept():
    # ``if"a"``: the letters before the quote are no prefix of a plain literal; taking
    # them for an f-string's can only keep more words
    assert code_text(b'if"a.b"in x: pass\n') == b'if"a.b"in x: pass\n'


@pytest.mark.parametrize(
    "source",
    [
        b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
        b"#!/usr/bin/env python\n# vim: set fileencoding=shift_jis :\nx = '\x83\\'\n",
    ],
)
def test_a_source_in_another_encoding_is_not_split(source):
    assert code_text(source) is None


def test_a_declared_utf8_is_split():
    assert_blanked_as_tokenized("# coding: utf-8\nx = 'é'  # é\n".encode())


MENTIONS = [
    # the words in a docstring, a comment, a message
    b'"""See torch.utils.checkpoint.checkpoint."""\nimport torch\n',
    b"import torch  # torch.distributed._tensor.DTensor\n",
    b"import torch\nHOP = 'torch.utils.checkpoint.checkpoint'\n",
    b"import torch.distributed as dist\nraise ValueError('dist._shard.checkpoint is gone')\n",
]


@pytest.mark.parametrize("source", MENTIONS)
def test_a_mention_in_prose_is_ruled_out_before_a_parse(source):
    assert may_have_findings(source, Settings())
    assert not names_in_code(source, Settings())
    syntax = SyntaxCheck("m.py", source, None)
    assert screen(source, Settings(), syntax=syntax) is None
    assert syntax._answer == (True, None)  # asked of the symbol table: no ast parse


@pytest.mark.parametrize(
    "source",
    [
        b"import torch\ny = torch.utils.checkpoint.checkpoint(f, x)\n",
        b"import torch\ny = f'{torch.utils.checkpoint.checkpoint(f, x)}'\n",
        # the hook only in a string, but a LightningModule used: the ast scan decides
        b"from lightning.pytorch import LightningModule\n"
        b"class M(LightningModule):\n    doc = 'configure_sharded_model'\n",
    ],
)
def test_a_use_in_the_code_goes_on_to_the_ast_scan(source):
    assert names_in_code(source, Settings())


def test_a_file_that_does_not_compile_is_parsed_as_before():
    source = b'"""torch.utils.checkpoint.checkpoint"""\nimport torch\ndef f(:): pass\n'
    assert not names_in_code(source, Settings())
    syntax = SyntaxCheck("m.py", source, None)
    assert screen(source, Settings(), syntax=syntax) is not None  # on to libcst
    assert syntax.compiles() is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"""See torch.utils.checkpoint.checkpoint."""\nimport torch\n', ""),
        (
            '"""torch.utils.checkpoint.checkpoint"""\nimport torch\ndef f(:): pass\n',
            "invalid-syntax",
        ),
        ("import torch\ny = torch.utils.checkpoint.checkpoint(f, x)\n", "FSDP124"),
    ],
)
def test_the_lint_answers_as_before(tmp_path, monkeypatch, capsys, text, expected):
    monkeypatch.chdir(tmp_path)
    Path("a.py").write_text(text)
    Path("b.py").write_text("x = 1\n")
    code = lint.main(["--quiet", "a.py", "b.py"])
    out = capsys.readouterr().out
    assert code == (1 if expected else 0)
    assert (expected in out) if expected else "a.py" not in out
