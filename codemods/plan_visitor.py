"""The libcst visitor that collects what :class:`codemods.plan.Planner` plans from.

Apart from :mod:`codemods.plan` because subclassing a libcst visitor loads libcst, which
lint on ``ast`` never needs (:mod:`codemods.lazy_libcst`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from codemods.lazy_libcst import cst
from codemods.registry import Rule
from codemods.syntax import is_fallback


class Collector(cst.CSTVisitor):
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

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Count the fallback blocks (import fallbacks, version gates) being entered."""
        self._fallback += is_fallback(node)
        return not self.cold(node) and super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        """Count the fallback blocks being left."""
        self._fallback -= is_fallback(original_node)
        super().on_leave(original_node)

    def _visit_import(self, node: cst.Import | cst.ImportFrom) -> bool:
        for old, rule in self.imported(node):
            self._seen(rule, old, node)
        self.held |= self.rebound(node)
        return False  # names in an import are not uses

    visit_Import = _visit_import
    visit_ImportFrom = _visit_import

    def _visit(self, node: cst.BaseExpression) -> bool:
        found = self.find(node)
        if found is None:
            return True
        old, rule, qualified = found
        self._seen(rule, old, node)
        self.references.append((node, rule, old, qualified))
        return False

    visit_Name = _visit
    visit_Attribute = _visit
