"""FSDP208: ``activation_checkpointing=Block`` as ``activation_checkpointing_policy={Block}``.

In a call of the strategy, and in ``StrategyRegistry.register(name, FSDPStrategy, ...)``,
which passes its other keywords to the strategy (:mod:`codemods.rules.strategy_registry`).
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.strategy_registry import (
    REGISTERS,
    registers_another_ast,
    registers_another_cst,
)
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst


class Fsdp208(Behaviour):
    """A class, or a list/tuple/set display of classes, becomes a set under the new name."""

    def calls(self) -> tuple[str, ...]:
        return (*self.rule.old, *REGISTERS)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        rule = self.rule
        if registers_another_cst(engine, original, rule.old):
            return updated
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if keyword(arg) != rule.argument:
                continue
            value = engine.class_set(arg.value, updated.args[index].value)
            if engine.report(arg, rule, fixable_here=value is not None) and value is not None:
                args[index] = args[index].with_changes(
                    keyword=cst.Name(rule.new_argument), value=value
                )
        return updated.with_changes(args=args)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        if registers_another_ast(detector, call, self.rule.old):
            return
        for arg in call.keywords:
            if arg.arg == self.rule.argument:
                fixable = detector.class_set(arg.value) is not None
                detector.report(arg, self.rule, fixable_here=fixable)


BEHAVIOUR = Fsdp208
