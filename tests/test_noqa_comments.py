"""``noqa`` comments found from the tree's strings are the tokenizer's, or left to it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codemods.screen import noqa

ROOT = Path(__file__).resolve().parents[1]

SHAPES = {
    "plain": b"import torch  # noqa: FSDP101\n",
    "upper case": b"x = 1  # NOQA\n",
    "alone on its line": b"# fsdp-compat: noqa: FSDP3\nimport torch\n",
    "in a string only": b"x = '# noqa'\n",
    "a string, then the comment": b"x = '# noqa'  # noqa: FSDP1 '#'\n",
    "a hash in a string before": b"f('#', a)  # noqa\n",
    "a docstring mentions it": b'"""Write # noqa to silence."""\nx = 1  # noqa\n',
    "a docstring over lines": b'def f():\n    """A\n    # noqa here\n    """\n',
    "a comment between string parts": b"x = ('a'  # noqa\n     'b')\n",
    "an f-string": b"x = f'{a}#'  # noqa: FSDP2\n",
    "bytes": b"x = b'#'  # noqa\n",
    "two comments' hashes": b"x = 1  # see #3 # noqa\n",
    "carriage returns": b"x = 1  # noqa\r\ny = 2\r\n",
    "a coding cookie": b"# coding: latin-1\nx = '\xe9'  # noqa\n",
    "a byte order mark": b"\xef\xbb\xbfx = 1  # noqa\n",
    "after a continuation": b"x = (1,\n     2)  # noqa: FSDP1\n",
    "noqa in a name": b"noqa_count = 1\nx = 2  # noqa\n",
}


@pytest.mark.parametrize("name", SHAPES)
def test_the_tree_finds_what_the_tokenizer_finds(name: str) -> None:
    source = SHAPES[name]
    by_tokens, by_tree = noqa.parse(source), noqa.parse(source, ast.parse(source))
    assert (by_tree.lines, by_tree.whole_file) == (by_tokens.lines, by_tokens.whole_file)


@pytest.mark.parametrize(
    "name",
    [
        "a docstring over lines",
        "a comment between string parts",
        "a coding cookie",
        "a byte order mark",
    ],
)
def test_what_the_tree_cannot_place_goes_to_the_tokenizer(name: str) -> None:
    source = SHAPES[name]
    assert noqa._outside_strings(source, ast.parse(source)) is None


def test_the_package_and_its_tests_read_the_same_both_ways() -> None:
    """Every module here that spells ``noqa`` (about a hundred, many in strings)."""
    checked = 0
    for path in sorted([*ROOT.glob("codemods/**/*.py"), *ROOT.glob("tests/*.py")]):
        source = path.read_bytes()
        if b"noqa" not in source:
            continue
        tree = ast.parse(source)
        by_tokens, by_tree = noqa.parse(source), noqa.parse(source, tree)
        assert (by_tree.lines, by_tree.whole_file) == (by_tokens.lines, by_tokens.whole_file), path
        checked += 1
    assert checked > 50
