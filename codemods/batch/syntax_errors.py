"""Files that do not parse: where and why, in one position (Python's where it has one).

Every file of a run is checked, as ruff checks it, even one with nothing for the rules
to find (see :func:`codemods.batch.runner.process_files`): a file Python refuses is an
``invalid-syntax`` finding for lint and an error for migrate, unless it is only written
for a newer Python than the one running (libcst reads its grammar).
"""

from __future__ import annotations

import re
import symtable

from codemods.batch.results import FileResult
from codemods.findings import INVALID_SYNTAX, Finding

#: The position libcst's native parser writes into its messages (``error at 3:0: ``).
NATIVE_POSITION = re.compile(r"^(?:parser error: )?error at \d+:\d+: ")


def syntax_error(source: bytes) -> tuple[int, int, str] | None:
    r"""Where and why Python refuses ``source``: ``(line, column, message)``, 1-based; or None.

    A file whose bytes do not decode is not a syntax error (it is reported as such).

    Example:
        >>> syntax_error(b"x = (\n")
        (1, 5, "'(' was never closed")
        >>> syntax_error(b"x = 1\n") is None
        True
        >>> syntax_error(b"def f(a, a):\n    pass\n")
        (1, 10, "duplicate argument 'a' in function definition")
    """
    try:
        # The parser without ``ast``'s Python objects (about 40% less CPU than
        # ``ast.parse``); its symbol table also refuses what Python's compiler would
        # (``nonlocal`` at module level, a repeated parameter).
        symtable.symtable(source, "<file>", "exec")  # type: ignore[arg-type]
    except SyntaxError as exc:
        if exc.msg.startswith(("Non-UTF-8", "(unicode error)", "encoding problem")):
            return None
        return (exc.lineno or 1, exc.offset or 1, exc.msg)
    except ValueError:  # NUL bytes: reported before any parse
        return None
    return None


def from_libcst(exc: Exception) -> tuple[int, int, str]:
    """``(line, column, message)`` of a libcst parse error, where Python's parser had none.

    The position libcst's native parser writes into its message is left out: it counts
    differently from the one libcst reports beside it, and the message must agree
    with itself.
    """
    message = NATIVE_POSITION.sub("", getattr(exc, "message", str(exc)))
    return (getattr(exc, "raw_line", 1), getattr(exc, "raw_column", 0) + 1, message)


def newer_python(source: bytes) -> bool:
    """Whether libcst parses ``source`` (which this Python refused): a newer grammar."""
    import libcst  # only for files this Python cannot parse

    try:
        libcst.parse_module(source)
    except Exception:  # noqa: BLE001 - any failure means it does not parse
        return False
    return True


def unparsable(result: FileResult, syntax: tuple[int, int, str]) -> FileResult:
    """``result`` as a file that does not parse, at ``syntax``'s position."""
    line, column, message = syntax
    result.syntax = Finding(line, column, INVALID_SYNTAX, message)
    result.error = f"cannot parse: {message} (line {line}, column {column})"
    return result
