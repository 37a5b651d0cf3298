"""Keyword renames: ``f(old=...)`` becomes ``f(new=...)``, in calls and in ``partial``.

A rule that is also found in definitions (``Rule.in_definitions``: a policy written
with the old parameter name) renames the parameter there too, see
:mod:`codemods.rules.kinds.parameter_rename`.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.kinds import parameter_rename
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst


def rename_keywords(
    engine: Engine, rule, original: cst.Call, updated: cst.Call, start: int = 0
) -> cst.Call:
    """``updated`` with ``rule.argument=`` renamed ``rule.new_argument=`` where it applies."""
    args = list(updated.args)
    for index, arg in enumerate(original.args[start:], start):
        if keyword(arg) == rule.argument and engine.report(arg, rule):
            args[index] = args[index].with_changes(keyword=cst.Name(rule.new_argument))
    return updated.with_changes(args=args)


class KeywordRename(Behaviour):
    """Rename the keyword in calls and partials of the rule's callables."""

    def __init__(self, rule) -> None:
        super().__init__(rule)
        self.definitions = rule.in_definitions  # type: ignore[misc]

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def partials(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        return rename_keywords(engine, self.rule, original, updated)

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        return rename_keywords(engine, self.rule, original, updated, start=1)

    def function(self, engine: Engine, node: cst.FunctionDef | cst.Lambda) -> None:
        parameter_rename.rename_parameter(engine, self.rule, node)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        # A partial's first argument is positional: its keywords are the same as a call's.
        for arg in call.keywords:
            if arg.arg == self.rule.argument:
                detector.report(arg, self.rule)

    ast_partial = ast_call

    def ast_function(self, detector: Detector, node: ast.AST) -> None:
        parameter_rename.ast_rename_parameter(detector, self.rule, node)
