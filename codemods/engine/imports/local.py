"""A name added to a function's own ``from m import ...``, where a fix's callee comes from it.

Code that imports inside a function keeps that import out of its module's import time
(``torch.distributed`` in a library that may run without it). A fix that needs one more
name from the same module puts it into that statement, not at the top of the module
(``need_import`` would). The statement is met before the calls below it, so the name
goes in as the visit leaves the function that holds it.
"""

from __future__ import annotations

from typing import Any

from codemods.engine.imports.adding import _merged
from codemods.syntax.cst_dispatch import CachedDispatch, CachedVisit
from codemods.syntax.lazy_libcst import cst


class LocalImports:
    """The engine's ``need_import_beside`` (a mixin of :class:`codemods.engine.transformer.Engine`).

    It uses the engine's ``parent``, ``need_import`` and ``replace``.
    """

    _replacements: dict[int, Any]

    def need_import_beside(self, statement: cst.ImportFrom, name: str) -> None:
        """Import ``name`` in ``statement`` (an original ``from m import``), where it is.

        A statement outside any function is left to ``need_import``, which adds to the
        module's own imports.
        """
        if not self._edit_function(statement, lambda updated: _with_name(updated, statement, name)):
            module = cst.Module([]).code_for_node(statement.module)  # type: ignore[arg-type]
            self.need_import(module, name)  # type: ignore[attr-defined]

    def insert_in_function(self, line: cst.SimpleStatementLine, statements: list[Any]) -> bool:
        """Put ``statements`` before ``line`` (an original line in a function) as it is left.

        The line is met before the code below it that asks (``insert_before`` would come
        too late), so the statements go in as the visit leaves the function, before the
        line's copy there. False where ``line`` is in no function (nothing is queued).
        """
        inserting = _Inserting(line, statements)
        return self._edit_function(line, lambda updated: updated.visit(inserting))

    def _edit_function(self, node: cst.CSTNode, edit: Any) -> bool:
        """Apply ``edit`` to the function holding ``node`` as the visit leaves it.

        After any replacement already queued for that function. False where ``node`` is
        in no function (nothing is queued).
        """
        function = self.parent(node)  # type: ignore[attr-defined]
        while function is not None and not isinstance(function, cst.FunctionDef):
            function = self.parent(function)  # type: ignore[attr-defined]
        if function is None:
            return False
        before = self._replacements.get(id(function))

        def edited(updated: cst.FunctionDef) -> Any:
            if before is not None:
                updated = before(updated) if callable(before) else before
            return edit(updated)

        self.replace(function, edited)  # type: ignore[attr-defined]
        return True


class _Inserting(CachedDispatch):
    """Insert statements before the first line equal to ``line`` (its blank lines first)."""

    def __init__(self, line: cst.SimpleStatementLine, statements: list[Any]) -> None:
        super().__init__()
        self._line, self._statements = line, statements

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Any:
        if not self._statements or not original_node.deep_equals(self._line):
            return updated_node
        first, *rest = self._statements
        self._statements = []
        first = first.with_changes(leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel([first, *rest, updated_node.with_changes(leading_lines=())])


def _with_name(function: Any, statement: cst.ImportFrom, name: str) -> Any:
    """``function`` with ``name`` in its copy of ``statement`` (left as it is if it changed).

    Where another fix rewrote the statement, the new code reads a name nothing binds, and
    the check of the rewrite (:mod:`codemods.verify`) withholds it.
    """
    found = [n for n in _imports_in(function) if n.deep_equals(statement)]
    if not found or isinstance(found[0].names, cst.ImportStar):
        return function
    if any(alias.evaluated_name == name and alias.asname is None for alias in found[0].names):
        return function
    return function.deep_replace(found[0], _merged(found[0], [name], []))


def _imports_in(node: cst.CSTNode) -> list[cst.ImportFrom]:
    """The ``from`` imports in ``node``'s body, nested functions and classes included."""
    found: list[cst.ImportFrom] = []

    class _Collect(CachedVisit):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            found.append(node)
            return False

    node.visit(_Collect())
    return found
