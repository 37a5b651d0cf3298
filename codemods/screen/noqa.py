"""``# noqa`` comments: which findings a file asks not to hear about.

- ``# noqa`` on a line silences every finding reported on that line;
- ``# noqa: FSDP101, FSDP2`` only those codes (a code or a prefix, as ``--select`` takes);
- ``# fsdp-compat: noqa`` on a line of its own silences the whole file, and
  ``# fsdp-compat: noqa: FSDP3`` those codes in the whole file.

A silenced finding is neither reported nor fixed. Comments are found with the
tokenizer, so ``"# noqa"`` inside a string is not one (where the module's ``ast`` is
at hand, its string literals' positions answer that: :func:`_outside_strings`). A code
a finding had before (:data:`FORMER`, as ruff's redirected codes) still silences it
where it is named in full.
"""

from __future__ import annotations

import ast
import functools
import io
import re

from codemods.records import Record
from codemods.syntax.ast_nodes import tree_index


@functools.cache
def _line() -> re.Pattern[str]:
    return re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?", re.I)


@functools.cache
def _file() -> re.Pattern[str]:
    return re.compile(r"^#\s*fsdp-compat:\s*noqa(?::\s*(?P<codes>[A-Z0-9,\s]+))?\s*$", re.I)


#: Every code: what a bare noqa comment silences.
ALL: frozenset[str] = frozenset({""})
#: Codes their findings had before, by code: FSDP133 reported ``offload_to_cpu=False``
#: until FSDP139 took it; FSDP111 was the move to FSDP2, now FSDP401.
FORMER: dict[str, tuple[str, ...]] = {"FSDP139": ("FSDP133",), "FSDP401": ("FSDP111",)}


def _codes(text: str | None) -> frozenset[str]:
    if not text:
        return ALL
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


class Suppressions(Record):
    """The ``noqa`` comments of one file.

    Attributes:
        lines: Line number to the codes (or prefixes) silenced there; :data:`ALL` for all.
        whole_file: Codes (or prefixes) silenced everywhere in the file.
    """

    _fields = ("lines", "whole_file")

    def __init__(
        self,
        lines: dict[int, frozenset[str]] | None = None,
        whole_file: frozenset[str] = frozenset(),
    ) -> None:
        self.lines = {} if lines is None else lines
        self.whole_file = whole_file

    def silences(self, line: int, code: str) -> bool:
        r"""Whether a finding ``code`` on ``line`` is silenced.

        Example:
            >>> s = parse(b"x = 1  # noqa: FSDP1\ny = 2  # noqa\nz = 3  # noqa: FSDP133\n")
            >>> s.silences(1, "FSDP101"), s.silences(1, "FSDP201"), s.silences(2, "FSDP201")
            (True, False, True)
            >>> s.silences(3, "FSDP139"), s.silences(1, "FSDP401")  # a former code, in full
            (True, False)
        """
        former = FORMER.get(code, ())
        for codes in (self.whole_file, self.lines.get(line, frozenset())):
            if any(code.startswith(prefix) for prefix in codes):  # "" (ALL) prefixes every code
                return True
            if any(old in codes for old in former):
                return True
        return False

    @property
    def everything(self) -> bool:
        """The whole file is silenced for every code: there is no need to parse it."""
        return "" in self.whole_file


def parse(source: bytes, tree: ast.Module | None = None) -> Suppressions:
    """Find the ``noqa`` comments in ``source`` (bytes, in whatever encoding it declares).

    ``tree``: ``ast.parse(source)``, where it was parsed (it spares the tokenizer).
    """
    if b"noqa" not in source:
        return Suppressions()
    lines: dict[int, frozenset[str]] = {}
    whole: set[str] = set()
    found = None if tree is None else _outside_strings(source, tree)
    for line, alone, comment in _comments(source) if found is None else found:
        file_level = _file().match(comment)
        if file_level and alone:
            whole |= _codes(file_level.group("codes"))
            continue
        match = _line().search(comment)
        if match:
            lines[line] = lines.get(line, frozenset()) | _codes(match.group("codes"))
    return Suppressions(lines, frozenset(whole))


class Deferred:
    r"""The ``noqa`` comments of a module, read when a finding first asks about them.

    Reading them tokenizes the whole module (the tokenizer is pure Python, as slow as
    parsing it with ``ast`` several times over), and most modules a run reads have no
    finding to ask about: only a whole-file comment, which decides whether the module
    is looked at at all, is read at once, where one may be.

    Example:
        >>> Deferred(b"x = 1  # noqa: FSDP1\n").silences(1, "FSDP101")
        True
        >>> Deferred(b"# fsdp-compat: noqa\n").everything
        True
    """

    def __init__(self, source: bytes) -> None:
        self._source = source
        self._read: Suppressions | None = None
        self.tree: ast.Module | None = None  # the module's ``ast``, once parsed
        # A whole-file comment spells ``fsdp-compat:`` in any case; no other character
        # matches the letters of ``compat`` regardless of case (``ſ`` may be an ``s``).
        if b"noqa" in source and b"compat:" in source.lower():
            self._read = parse(source)

    @property
    def read(self) -> Suppressions:
        """The comments, read now if they were not."""
        if self._read is None:
            self._read = parse(self._source, self.tree)
        return self._read

    @property
    def everything(self) -> bool:
        """See :attr:`Suppressions.everything`."""
        return self._read is not None and self._read.everything

    def silences(self, line: int, code: str) -> bool:
        """See :meth:`Suppressions.silences`."""
        return self.read.silences(line, code)


def _comments(source: bytes) -> list[tuple[int, bool, str]]:
    """``(line, alone on its line, text)`` of each comment; a crude scan if tokenizing fails."""
    import tokenize  # here: a one-file lint of a file without noqa never needs it

    try:
        return [
            (token.start[0], not token.line[: token.start[1]].strip(), token.string)
            for token in tokenize.tokenize(io.BytesIO(source).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError):
        text = source.decode("utf-8", "replace")
        return [
            (number, line.lstrip().startswith("#"), line[line.index("#") :])
            for number, line in enumerate(text.splitlines(), start=1)
            if "#" in line
        ]


def _outside_strings(source: bytes, tree: ast.Module) -> list[tuple[int, bool, str]] | None:
    r""":func:`_comments` that can hold ``noqa``, from the positions of ``tree``'s strings.

    Outside a string literal, a ``#`` starts a comment, and a literal on one line holds
    none (a comment runs to the line's end). A line that spells ``noqa`` in any case
    (no other can hold a ``noqa`` comment) has its comment from its first ``#`` outside
    such literals. A ``#`` within a literal over several lines may be a comment between
    the parts of ``("a"  # ...`` and ``"b")``, which the literal's span covers too: the
    file is left to the tokenizer (None), as where a byte order mark or a coding
    cookie is (``ast``'s columns count UTF-8 bytes).

    Example:
        >>> source = b"x = '# noqa'  # noqa: FSDP1 '#'\ny = 1  # NOQA\n"
        >>> _outside_strings(source, ast.parse(source))
        [(1, False, "# noqa: FSDP1 '#'"), (2, False, '# NOQA')]
        >>> source = b"x = ('a'  # noqa\n     'b')\n"
        >>> _outside_strings(source, ast.parse(source)) is None
        True
    """
    lines = source.splitlines()
    wanted = {n for n, line in enumerate(lines, 1) if b"noqa" in line.lower()}
    if source.startswith(b"\xef\xbb\xbf") or b"coding" in b"\n".join(lines[:2]):
        return None
    inside: dict[int, list[tuple[int, int]]] = {n: [] for n in wanted}
    by_type = tree_index(tree).by_type
    for node in [*by_type.get(ast.Constant, ()), *by_type.get(ast.JoinedStr, ())]:
        if type(node) is ast.Constant and type(node.value) not in (str, bytes):  # type: ignore[attr-defined]
            continue
        first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        if first == last:
            if first in inside:
                inside[first].append((node.col_offset, node.end_col_offset))  # type: ignore[attr-defined]
        elif any(first <= n <= last and b"#" in lines[n - 1] for n in wanted):
            return None
    found = []
    for n in sorted(wanted):
        line = lines[n - 1]
        marks = [i for i, byte in enumerate(line) if byte == 35]  # b"#"
        start = next((i for i in marks if not any(a <= i < b for a, b in inside[n])), None)
        if start is not None:
            found.append((n, not line[:start].strip(), line[start:].decode("utf-8", "replace")))
    return found
