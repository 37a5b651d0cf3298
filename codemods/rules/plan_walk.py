"""The walk that collects what :class:`codemods.rules.plan.Planner` plans from.

It reaches the nodes libcst's visitor would (:func:`codemods.syntax.cst_tree.child_nodes`),
without the visitor's machinery: a libcst visit rebuilds every node it enters, even
for a visitor that changes nothing, which cost more than the collecting itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from codemods.registry import Rule
from codemods.syntax.cst_tree import child_nodes
from codemods.syntax.gates import fallback_regions
from codemods.syntax.lazy_libcst import cst


class Collector:
    """Every use and import of an old name; which rules appear in import fallbacks."""

    def __init__(
        self,
        find: Callable[[cst.BaseExpression], tuple[str, Rule, str] | None],
        imported: Callable[[cst.Import | cst.ImportFrom], Iterable[tuple[str, Rule]]],
        silenced: Callable[[cst.CSTNode, str], bool],
        rebound: Callable[[cst.Import | cst.ImportFrom], set[str]],
        cold: Callable[[cst.CSTNode], bool] = lambda node: False,
    ):
        self.find = find
        self.imported = imported
        self.silenced = silenced
        self.rebound = rebound
        self.cold = cold  # a statement with no old name in it: not entered
        # (node, rule, old name, qualified name): the planner's references
        self.references: list[tuple[cst.CSTNode, Rule, str, str]] = []
        self.olds: dict[str, set[str]] = {}  # rule code -> old names seen
        self.held: set[str] = set()  # rule codes the file keeps: fallback, noqa, rebound
        self._fallback = 0

    def _seen(self, rule: Rule, old: str, node: cst.CSTNode) -> None:
        self.olds.setdefault(rule.code, set()).add(old)
        if self._fallback or self.silenced(node, rule.code):
            self.held.add(rule.code)

    def collect(
        self, module: cst.Module, parents: dict[cst.CSTNode, cst.CSTNode] | None = None
    ) -> None:
        """Walk ``module``: an import, or a name or attribute found, is not entered.

        ``parents``, if given, gets the parent of every node the walk reaches but the
        module, each before the node is looked at.
        """
        parents = {} if parents is None else parents
        imports = (cst.Import, cst.ImportFrom)
        expressions = (cst.Name, cst.Attribute)
        stack: list[tuple[cst.CSTNode, int]] = [(module, 0)]
        while stack:
            node, fallback = stack.pop()
            # Inside how many fallback blocks (import fallbacks, version gates' older
            # branches) it is.
            regions = fallback_regions(node)
            if regions and regions[0] is node:
                fallback, regions = fallback + 1, ()
            self._fallback = fallback
            if self.cold(node):  # a statement with no old name in it
                continue
            kind = type(node)
            if kind in imports:
                self._visit_import(node)
            elif kind not in expressions or self._visit(node):
                for child in child_nodes(node):
                    parents[child] = node
                    stack.append((child, fallback + any(r is child for r in regions)))

    def _visit_import(self, node: cst.Import | cst.ImportFrom) -> None:
        # Not entered: names in an import are not uses.
        for old, rule in self.imported(node):
            self._seen(rule, old, node)
        self.held |= self.rebound(node)

    def _visit(self, node: cst.BaseExpression) -> bool:
        found = self.find(node)
        if found is None:
            return True
        old, rule, qualified = found
        self._seen(rule, old, node)
        self.references.append((node, rule, old, qualified))
        return False
