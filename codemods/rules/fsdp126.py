"""FSDP126: ``distribute_module(input_fn=f)`` where ``f`` takes the old two arguments.

torch 2.3 passes the module first (``f(module, inputs, device_mesh)``) and only warns
about a two-argument function. A function is judged where it is visible: a lambda in
the call, or a name bound once in reach to a ``def`` of the file. Reported for a human,
who adds the ``module`` parameter (the function may be called elsewhere too).
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import is_plain_positional, keyword
from codemods.syntax.lazy_libcst import cst

#: ``distribute_module(module, device_mesh, partition_fn, input_fn, output_fn)``.
_POSITIONS = {"input_fn": 3, "output_fn": 4}


def _arity(params: cst.Parameters) -> int | None:
    """The number of positional parameters, or None where it is open (``*args``)."""
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return None
    return len(params.posonly_params) + len(params.params)


def function_arity(engine: Engine, value: cst.BaseExpression) -> int | None:
    """How many positional parameters ``value`` (a lambda or a local ``def``'s name) takes."""
    if isinstance(value, cst.Lambda):
        return _arity(value.params)
    if not isinstance(value, cst.Name):
        return None
    scope = engine.scope(value)
    if scope is None or value.value not in scope:
        return None
    bindings = list(scope[value.value])
    if len(bindings) != 1 or not isinstance(getattr(bindings[0], "node", None), cst.FunctionDef):
        return None
    return _arity(bindings[0].node.params)


def _ast_arity(params: ast.arguments) -> int | None:
    """:func:`_arity` on ``ast``."""
    if params.vararg is not None or params.kwarg is not None:
        return None
    return len(params.posonlyargs) + len(params.args)


def _definitions(detector: Detector) -> dict[tuple[int, int], ast.AST]:
    """The module's ``def`` statements by position (as :mod:`codemods.astlint.scopes` has them)."""
    found = detector.scratch.get("FSDP126:defs")
    if found is None:
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
        found = {(node.lineno, node.col_offset): node for node in detector.nodes(*kinds)}
        detector.scratch["FSDP126:defs"] = found
    return found


def ast_function_arity(detector: Detector, value: ast.expr) -> int | None:
    """:func:`function_arity` on ``ast``: a lambda, or a name bound only by one ``def``."""
    from codemods.syntax.ast_nodes import Undecided

    if type(value) is ast.Lambda:
        return _ast_arity(value.args)
    scope = detector.scope(value)
    if type(value) is not ast.Name or scope is None:
        return None
    name = value.id
    if name in detector.names.deleted:  # `del name` binds to astscope, not to libcst
        raise Undecided(f"`{name}` is deleted somewhere")
    binder = detector.names.lookup(scope, name)
    if binder is None or binder.count.get(name) != 1 or name in binder.imports:
        return None
    definition = _definitions(detector).get(binder.others[name][0])
    if getattr(definition, "name", None) != name:
        return None
    return _ast_arity(definition.args)  # type: ignore[union-attr]


class Fsdp126(Behaviour):
    """Report ``input_fn``/``output_fn`` arguments that are visibly two-argument functions."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        positional = [a for a in original.args if is_plain_positional(a)]
        for name, position in _POSITIONS.items():
            found = [a for a in original.args if keyword(a) == name]
            if not found and len(positional) > position:
                found = [positional[position]]
            if found and function_arity(engine, found[0].value) == 2:
                engine.report(found[0], self.rule)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import plain_positional, unparenthesized

        positional = [a for a in call.args if plain_positional(a)]
        for name, position in _POSITIONS.items():
            found: list[ast.AST] = [a for a in call.keywords if a.arg == name]
            if not found and len(positional) > position:
                found = [positional[position]]
            if not found:
                continue
            arg = found[0]
            value = arg.value if type(arg) is ast.keyword else arg
            if ast_function_arity(detector, value) == 2:  # type: ignore[arg-type]
                detector.report(
                    arg if type(arg) is ast.keyword else unparenthesized(detector, arg), self.rule
                )


BEHAVIOUR = Fsdp126
