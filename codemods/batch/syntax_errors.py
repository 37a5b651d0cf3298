"""Files that do not parse: where and why, in one position (Python's where it has one).

Every file of a run is checked, as ruff checks it, even one with nothing for the rules
to find (see :func:`codemods.batch.runner.process_files`): a file Python refuses is an
``invalid-syntax`` finding for lint and an error for migrate, unless it is only written
for a newer Python than the one running (libcst reads its grammar). A file this Python
has compiled already, as its bytecode cache shows (:func:`compiled_already`), is not
parsed again: on an installed package's tree that check is most of a run's CPU.
"""

from __future__ import annotations

import functools
import os
import re

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    import ast

    from codemods.batch.results import FileResult

try:  # the C function under symtable.symtable (see syntax_error)
    from _symtable import symtable as _symbol_table
except ImportError:  # an interpreter without it
    from symtable import symtable as _symbol_table

try:  # the import system's own (importlib._bootstrap_external), loaded at every start:
    # importlib.util (with contextlib), or even the importlib package, cost a hook's
    # answer for a plain file about 5 and 1.6 million instructions
    from _frozen_importlib_external import MAGIC_NUMBER, cache_from_source
except ImportError:  # an interpreter without it
    from importlib.util import MAGIC_NUMBER, cache_from_source


#: The position libcst's native parser writes into its messages (``error at 3:0: ``);
#: compiled for the first file libcst refuses (a one-file lint's file parses).
@functools.cache
def _native_position() -> re.Pattern[str]:
    return re.compile(r"^(?:parser error: )?error at \d+:\d+: ")


def syntax_error(source: bytes) -> tuple[int, int, str] | None:
    r"""Where and why Python refuses ``source``: ``(line, column, message)``, 1-based; or None.

    A file whose bytes do not decode is not a syntax error (it is reported as such).

    Example:
        >>> syntax_error(b"x = )\n")
        (1, 5, "unmatched ')'")
        >>> syntax_error(b"x = 1\n") is None
        True
        >>> syntax_error(b"nonlocal x\n")
        (1, 1, 'nonlocal declaration not allowed at module level')
    """
    return compiles(source)[1]


def compiles(source: bytes) -> tuple[bool, tuple[int, int, str] | None]:
    r"""Whether Python's parser and symbol table take ``source``, and :func:`syntax_error`.

    Example:
        >>> compiles(b"x = 1\n"), compiles(b"x = '\xff'\n")
        ((True, None), (False, None))
    """
    try:
        # The parser without ``ast``'s Python objects (about 40% less CPU than
        # ``ast.parse``); its symbol table also refuses what Python's compiler would
        # (``nonlocal`` at module level, a repeated parameter). The C function that
        # ``symtable.symtable`` calls: the module's own wrapping (and ``weakref``, which
        # it imports) cost a hook's answer for a plain file about 4 million instructions.
        _symbol_table(source, "<file>", "exec")  # type: ignore[arg-type]
    except SyntaxError as exc:
        if exc.msg.startswith(("Non-UTF-8", "(unicode error)", "encoding problem")):
            return False, None
        return False, (exc.lineno or 1, exc.offset or 1, exc.msg)
    except ValueError:  # NUL bytes: reported before any parse
        return False, None
    return True, None


class SyntaxCheck:
    """Whether a file compiles, and where Python refuses it: found once, when first asked.

    ``modified``: the modification time of the file ``path`` whose bytes ``source`` are,
    so that its bytecode cache can vouch for it (:func:`compiled_already`); None: they
    are no file's (standard input, a notebook's cells).
    """

    __slots__ = ("_answer", "modified", "path", "source")

    def __init__(self, path: str, source: bytes, modified: int | None) -> None:
        self.path, self.source, self.modified = path, source, modified
        self._answer: tuple[bool, tuple[int, int, str] | None] | None = None

    def _checked(self) -> tuple[bool, tuple[int, int, str] | None]:
        if self._answer is None:
            if self.modified is not None and compiled_already(
                self.path, self.source, self.modified
            ):
                self._answer = (True, None)
            else:
                self._answer = compiles(self.source)
        return self._answer

    def parsed(self, tree: ast.Module) -> None:
        """Learn that ``ast`` parsed the file into ``tree``.

        Where the symbol table has nothing in it to refuse
        (:func:`codemods.syntax.symbol_table.may_refuse`), the file compiles: no parse
        of its own is needed to know.
        """
        if self._answer is None:
            from codemods.syntax.symbol_table import may_refuse  # files parsed anyway only

            if not may_refuse(tree):
                self._answer = (True, None)

    def compiles(self) -> bool:
        """Whether Python compiles the file (so ``ast`` parses it)."""
        return self._checked()[0]

    def error(self) -> tuple[int, int, str] | None:
        """:func:`syntax_error` of the file (None where its cache vouches for it)."""
        return self._checked()[1]


def compiled_already(path: str, source: bytes, modified: int | None = None) -> bool:
    r"""Whether this Python compiled ``source``, the bytes ``path`` holds, into its cache.

    Python writes ``__pycache__/NAME.cpython-XY.pyc`` only for a file it compiled
    (parser, symbol table and compiler: more than :func:`syntax_error` asks), and runs
    it in place of ``path`` for as long as its header matches: this Python's magic
    number, and either the source's modification time and size (the default) or the
    hash of its bytes. That test, and a cache written after the source was last
    modified (a rewrite within the second the header records shows there), tell here
    that ``source`` has no syntax error without parsing it: 16 bytes read against about
    1.5 ms a file. ``modified``: the source's modification time (ns) as it was read
    (None: asked of the file).

    Example:
        >>> import py_compile, tempfile, time
        >>> path = os.path.join(tempfile.mkdtemp(), "m.py")
        >>> with open(path, "wb") as file:
        ...     _ = file.write(b"x = 1\n")
        >>> os.utime(path, (time.time() - 10, time.time() - 10))
        >>> compiled_already(path, b"x = 1\n")
        False
        >>> _ = py_compile.compile(path, doraise=True)
        >>> compiled_already(path, b"x = 1\n")
        True
        >>> with open(path, "wb") as file:  # rewritten: the same size, a newer time
        ...     _ = file.write(b"x = (\n")
        >>> compiled_already(path, b"x = (\n")
        False
    """
    try:
        # Read without a file object: a third of this check over torch's 2,292 caches.
        descriptor = os.open(cache_from_source(path), os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            header = os.read(descriptor, 16)
            cached = os.fstat(descriptor).st_mtime_ns
        finally:
            os.close(descriptor)
        if len(header) < 16 or header[:4] != MAGIC_NUMBER:
            return False
        flags = int.from_bytes(header[4:8], "little")
        if flags & 0b1:  # PEP 552: checked against the hash of the source's bytes
            import importlib.util  # a rare cache (PEP 552): not worth a start's import

            return header[8:16] == importlib.util.source_hash(source)
        if flags:
            return False
        if modified is None:
            modified = os.stat(path).st_mtime_ns
    except (OSError, ValueError, NotImplementedError):  # no cache, no cache tag, no file
        return False
    # The size is of the bytes read: a file rewritten since has another time anyway.
    seconds = (modified // 10**9) & 0xFFFFFFFF
    size = len(source) & 0xFFFFFFFF
    expected = seconds.to_bytes(4, "little") + size.to_bytes(4, "little")
    return header[8:16] == expected and cached > modified


def from_libcst(exc: Exception) -> tuple[int, int, str]:
    """``(line, column, message)`` of a libcst parse error, where Python's parser had none.

    The position libcst's native parser writes into its message is left out: it counts
    differently from the one libcst reports beside it, and the message must agree
    with itself.
    """
    message = _native_position().sub("", getattr(exc, "message", str(exc)))
    return (getattr(exc, "raw_line", 1), getattr(exc, "raw_column", 0) + 1, message)


def newer_python(source: bytes) -> bool:
    r"""Whether libcst parses ``source`` (which this Python refused): a newer grammar.

    A file that only Python 3.12's type parameters keep from parsing here (as in
    ``def f[T](x: T)``; torch ships one) is decided without libcst (about 0.13 s to
    import): see :func:`codemods.batch.type_parameters.without`. A file this Python's
    parser takes was refused by its symbol table (``nonlocal`` at module level), which
    libcst's grammar does not check: no newer grammar.

    Example:
        >>> newer_python(b"def f(a, a):\n    pass\n")
        False
    """
    import ast

    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        pass
    else:
        return False
    from codemods.batch import type_parameters

    blanked = type_parameters.without(source)
    if blanked is not None and syntax_error(blanked) is None:
        return True
    import libcst  # only for files this Python cannot parse

    try:
        libcst.parse_module(source)
    except Exception:  # noqa: BLE001 - any failure means it does not parse
        return False
    return True


def unparsable(result: FileResult, syntax: tuple[int, int, str]) -> FileResult:
    """``result`` as a file that does not parse, at ``syntax``'s position."""
    line, column, message = syntax
    from codemods.findings import INVALID_SYNTAX, Finding  # a plain file's answer needs none

    result.syntax = Finding(line, column, INVALID_SYNTAX, message)
    result.error = f"cannot parse: {message} (line {line}, column {column})"
    return result
