"""Where generated code goes on more lines: the line length and a statement's indentation.

Fixes that write new calls lay them out as formatters do (black's and ruff's default
line length), so a rewritten file needs no reformatting to read well.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.syntax.lazy_libcst import cst

#: Where a generated call goes on more lines (ruff's and black's default).
LINE_LENGTH = 88


def indentation(engine: Engine, statement: cst.CSTNode) -> str:
    """The indentation of an original statement (the blocks around it, summed)."""
    indent = ""
    node = engine.parent(statement)
    while node is not None:
        if isinstance(node, cst.IndentedBlock):
            own = node.indent
            indent += engine.module.default_indent if own is None else own
        node = engine.parent(node)
    return indent


def wrapped_call(
    function: str,
    args: list[str],
    one: str,
    indent: str = "",
    taken: int = 0,
    base: str = "",
    inner_line: bool = True,
) -> str:
    """``function(args)``, on more lines where its line would pass :data:`LINE_LENGTH`.

    ``indent`` is the statement's indentation (libcst adds it to every line written),
    ``taken`` how much of the line comes before the call after it (``state = ``);
    ``base`` is the indentation of the call's line inside a statement written as text
    (a loop's body). As black does: the arguments on one line of their own if they fit
    (unless ``inner_line`` is false), else one a line.

    Example:
        >>> wrapped_call("f", ["a", "b"], "    ")
        'f(a, b)'
        >>> print(wrapped_call("f", ["a" * 38, "b" * 38], "    ", "    ", 8))
        f(
            aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
        )
        >>> print(wrapped_call("f", ["a" * 40, "b" * 40], "    ", "    ", 8))
        f(
            aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,
            bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb,
        )
    """
    inner = ", ".join(args)
    if len(indent) + taken + len(function) + len(inner) + 2 <= LINE_LENGTH:
        return f"{function}({inner})"
    if inner_line and len(indent) + len(base) + len(one) + len(inner) <= LINE_LENGTH:
        return f"{function}(\n{base}{one}{inner}\n{base})"
    return f"{function}(\n" + "".join(f"{base}{one}{arg},\n" for arg in args) + f"{base})"


def inner_indent(engine: Engine, node: cst.CSTNode, indent: str) -> str:
    r"""The indentation past the statement's ``indent`` of the line ``node`` starts.

    For an expression that starts a line inside another one
    (``torch.compile(\n    FSDP(...))``), so that its own lines, written as text, line
    up under it; empty where it follows other code on its line.
    """
    start = engine.position(node).start
    lines = engine.scratch.get("layout:lines")
    if lines is None:  # the module's text, split once a file
        lines = engine.scratch["layout:lines"] = engine.text.splitlines()
    line = lines[start.line - 1]
    lead = line[: len(line) - len(line.lstrip())]
    if start.column != len(lead) or not lead.startswith(indent):
        return ""
    return lead[len(indent) :]
