"""A call rewrite about one argument with no fix of its own: the argument is reported."""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst


class ArgumentReported(Behaviour):
    """Report each call of the rule's callables that passes ``rule.argument``."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        for arg in original.args:
            if keyword(arg) == self.rule.argument:
                engine.report(arg, self.rule)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        for arg in call.keywords:
            if arg.arg == self.rule.argument:
                detector.report(arg, self.rule)
