r"""``ast.parse`` with the positions of import names, which Python 3.9 leaves out.

From Python 3.10, each ``ast.alias`` (a name of an ``import`` statement) has a line and
column, and the detectors report and silence findings there. On 3.9 it has none, and
every file importing an old name failed. :func:`parse` adds them on 3.9 from the
statement's tokens: the first token of the name (``a`` of ``a.b.c``, or ``*``) to the
last (``c``, or the ``as`` name), columns in UTF-8 bytes as ``ast`` counts them. On
3.10 and later it is ``ast.parse``.

Example:
    >>> tree = parse("import os\nfrom a.b import (\n    c as d,\n    e,\n)\n")
    >>> [(a.lineno, a.col_offset, a.end_col_offset) for a in tree.body[1].names]
    [(3, 4, 10), (4, 4, 5)]
"""

from __future__ import annotations

import ast
import sys

__all__ = ["parse"]

#: Whether this Python's ``ast.alias`` lacks positions.
NEEDED = sys.version_info < (3, 10)


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source)`` of a module, its import names placed (see the module)."""
    tree = ast.parse(source, filename)
    if NEEDED:
        place_import_names(tree, source)
    return tree


def place_import_names(tree: ast.AST, source: str | bytes) -> None:
    """Give each ``ast.alias`` under ``tree`` the position of its name in ``source``."""
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not imports:
        return
    if isinstance(source, bytes):
        source = _decoded(source)
    lines = source.split("\n")
    for node in imports:
        _place(node, lines)


def _decoded(source: bytes) -> str:
    """``source`` as Python reads it: its declared encoding, universal newlines.

    (``importlib.util.decode_source`` does the same, but on 3.9 loads ``typing``.)
    """
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return io.TextIOWrapper(io.BytesIO(source), encoding).read()


def _place(node: ast.Import | ast.ImportFrom, lines: list[str]) -> None:
    import io
    import tokenize

    first = node.lineno - 1
    text = lines[first]
    start = len(text.encode()[: node.col_offset].decode(errors="ignore"))
    # The statement alone: what precedes it on its first line blanked (same columns).
    segment = [" " * start + text[start:]] + lines[first + 1 : node.end_lineno]
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    names: list[tokenize.TokenInfo] = []
    seen_import = False
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(segment) + "\n").readline):
            if not seen_import:
                seen_import = token.type == tokenize.NAME and token.string == "import"
                continue
            if token.type == tokenize.NAME or (token.type == tokenize.OP and token.string in "*."):
                names.append(token)
            elif names:  # a comma, a closing parenthesis, the line's end
                spans.append((names[0].start, names[-1].end))
                names = []
            if len(spans) == len(node.names):
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    for index, alias in enumerate(node.names):
        if index < len(spans):
            (line, column), (end_line, end_column) = spans[index]
        else:  # not found (not expected): the statement's own start
            line, column, end_line, end_column = 1, start, 1, start
        alias.lineno, alias.end_lineno = first + line, first + end_line
        # Counted on the file's own line: the blanked start may hold fewer bytes.
        alias.col_offset = _bytes(lines[first + line - 1], column)
        alias.end_col_offset = _bytes(lines[first + end_line - 1], end_column)


def _bytes(line: str, column: int) -> int:
    """A column in characters as ``ast`` counts it, in UTF-8 bytes."""
    return len(line[:column].encode())
