"""String and number values of one argument: ``Trainer(strategy="fsdp_native")``.

The value may also come through a name bound once to the literal
(``strategy = "fsdp_native"`` ... ``Trainer(strategy=strategy)``), or through a test
parameter a ``pytest.mark.parametrize`` list fills: where that one binding is a plain
assignment or such a parameter, and every use of the name is this argument of one of
the rule's calls, each call with an old value among those is a finding, for a human
(the literal sits in another statement, which the call's fix does not reach).
"""

from __future__ import annotations

import ast
from typing import Any

from codemods.registry import Rule
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.assignments import assign_of, ast_assigns
from codemods.rules.parametrize import ast_values, cst_values
from codemods.syntax.cst_nodes import keyword, literal, string_like
from codemods.syntax.lazy_libcst import cst


def _old_value(value: Any, mapping: dict) -> bool:
    # 16 and "16" are distinct keys, and True == 1: match the type too.
    return value in mapping and type(value) in (str, int)


def _bound_values(engine: Engine, name: cst.Name, rule: Rule) -> list[cst.BaseExpression]:
    """The values ``name`` may hold where it is passed: its one binding's, or none.

    The one binding is a plain ``name = value`` or a test parameter that
    ``pytest.mark.parametrize`` fills (each of its values), and every use of the name
    passes ``rule.argument=`` to one of ``rule.old``; anything else gives nothing.
    """
    scope = engine.scope(name)
    if scope is None:
        return []
    referents = {id(r): r for access in scope.accesses[name] for r in access.referents}
    if len(referents) != 1:
        return []
    (assignment,) = referents.values()
    if len(assignment.scope.assignments[name.value]) != 1:
        return []  # rebound: another value may reach some use
    for access in assignment.references:
        arg = engine.parent(access.node)
        call = engine.parent(arg) if isinstance(arg, cst.Arg) else None
        if (
            not isinstance(call, cst.Call)
            or keyword(arg) != rule.argument
            or not engine.qualified(call.func) & set(rule.old)
        ):
            return []
    if isinstance(assignment.node, cst.Param):
        return cst_values(engine, assignment.node) or []
    statement = assign_of(engine, assignment.node)
    return [] if statement is None else [statement.value]


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
            if _old_value(old, mapping) and engine.report(arg, self.rule):
                value = string_like(arg.value, mapping[old])
                args[index] = args[index].with_changes(value=value)
            elif isinstance(arg.value, cst.Name):
                values = _bound_values(engine, arg.value, self.rule)
                if any(_old_value(literal(value), mapping) for value in values):
                    engine.report(arg, self.rule, fixable_here=False)
        return updated.with_changes(args=args)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import literal

        mapping = dict(self.rule.values)
        for arg in call.keywords:
            if arg.arg != self.rule.argument:
                continue
            old = literal(detector, arg.value)
            if _old_value(old, mapping):
                detector.report(arg, self.rule)
            elif type(arg.value) is ast.Name:
                values = _ast_bound_values(detector, arg.value, self.rule)
                if any(_old_value(literal(detector, value), mapping) for value in values):
                    detector.report(arg, self.rule, fixable_here=False)


def _ast_bound_values(detector: Detector, name: ast.Name, rule: Rule) -> list[ast.expr]:
    """The ``ast`` half of :func:`_bound_values`."""
    names = detector.names
    binder = names.lookup(names.scope_of[id(name)], name.id)
    if binder is None:
        return []
    for use in names.references(binder, name.id):
        keyword_node = detector.parent(use)
        call = detector.parent(keyword_node) if type(keyword_node) is ast.keyword else None
        if (
            type(call) is not ast.Call
            or keyword_node.arg != rule.argument  # type: ignore[union-attr]
            or not detector.qualified(call.func) & set(rule.old)  # type: ignore[union-attr]
        ):
            return []
    parametrized = ast_values(detector, name)
    if parametrized is not None:
        return parametrized
    statements = ast_assigns(detector, binder, name.id)
    if statements is None or len(statements) != 1:
        return []
    return [statements[0].value]
