"""Which statements the engine's visit may pass over without entering them.

Given the lines the ``ast`` detector saw something in (``hot``, from
:mod:`codemods.engine.pruning`), the visit enters only the statements on them or with a
rewrite registered inside (:meth:`ColdStatements.cold`).
"""

from __future__ import annotations

from codemods.syntax.lazy_libcst import cst
from codemods.syntax.spans import Lines

#: The statements :meth:`Engine.cold` may pass over.
STATEMENTS = frozenset(
    {
        cst.SimpleStatementLine,
        cst.FunctionDef,
        cst.ClassDef,
        cst.If,
        cst.For,
        cst.While,
        cst.Try,
        cst.TryStar,
        cst.With,
        cst.Match,
    }
)


class ColdStatements:
    """The statements the visit passes over, and the nodes it must reach.

    A mixin of :class:`codemods.engine.transformer.Engine`: it uses the engine's
    ``parent`` and ``position``, and keeps in the engine the ids of the nodes with a
    rewrite registered (and of their ancestors) and whether each statement's lines are
    cold.
    """

    _hot: Lines | None
    _cold: dict[int, bool]
    _dirty: set[int]

    def mark(self, node: cst.CSTNode) -> None:
        """Make sure the visit reaches the original node ``node``: a rewrite waits there."""
        if self._hot is None:
            return
        current: cst.CSTNode | None = node
        while current is not None and id(current) not in self._dirty:
            self._dirty.add(id(current))
            current = self.parent(current)

    def cold(self, node: cst.CSTNode) -> bool:
        """Whether the visit may pass over the original node ``node`` without entering it.

        That is a statement the ``ast`` detector saw nothing in (no use or import of an
        old name, no call a rule inspects, nothing a rule reported on: the parts
        :mod:`codemods.engine.pruning` keeps for the same reason) with no rewrite registered in
        it. Every hook of the visit acts on such a part or on a registered node, so
        passing over the rest changes nothing, and saves most of a long function's
        visit where one line of it is to be fixed.
        """
        if type(node) not in STATEMENTS or self._hot is None or id(node) in self._dirty:
            return False
        cold = self._cold.get(id(node))
        if cold is None:
            where = self.position(node)
            first = where.start.line
            decorators = getattr(node, "decorators", None)
            if decorators:  # a definition's range starts at `def` or `class`
                first = self.position(decorators[0]).start.line
            cold = self._cold[id(node)] = not self._hot.meet(first, where.end.line)
        return cold
