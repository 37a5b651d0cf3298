"""FSDP209: ``FSDPStrategy(auto_wrap_policy=partial(transformer_auto_wrap_policy, ...))``.

Since Lightning 2.1 the strategy takes the layer classes as a set and builds the
``ModuleWrapPolicy`` itself. A comment inside the partial is kept (moved after the set).
Also in ``StrategyRegistry.register(name, FSDPStrategy, ...)``, which passes its other
keywords to the strategy (:mod:`codemods.rules.strategy_registry`).
"""

from __future__ import annotations

import ast

from codemods.registry.names import TORCH_WRAP
from codemods.rules.api import PARTIAL, Behaviour, Detector, Engine
from codemods.rules.strategy_registry import (
    REGISTERS,
    registers_another_ast,
    registers_another_cst,
)
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst

_TRANSFORMER_POLICY = {f"{TORCH_WRAP}.transformer_auto_wrap_policy"}


class Fsdp209(Behaviour):
    """The partial becomes the set of its layer classes."""

    def calls(self) -> tuple[str, ...]:
        return (*self.rule.old, *REGISTERS)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        rule = self.rule
        if registers_another_cst(engine, original, rule.old):
            return updated
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            inner = arg.value
            if keyword(arg) != rule.argument or not isinstance(inner, cst.Call):
                continue
            if PARTIAL not in engine.qualified(inner.func) or not inner.args:
                continue
            if not engine.qualified(inner.args[0].value) & _TRANSFORMER_POLICY:
                continue
            rest = inner.args[1:]
            if len(rest) != 1 or keyword(rest[0]) != "transformer_layer_cls":
                engine.report(arg, rule, fixable_here=False)
                continue
            value = engine.class_set(rest[0].value)
            if engine.report(arg, rule, fixable_here=value is not None) and value is not None:
                engine.forget(inner.func)
                engine.forget(inner.args[0].value)
                args[index] = _keep_comment(args[index].with_changes(value=value), inner)
        return updated.with_changes(args=args)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        if registers_another_ast(detector, call, self.rule.old):
            return
        for arg in call.keywords:
            inner = arg.value
            if arg.arg != self.rule.argument or type(inner) is not ast.Call:
                continue
            arguments = on_ast.arguments(inner)
            if PARTIAL not in detector.qualified(inner.func) or not arguments:
                continue
            if not detector.qualified(on_ast.value(arguments[0])) & _TRANSFORMER_POLICY:
                continue
            rest = arguments[1:]
            if len(rest) != 1 or on_ast.keyword(rest[0]) != "transformer_layer_cls":
                detector.report(arg, self.rule, fixable_here=False)
                continue
            value = detector.class_set(on_ast.value(rest[0]))
            detector.report(arg, self.rule, fixable_here=value is not None)


def _comments(call: cst.Call) -> list[cst.Comment]:
    """The comments at the ends of lines between a call's arguments."""
    found = []
    for arg in call.args:
        after = arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None
        if isinstance(after, cst.ParenthesizedWhitespace) and after.first_line.comment:
            found.append(after.first_line.comment)
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        if call.whitespace_before_args.first_line.comment:
            found.insert(0, call.whitespace_before_args.first_line.comment)
    return found


def _keep_comment(arg: cst.Arg, dropped: cst.Call) -> cst.Arg:
    """``arg`` with the comment the dropped partial held, at the end of its own line."""
    comments = _comments(dropped)
    comma = arg.comma
    if len(comments) != 1 or not isinstance(comma, cst.Comma):
        return arg
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace) and after.first_line.comment is None:
        line = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=comments[0])
        return arg.with_changes(
            comma=comma.with_changes(whitespace_after=after.with_changes(first_line=line))
        )
    return arg


BEHAVIOUR = Fsdp209
