"""String and number values of one argument: ``Trainer(strategy="fsdp_native")``.

The value may also come through a name bound once to the literal
(``strategy = "fsdp_native"`` ... ``Trainer(strategy=strategy)``), or through a test
parameter a ``pytest.mark.parametrize`` list fills: where that one binding is a plain
assignment or such a parameter, and every use of the name is this argument of one of
the rule's calls, each call with an old value among those is a finding. Where the name
is a function's own (a local, or a parametrized test's parameter) with that one use, the
fix rewrites the old literals where they are bound (the parametrize list's old values
only); a module's name (which other modules may read) or a name several calls use stays
for a human.
"""

from __future__ import annotations

import ast

from codemods.registry import Rule
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.assignments import assign_of, ast_assigns
from codemods.rules.parametrize import ast_values, cst_values
from codemods.syntax.cst_nodes import keyword, literal, string_like
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


def _old_value(value: Any, mapping: dict) -> bool:
    # 16 and "16" are distinct keys, and True == 1: match the type too.
    return value in mapping and type(value) in (str, int)


def bound_values(
    engine: Engine, name: cst.Name, rule: Rule
) -> tuple[list[cst.BaseExpression], int]:
    """The values ``name`` may hold where it is passed, and how many uses it has.

    The one binding is a plain ``name = value`` or a test parameter that
    ``pytest.mark.parametrize`` fills (each of its values), and every use of the name
    passes ``rule.argument=`` to one of ``rule.old``; anything else gives ``([], 0)``.
    """
    scope = engine.scope(name)
    if scope is None:
        return [], 0
    referents = {id(r): r for access in scope.accesses[name] for r in access.referents}
    if len(referents) != 1:
        return [], 0
    (assignment,) = referents.values()
    if len(assignment.scope.assignments[name.value]) != 1:
        return [], 0  # rebound: another value may reach some use
    for access in assignment.references:
        arg = engine.parent(access.node)
        call = engine.parent(arg) if isinstance(arg, cst.Arg) else None
        if (
            not isinstance(call, cst.Call)
            or keyword(arg) != rule.argument
            or not engine.qualified(call.func) & set(rule.old)
        ):
            return [], 0
    # A module's or class's name may be read elsewhere too (`from config import STRATEGY`):
    # its literal is not rewritten (0 uses counts as several).
    uses = len(assignment.references) if type(assignment.scope).__name__ == "FunctionScope" else 0
    if isinstance(assignment.node, cst.Param):
        return cst_values(engine, assignment.node) or [], uses
    statement = assign_of(engine, assignment.node)
    return ([], 0) if statement is None else ([statement.value], uses)


class StringValue(Behaviour):
    """Replace an old literal value of ``rule.argument`` by the new one."""

    modules = True  # the literals a name passes, bound before the call

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def module(self, engine: Engine, node: cst.Module) -> None:
        """Rewrite the old literals a name passes, where that name has one use.

        The binding (``strategy = "fsdp_native"``, a parametrize list) comes before the
        call, so it is replaced as the visit leaves it: only where the call's fix
        applies, which :meth:`call` then reports the same way. A name used by several
        calls stays for a human (one of them may be kept on purpose).
        """
        if not engine.settings.enabled(self.rule):
            return
        mapping = dict(self.rule.values)
        old_names = set(self.rule.old)
        for call in engine.nodes(cst.Call):
            named = [
                arg
                for arg in call.args
                if keyword(arg) == self.rule.argument and isinstance(arg.value, cst.Name)
            ]
            if not named or not engine.qualified(call.func) & old_names:
                continue
            for arg in named:
                values, uses = bound_values(engine, arg.value, self.rule)
                old = [value for value in values if _old_value(literal(value), mapping)]
                if not old or uses != 1 or not engine.report(arg, self.rule, quiet=True):
                    continue
                for value in old:
                    engine.replace(value, string_like(value, mapping[literal(value)]))

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
                values, uses = bound_values(engine, arg.value, self.rule)
                if values and any(_old_value(literal(value), mapping) for value in values):
                    # The literals were rewritten as the visit began (:meth:`module`).
                    engine.report(arg, self.rule, fixable_here=uses == 1)
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
                values, uses = ast_bound_values(detector, arg.value, self.rule)
                if any(_old_value(literal(detector, value), mapping) for value in values):
                    detector.report(arg, self.rule, fixable_here=uses == 1)


def ast_bound_values(detector: Detector, name: ast.Name, rule: Rule) -> tuple[list[ast.expr], int]:
    """The ``ast`` half of :func:`bound_values`."""
    names = detector.names
    binder = names.lookup(names.scope_of[name], name.id)
    if binder is None:
        return [], 0
    references = names.references(binder, name.id)
    for use in references:
        keyword_node = detector.parent(use)
        call = detector.parent(keyword_node) if type(keyword_node) is ast.keyword else None
        if (
            type(call) is not ast.Call
            or keyword_node.arg != rule.argument  # type: ignore[union-attr]
            or not detector.qualified(call.func) & set(rule.old)  # type: ignore[union-attr]
        ):
            return [], 0
    uses = len(references) if binder.kind == "function" else 0  # as in the libcst half
    parametrized = ast_values(detector, name)
    if parametrized is not None:
        return parametrized, uses
    statements = ast_assigns(detector, binder, name.id)
    if statements is None or len(statements) != 1:
        return [], 0
    return [statements[0].value], uses
