"""Where a module's nodes start and end, as libcst's ``PositionProvider`` says, for less.

libcst's provider generates the module's code and, at every token, works out the
line and column reached, and at every node builds two ``CodePosition`` and a
``CodeRange``: several times the cost of generating the code. A fixing run asks
for the positions of a few hundred nodes (the statements it may pass over, the
nodes it reports on). :class:`Positions` generates the code once, noting for each
node only how many tokens came before its start and end (with the provider's rules:
a node's syntactic range where its code records one), and turns a count into a line
and column when a position is asked for.

It leans on libcst's code generation state (``libcst._nodes.internal.CodegenState``),
which is not public API: where that is missing, :func:`positions` falls back to the
provider.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from typing import Any

from libcst import CSTNode, Module
from libcst.metadata import CodePosition, CodeRange

try:  # libcst's private code generation state; the provider's fallback below
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - a libcst that moved it
    CodegenState = None  # type: ignore[assignment,misc]

__all__ = ["Positions", "positions"]

_NEWLINE = re.compile(r"\r\n?|\n")


class Positions:
    r"""The syntactic range of every node of ``module`` (libcst's ``PositionProvider``).

    Args:
        module: The module; its nodes are looked up by identity.

    Example:
        >>> import libcst
        >>> module = libcst.parse_module("x = 1\nif x:\n    y = (x +\n         2)\n")
        >>> where = Positions(module)[module.body[1].body.body[0]]
        >>> (where.start.line, where.start.column, where.end.line, where.end.column)
        (3, 4, 4, 11)
    """

    def __init__(self, module: Module) -> None:
        state = _Recorder(module.default_indent, module.default_newline)
        module._codegen(state)
        self._spans = state.spans
        self._own = state.own
        self._layout = (module.default_indent, module.default_newline)
        self._code = "".join(state.tokens)
        self._offsets = [0, *accumulate(map(len, state.tokens))]
        # Line starts, for a code with a lone CR (a line break to libcst too).
        self._starts: list[int] | None = None
        if "\r" in self._code:
            self._starts = [0, *(m.end() for m in _NEWLINE.finditer(self._code))]
        self._cache: dict[int, CodeRange] = {}

    def __getitem__(self, node: CSTNode) -> CodeRange:
        """The node's range; KeyError for a node not in the module."""
        found = self._cache.get(id(node))
        if found is None:
            start, end = self._spans[id(node)]
            found = self._cache[id(node)] = CodeRange(self._at(start), self._at(end))
        return found

    def code_for(self, module: Module) -> str:
        r"""``module.code``, for a module a transform made of this one, for less.

        Each top-level statement the transform passed over (the same object) is the
        original's code, already generated here, with the blank lines and comments
        above it; only the others are generated again.

        Example:
            >>> import libcst
            >>> module = libcst.parse_module("import os\n\n# x\nx = 1\n")
            >>> new = module.with_changes(body=[module.body[0], libcst.parse_statement("y = 2\n")])
            >>> Positions(module).code_for(new) == new.code
            True
        """
        layout = (module.default_indent, module.default_newline)
        if not module.has_trailing_newline or layout != self._layout:
            return module.code
        state = CodegenState(default_indent=layout[0], default_newline=layout[1])
        for line in module.header:
            line._codegen(state)
        for statement in module.body:
            span = self._own.get(id(statement))
            if span is None:
                statement._codegen(state)
            else:
                state.tokens.append(self._code[self._offsets[span[0]] : self._offsets[span[1]]])
        for line in module.footer:
            line._codegen(state)
        if not state.tokens:
            state.add_token(state.default_newline)
        return "".join(state.tokens)

    def _at(self, token: int) -> CodePosition:
        """The line and column after the first ``token`` tokens."""
        offset = self._offsets[token]
        if self._starts is not None:
            line = bisect_right(self._starts, offset)
            return CodePosition(line, offset - self._starts[line - 1])
        line_start = self._code.rfind("\n", 0, offset) + 1
        return CodePosition(self._code.count("\n", 0, offset) + 1, offset - line_start)


if CodegenState is not None:

    class _Recorder(CodegenState):  # type: ignore[misc,valid-type]
        """Code generation that notes each node's span in tokens (the provider's rules)."""

        def __init__(self, default_indent: str, default_newline: str) -> None:
            super().__init__(default_indent=default_indent, default_newline=default_newline)
            self.spans: dict[int, tuple[int, int]] = {}
            # The module's own children (statements, header and footer lines): the whole
            # of their code, the lines above them too.
            self.own: dict[int, tuple[int, int]] = {}
            self._stack: list[int] = []

        def before_codegen(self, node: CSTNode) -> None:
            self._stack.append(len(self.tokens))

        def after_codegen(self, node: CSTNode) -> None:
            start = self._stack.pop()
            if len(self._stack) == 1:  # a child of the module
                self.own[id(node)] = (start, len(self.tokens))
            # A syntactic range recorded inside the node's own code stands.
            self.spans.setdefault(id(node), (start, len(self.tokens)))

        def pop_trailing_newline(self) -> None:
            # Kept: the counts noted so far include it, as the provider's lines do.
            pass

        def record_syntactic_position(
            self,
            node: CSTNode,
            *,
            start_node: CSTNode | None = None,
            end_node: CSTNode | None = None,
        ) -> _Syntactic:
            return _Syntactic(self, node, start_node, end_node)

    class _Syntactic:
        """The span of a node's syntactic part, or of the child nodes it names."""

        __slots__ = ("state", "node", "start_node", "end_node", "start")

        def __init__(
            self, state: Any, node: CSTNode, start_node: CSTNode | None, end_node: CSTNode | None
        ) -> None:
            self.state, self.node = state, node
            self.start_node, self.end_node = start_node, end_node

        def __enter__(self) -> None:
            self.start = len(self.state.tokens)

        def __exit__(self, *exc: object) -> None:
            spans = self.state.spans
            start = self.start if self.start_node is None else spans[id(self.start_node)][0]
            end = len(self.state.tokens) if self.end_node is None else spans[id(self.end_node)][1]
            spans[id(self.node)] = (start, end)


def positions(module: Module) -> Any:
    """The positions of ``module``'s nodes: :class:`Positions`, or libcst's provider's.

    Either maps a node to its ``CodeRange``.
    """
    if CodegenState is not None:
        return Positions(module)
    from libcst.metadata import MetadataWrapper, PositionProvider  # pragma: no cover

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # pragma: no cover
    return wrapper.resolve(PositionProvider)  # pragma: no cover
