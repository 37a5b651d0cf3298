"""String and number values of one argument: ``Trainer(strategy="fsdp_native")``."""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import keyword, literal, string_like
from codemods.syntax.lazy_libcst import cst


class StringValue(Behaviour):
    """Replace an old literal value of ``rule.argument`` by the new one."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        mapping = dict(self.rule.values)
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if keyword(arg) != self.rule.argument:
                continue
            old = literal(arg.value)
            # 16 and "16" are distinct keys, and True == 1: match the type too.
            if old in mapping and type(old) in (str, int) and engine.report(arg, self.rule):
                value = string_like(arg.value, mapping[old])
                args[index] = args[index].with_changes(value=value)
        return updated.with_changes(args=args)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import literal

        mapping = dict(self.rule.values)
        for arg in call.keywords:
            if arg.arg != self.rule.argument:
                continue
            old = literal(detector, arg.value)
            if old in mapping and type(old) in (str, int):
                detector.report(arg, self.rule)
