"""A parameter renamed in the user's own callables: ``def policy(module, recurse, old)``.

torch 2.0 passes the numel to auto-wrap policies as ``nonwrapped_numel=``, so a policy
written with ``unwrapped_params`` breaks there. But FairScale's ``enable_wrap`` /
``auto_wrap`` / FSDP and torch before 2.0 call the same policy with
``unwrapped_params=``, and a call in the file may pass it by that keyword too. So the
parameter is renamed only where every use of the callable is certain to reach a torch
consumer, or where nothing but this file can use it (a nested function the file does
not use); a call in the file that passes the old keyword is renamed with it, all or
nothing. A module-level policy the file does not use is another module's to use, which
this file does not show: its fix is withheld and the finding says why. Lambdas count as
definitions.
"""

from __future__ import annotations

import ast

from codemods.registry import Rule
from codemods.registry.names import (
    CHECKPOINT_WRAPPER,
    COMPAT_FSDP_CLASSES,
    TORCH_FSDP_CLASSES,
    TORCH_WRAP,
    fabric_paths,
    trainer_paths,
)
from codemods.rules.api import PARTIAL, Detector, Engine
from codemods.rules.assignments import assign_of, ast_assigns
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

#: Callables that hand ``auto_wrap_policy=`` to torch's FSDP, which calls it with
#: ``nonwrapped_numel=`` (torch >= 2.0) or adapts it (compat).
TORCH_POLICY_CONSUMERS = frozenset(
    {
        *TORCH_FSDP_CLASSES,
        *COMPAT_FSDP_CLASSES,
        f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing",
        "compat.fsdp2.fully_shard_by_policy",
        *trainer_paths("strategies.FSDPStrategy", "strategies.DDPFullyShardedNativeStrategy"),
        *fabric_paths("strategies.FSDPStrategy"),
    }
)
#: torch's policy combinators: they call each of ``policies=[...]`` the way torch does.
TORCH_POLICY_COMBINATORS = frozenset({f"{TORCH_WRAP}._or_policy"})

#: Where a callable ends up, as far as the file shows.
TORCH, KEYWORD_CALL, UNKNOWN = "torch", "keyword call", "unknown"


def _takes(node: cst.FunctionDef | cst.Lambda, names: set[str]) -> cst.Param | None:
    params = {p.name.value: p for p in (*node.params.posonly_params, *node.params.params)}
    if not names <= set(params):
        return None
    return params[sorted(names - {"recurse"})[0]]


def _bound_name(engine: Engine, node: cst.FunctionDef | cst.Lambda) -> cst.Name | None:
    """The name a definition is bound to (``def f``, ``f = lambda ...``), if any."""
    if isinstance(node, cst.FunctionDef):
        return node.name
    parent = engine.parent(node)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        return target if isinstance(target, cst.Name) else None
    return None


def _references(engine: Engine, name: cst.Name) -> list[cst.CSTNode] | None:
    """Every use of the binding ``name`` makes; None where that is not certain.

    A name bound more than once (``policy = mine`` on one branch of an ``if``, a torch
    policy on the others) is followed where every binding is such an assignment: each
    use then reads one of those values, so where every use reaches torch, so does this
    one. Another kind of binding (an import, a parameter, a loop) stops it.
    """
    scope = engine.scope(name)
    if scope is None:
        return None
    assignments = [a for a in scope.assignments[name.value] if getattr(a, "node", None)]
    if len(assignments) == 1:
        return [access.node for access in assignments[0].references]
    if not all(assign_of(engine, a.node) for a in assignments):
        return None  # rebound otherwise: its uses may mean something else
    uses = {id(access.node): access.node for a in assignments for access in a.references}
    return list(uses.values())


def destinations(engine: Engine, value: cst.CSTNode, rule: Rule, depth: int = 0) -> list[tuple]:
    """Where the callable expression ``value`` goes: ``(kind, node)`` pairs.

    ``kind`` is :data:`TORCH` (handed to a torch consumer), :data:`KEYWORD_CALL` (called
    here with ``rule.argument=``; ``node`` is that argument), or :data:`UNKNOWN`.
    """
    if depth > 8:
        return [(UNKNOWN, value)]
    parent = engine.parent(value)
    if isinstance(parent, cst.IfExp) and value is not parent.test:
        return destinations(engine, parent, rule, depth + 1)
    if isinstance(parent, cst.Call) and parent.func is value:  # called here
        given = [a for a in parent.args if keyword(a) == rule.argument]
        return [(KEYWORD_CALL, a) for a in given] or [("call", parent)]
    if isinstance(parent, cst.Element):
        holder = engine.parent(parent)
        arg = engine.parent(holder) if isinstance(holder, (cst.List, cst.Tuple)) else None
        call = engine.parent(arg) if isinstance(arg, cst.Arg) else None
        if (
            isinstance(call, cst.Call)
            and keyword(arg) == "policies"
            and PARTIAL in engine.qualified(call.func)
            and call.args
            and engine.qualified(call.args[0].value) & TORCH_POLICY_COMBINATORS
        ):
            return destinations(engine, call, rule, depth + 1)
        return [(UNKNOWN, value)]
    if isinstance(parent, cst.Arg):
        call = engine.parent(parent)
        if not isinstance(call, cst.Call):
            return [(UNKNOWN, value)]
        if PARTIAL in engine.qualified(call.func) and call.args and call.args[0] is parent:
            if any(keyword(a) == rule.argument for a in call.args[1:]):
                return [(UNKNOWN, value)]
            return destinations(engine, call, rule, depth + 1)
        if keyword(parent) == "auto_wrap_policy" and (
            engine.qualified(call.func) & TORCH_POLICY_CONSUMERS
        ):
            return [(TORCH, value)]
        return [(UNKNOWN, value)]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        uses = _references(engine, target) if isinstance(target, cst.Name) else None
        if uses is None:
            return [(UNKNOWN, value)]
        return [d for use in uses for d in destinations(engine, use, rule, depth + 1)]
    return [(UNKNOWN, value)]


def _keyword_calls(engine: Engine, rule: Rule) -> list[cst.Arg]:
    """Every ``rule.argument=`` passed in the module to something that is not torch's."""
    key = f"{rule.code}:keyword calls"
    if key not in engine.scratch:
        torch_callables = set(rule.old)
        engine.scratch[key] = [
            arg
            for call in engine.nodes(cst.Call)
            if not engine.qualified(call.func) & torch_callables
            for arg in call.args
            if keyword(arg) == rule.argument
        ]
    return engine.scratch[key]


def _imported_elsewhere(name: str, rule: Rule) -> str:
    """Why a module-level policy the file does not use keeps its parameter."""
    return (
        f"`{name}` is not used in this file: a module that imports it may pass "
        f"`{rule.argument}=` to it, as FairScale's `auto_wrap` does"
    )


def _passes_it(line: int, rule: Rule) -> str:
    """Why a policy beside a call passing the old keyword to a given policy keeps it."""
    return (
        f"line {line} passes `{rule.argument}=` to a policy it is given, as FairScale's "
        "`auto_wrap` does: that call and the policies it calls change together, by hand"
    )


def _is_method(engine: Engine, node: cst.CSTNode) -> bool:
    block = engine.parent(node)
    return isinstance(block, cst.IndentedBlock) and isinstance(engine.parent(block), cst.ClassDef)


def ast_rename_parameter(detector: Detector, rule: Rule, node: ast.AST) -> None:
    """The ``ast`` half of :func:`rename_parameter` (what a run that fixes nothing reports)."""
    args: ast.arguments = node.args  # type: ignore[attr-defined]
    params = {a.arg: a for a in (*args.posonlyargs, *args.args)}
    names = {rule.argument, "recurse"}
    if not names <= set(params):
        return
    param = params[sorted(names - {"recurse"})[0]]
    parent = detector.parent(node)
    why_not = None
    if type(node) is not ast.Lambda and type(parent) is ast.ClassDef:
        uses: list[tuple] = [(UNKNOWN, node)]  # a method: its uses are its instances'
    else:
        scope, name = _ast_bound_name(detector, node, parent)
        if name is None:
            lambda_alone = type(node) is ast.Lambda
            uses = _ast_destinations(detector, node, rule) if lambda_alone else [(UNKNOWN, node)]
        else:
            references = _ast_references(detector, scope, name)
            if references is None:
                uses = [(UNKNOWN, node)]
            elif not references and scope is detector.names.module:
                uses, why_not = [(UNKNOWN, node)], _imported_elsewhere(name, rule)
            else:
                uses = [d for use in references for d in _ast_destinations(detector, use, rule)]
    renamed_here = {id(arg) for kind, arg in uses if kind == KEYWORD_CALL}
    others = [a for a in _ast_keyword_calls(detector, rule) if id(a) not in renamed_here]
    certain = not others and all(kind in (TORCH, KEYWORD_CALL, "call") for kind, _ in uses)
    if others:
        why_not = _passes_it(detector.position(others[0])[0], rule)
    detector.report(param, rule, fixable_here=certain, why_not=why_not)


def _ast_bound_name(detector: Detector, node: ast.AST, parent: ast.AST | None) -> tuple[Any, Any]:
    """The scope and name a definition is bound to (``def f``, ``f = lambda ...``)."""
    if type(node) is not ast.Lambda:
        return detector.names.scope_of_definition(node), node.name  # type: ignore[attr-defined]
    if type(parent) is ast.Assign and len(parent.targets) == 1:
        target = parent.targets[0]
        if type(target) is ast.Name:
            return detector.scope(target), target.id
    return None, None


def _ast_references(detector: Detector, scope: Any, name: str) -> list[ast.AST] | None:
    """The ``ast`` half of :func:`_references`."""
    if scope is None or name in scope.imports:
        return None
    if scope.count.get(name, 0) != 1 and ast_assigns(detector, scope, name) is None:
        return None  # rebound otherwise: its uses may mean something else
    return detector.names.references(scope, name)


def _ast_destinations(
    detector: Detector, value: ast.AST, rule: Rule, depth: int = 0
) -> list[tuple]:
    """The ``ast`` half of :func:`destinations`."""
    from codemods.syntax.ast_nodes import arguments, keyword

    if depth > 8:
        return [(UNKNOWN, value)]
    parent = detector.parent(value)
    kind = type(parent)
    if kind is ast.IfExp and value is not parent.test:  # type: ignore[attr-defined]
        return _ast_destinations(detector, parent, rule, depth + 1)
    if kind is ast.Call and parent.func is value:  # type: ignore[attr-defined]
        given = [a for a in parent.keywords if a.arg == rule.argument]  # type: ignore[attr-defined]
        return [(KEYWORD_CALL, a) for a in given] or [("call", parent)]
    if kind in (ast.List, ast.Tuple, ast.Set):
        arg = detector.parent(parent) if kind is not ast.Set else None
        call = detector.parent(arg) if type(arg) is ast.keyword else None
        if (
            type(call) is ast.Call
            and arg.arg == "policies"  # type: ignore[union-attr]
            and PARTIAL in detector.qualified(call.func)
            and detector.qualified(_value(arguments(call)[0])) & TORCH_POLICY_COMBINATORS
        ):
            return _ast_destinations(detector, call, rule, depth + 1)
        return [(UNKNOWN, value)]
    arg, call = None, None
    if kind is ast.keyword:
        arg, call = parent, detector.parent(parent)
    elif kind is ast.Starred:
        arg, call = parent, detector.parent(parent)
    elif kind is ast.Call:  # a positional argument
        arg, call = value, parent
    if arg is not None:
        if type(call) is not ast.Call:
            return [(UNKNOWN, value)]
        own = arguments(call)
        if PARTIAL in detector.qualified(call.func) and own[0] is arg:
            if any(keyword(a) == rule.argument for a in own[1:]):
                return [(UNKNOWN, value)]
            return _ast_destinations(detector, call, rule, depth + 1)
        if keyword(arg) == "auto_wrap_policy" and (
            detector.qualified(call.func) & TORCH_POLICY_CONSUMERS
        ):
            return [(TORCH, value)]
        return [(UNKNOWN, value)]
    if kind is ast.Assign and len(parent.targets) == 1:  # type: ignore[attr-defined]
        target = parent.targets[0]  # type: ignore[attr-defined]
        uses = None
        if type(target) is ast.Name:
            uses = _ast_references(detector, detector.scope(target), target.id)
        if uses is None:
            return [(UNKNOWN, value)]
        return [d for use in uses for d in _ast_destinations(detector, use, rule, depth + 1)]
    return [(UNKNOWN, value)]


def _value(arg: ast.AST) -> ast.AST:
    return arg.value if type(arg) in (ast.keyword, ast.Starred) else arg  # type: ignore[attr-defined]


def _ast_keyword_calls(detector: Detector, rule: Rule) -> list[ast.keyword]:
    """The ``ast`` half of :func:`_keyword_calls`."""
    key = f"{rule.code}:keyword calls"
    if key not in detector.scratch:
        torch_callables = set(rule.old)
        detector.scratch[key] = [
            arg
            for call in detector.nodes(ast.Call)
            for arg in call.keywords  # the keyword first: most calls do not pass it
            if arg.arg == rule.argument and not detector.qualified(call.func) & torch_callables
        ]
        detector.depends_on(detector.scratch[key])
    return detector.scratch[key]


def rename_parameter(engine: Engine, rule: Rule, node: cst.FunctionDef | cst.Lambda) -> None:
    """Report (and where certain, rename) ``rule.argument`` in a policy definition."""
    param = _takes(node, {rule.argument, "recurse"})
    if param is None:
        return
    name = _bound_name(engine, node)
    why_not = None
    if _is_method(engine, node):  # `__call__` of a policy class: its uses are its instances'
        uses: list[tuple] = [(UNKNOWN, node)]
    elif isinstance(node, cst.Lambda) and name is None:
        uses = destinations(engine, node, rule)
    elif name is None:
        uses = [(UNKNOWN, node)]
    else:
        references = _references(engine, name)
        if references is None:
            uses = [(UNKNOWN, node)]
        elif not references and isinstance(engine.scope(name), cst.metadata.GlobalScope):
            uses, why_not = [(UNKNOWN, node)], _imported_elsewhere(name.value, rule)
        else:
            uses = [d for use in references for d in destinations(engine, use, rule)]
    # Certain: every use reaches torch or is a call here (its keyword renamed with it),
    # and nothing else in the file passes the old keyword to a policy it was given
    # (a wrapper of its own, as FairScale's auto_wrap is, calls policies that way).
    renamed_here = {id(arg) for kind, arg in uses if kind == KEYWORD_CALL}
    others = [a for a in _keyword_calls(engine, rule) if id(a) not in renamed_here]
    certain = not others and all(kind in (TORCH, KEYWORD_CALL, "call") for kind, _ in uses)
    if others:
        why_not = _passes_it(engine.position(others[0]).start.line, rule)
    if not engine.report(param, rule, fixable_here=certain, why_not=why_not) or not certain:
        return
    new = rule.new_argument
    engine.rename_name(param.name, new)
    body_scope = engine.scope(node.body)
    if body_scope is not None:
        for assignment in body_scope.assignments[rule.argument]:
            for access in assignment.references:
                if isinstance(access.node, cst.Name):
                    engine.rename_name(access.node, new)
    for kind, arg in uses:
        if kind == KEYWORD_CALL:
            engine.rename_name(arg.keyword, new)
