"""FSDP103 (and FSDP104): a policy partial as the policy object that replaced it.

``partial(transformer_auto_wrap_policy, transformer_layer_cls=X)`` becomes
``ModuleWrapPolicy(X)`` and ``partial(lambda_auto_wrap_policy, lambda_fn=f)``
``CustomPolicy(f)``. A policy object is callable only since torch 2.2, so the partial
becomes one only where it certainly reaches a consumer that takes policy objects
(directly, through a conditional expression, or through a name used only that way),
and where its import is a module-level one (a function-local import may be avoiding a
cycle).
"""

from __future__ import annotations

import ast

from codemods.registry import REGISTRY
from codemods.registry.names import COMPAT_FAIRSCALE, TORCH_WRAP
from codemods.rules.api import PARTIAL, Behaviour, Detector, Engine
from codemods.rules.kinds.parameter_rename import TORCH_POLICY_CONSUMERS
from codemods.rules.policy_sites import (
    CALLABLE_SINCE,
    CALLED,
    COMBINED,
    ELSEWHERE,
    MODULE,
    PASSED,
    RETURNED,
    UNREAD,
    Site,
    lasting,
    unsafe_detail,
    verdict,
)
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import dotted, keyword
from codemods.syntax.lazy_libcst import cst

#: torch's policy combinator: it calls each of its ``policies`` like a policy function.
OR_POLICY = f"{TORCH_WRAP}._or_policy"

#: Why a partial whose policy function is imported inside a function is left.
LOCAL_IMPORT = (
    "its policy function is imported inside a function (which may be avoiding an import "
    "cycle): the fix adds module-level imports only"
)
#: Callables whose ``auto_wrap_policy=`` takes policy objects.
POLICY_CONSUMERS = TORCH_POLICY_CONSUMERS | {f"{COMPAT_FAIRSCALE}.enable_wrap"}


def _is_policy_argument(engine: Engine, arg: cst.Arg) -> bool:
    call = engine.parent(arg)
    return (
        keyword(arg) == "auto_wrap_policy"
        and isinstance(call, cst.Call)
        and bool(engine.qualified(call.func) & POLICY_CONSUMERS)
    )


def _assigned(engine: Engine, value: cst.CSTNode) -> tuple[cst.Name, cst.metadata.Scope] | None:
    """The name ``value`` is assigned to alone (``name = value``), with its scope."""
    parent = engine.parent(value)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
        return None
    target = parent.targets[0].target
    scope = engine.scope(target)
    if not isinstance(target, cst.Name) or scope is None:
        return None
    return target, scope


def _accesses(target: cst.Name, scope: cst.metadata.Scope) -> list[cst.metadata.Access]:
    """The reads of every binding of ``target``'s name in ``scope``."""
    return [a for assignment in scope.assignments[target.value] for a in assignment.references]


def reaches_policy_consumers(engine: Engine, value: cst.CSTNode, depth: int = 0) -> bool:
    """Whether ``value`` certainly ends up as a policy-object consumer's policy."""
    parent = engine.parent(value)
    if isinstance(parent, cst.IfExp) and value is not parent.test and depth < 8:
        return reaches_policy_consumers(engine, parent, depth + 1)
    if isinstance(parent, cst.Arg):
        return _is_policy_argument(engine, parent)
    assigned = _assigned(engine, value)
    if assigned is None:
        return False
    accesses = _accesses(*assigned)
    return (
        bool(accesses)
        and depth < 8
        and all(reaches_policy_consumers(engine, access.node, depth + 1) for access in accesses)
    )


def imported_at_module_level(engine: Engine, node: cst.BaseExpression) -> bool:
    """Whether the name ``node`` starts with is bound only by module-level statements."""
    scope = engine.scope(node)
    name = dotted(node)
    if scope is None or name is None:
        return False
    assignments = scope[name.split(".")[0]]
    return bool(assignments) and all(
        isinstance(a.scope, cst.metadata.GlobalScope) for a in assignments
    )


def _lightning_takes_classes(engine: Engine, call: cst.Call) -> bool:
    """Whether ``call`` is ``FSDPStrategy(auto_wrap_policy=<call>)``'s, which FSDP209 fixes."""
    arg = engine.parent(call)
    strategy = engine.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(strategy, cst.Call) or keyword(arg) != "auto_wrap_policy":
        return False
    fsdp209 = REGISTRY["FSDP209"]
    return bool(engine.qualified(strategy.func) & set(fsdp209.old)) and engine.applies("FSDP209")


def _ast_is_policy_argument(detector: Detector, arg: ast.AST) -> bool:
    call = detector.parent(arg)
    return (
        type(arg) is ast.keyword
        and arg.arg == "auto_wrap_policy"
        and type(call) is ast.Call
        and bool(detector.qualified(call.func) & POLICY_CONSUMERS)
    )


def ast_reaches_policy_consumers(detector: Detector, value: ast.AST, depth: int = 0) -> bool:
    """The ``ast`` half of :func:`reaches_policy_consumers`."""
    parent = detector.parent(value)
    if type(parent) is ast.IfExp and value is not parent.test and depth < 8:
        return ast_reaches_policy_consumers(detector, parent, depth + 1)
    if type(parent) is ast.keyword:
        return _ast_is_policy_argument(detector, parent)
    if not (type(parent) is ast.Assign and len(parent.targets) == 1):
        return False  # a positional argument too: only `auto_wrap_policy=` counts
    target = parent.targets[0]
    scope = detector.scope(target)
    if type(target) is not ast.Name or scope is None:
        return False
    accesses = detector.names.references(scope, target.id)
    return (
        bool(accesses)
        and depth < 8
        and all(ast_reaches_policy_consumers(detector, use, depth + 1) for use in accesses)
    )


def _ast_imported_at_module_level(detector: Detector, node: ast.AST) -> bool:
    name = on_ast.dotted(node)
    scope = detector.scope(node)
    if scope is None or name is None:
        return False
    binder = detector.names.lookup(scope, name.split(".")[0])
    return binder is not None and binder.parent is None


def _ast_lightning_takes_classes(detector: Detector, call: ast.Call) -> bool:
    arg = detector.parent(call)
    strategy = detector.parent(arg) if type(arg) is ast.keyword else None
    if type(strategy) is not ast.Call or arg.arg != "auto_wrap_policy":
        return False
    fsdp209 = REGISTRY["FSDP209"]
    return bool(detector.qualified(strategy.func) & set(fsdp209.old)) and detector.applies(
        "FSDP209"
    )


def _returned(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is returned, alone or as an element of a returned tuple."""
    parent = engine.parent(node)
    while isinstance(parent, (cst.Element, cst.Tuple)):
        parent = engine.parent(parent)
    return isinstance(parent, cst.Return)


def _function(engine: Engine, node: cst.CSTNode) -> str:
    while node is not None and not isinstance(node, cst.FunctionDef):
        node = engine.parent(node)
    return node.name.value if node is not None else "?"


def _or_policy_line(engine: Engine, node: cst.CSTNode) -> int:
    """The line of the ``_or_policy`` (or its ``partial``) whose ``policies=`` hold ``node``.

    0 where ``node`` is no such policy.
    """
    element = engine.parent(node)
    display = engine.parent(element) if isinstance(element, cst.Element) else None
    arg = engine.parent(display) if isinstance(display, (cst.List, cst.Tuple)) else None
    call = engine.parent(arg) if isinstance(arg, cst.Arg) and keyword(arg) == "policies" else None
    if not isinstance(call, cst.Call):
        return 0
    names = engine.qualified(call.func)
    if PARTIAL in names and call.args:
        names = engine.qualified(call.args[0].value)
    return engine.position(call).start.line if OR_POLICY in names else 0


def site_of(engine: Engine, call: cst.Call) -> Site | None:
    """Where ``call`` (a policy partial) goes, where it does not reach a consumer."""
    if _returned(engine, call):
        return Site(RETURNED, _function(engine, call))
    combined = _or_policy_line(engine, call)
    if combined:
        return Site(COMBINED, "", combined)
    arg = engine.parent(call)
    callee = engine.parent(arg) if isinstance(arg, cst.Arg) else None
    if isinstance(callee, cst.Call) and dotted(callee.func) is not None:
        return Site(PASSED, dotted(callee.func))
    assigned = _assigned(engine, call)
    if assigned is None:
        return None
    target, scope = assigned
    if isinstance(scope, cst.metadata.GlobalScope):
        return Site(MODULE, target.value)
    accesses = _accesses(target, scope)
    if not accesses:
        return Site(UNREAD, target.value)
    returned, called, combined = False, 0, 0
    for access in sorted(accesses, key=lambda a: engine.position(a.node).start.line):
        use = engine.parent(access.node)
        if _returned(engine, access.node):
            returned = True
        elif isinstance(use, cst.Call) and use.func is access.node:
            called = called or engine.position(access.node).start.line
        elif line := _or_policy_line(engine, access.node):
            combined = combined or line
        elif not reaches_policy_consumers(engine, access.node, 1):
            return Site(ELSEWHERE, target.value, engine.position(access.node).start.line)
    if returned:
        return Site(RETURNED, _function(engine, target))
    return _called_site(target.value, called, combined)


def _called_site(name: str, called: int, combined: int) -> Site | None:
    """The site of a local policy every use of which calls it (directly, or `_or_policy`)."""
    if called:
        return Site(CALLED, name, called)
    return Site(COMBINED, name, combined) if combined else None


def _ast_returned(detector: Detector, node: ast.AST) -> bool:
    parent = detector.parent(node)
    while type(parent) is ast.Tuple:
        parent = detector.parent(parent)
    return type(parent) is ast.Return


def _ast_function(detector: Detector, node: ast.AST | None) -> str:
    while node is not None and type(node) not in (ast.FunctionDef, ast.AsyncFunctionDef):
        node = detector.parent(node)
    return node.name if node is not None else "?"  # type: ignore[attr-defined]


def _ast_or_policy_line(detector: Detector, node: ast.AST) -> int:
    """:func:`_or_policy_line` on the ``ast`` tree."""
    display = detector.parent(node)
    arg = detector.parent(display) if type(display) in (ast.List, ast.Tuple) else None
    call = detector.parent(arg) if type(arg) is ast.keyword and arg.arg == "policies" else None
    if type(call) is not ast.Call:
        return 0
    names = detector.qualified(call.func)  # type: ignore[attr-defined]
    if PARTIAL in names and call.args:  # type: ignore[attr-defined]
        names = detector.qualified(call.args[0])  # type: ignore[attr-defined]
    return call.lineno if OR_POLICY in names else 0  # type: ignore[attr-defined]


def ast_site_of(detector: Detector, call: ast.Call) -> Site | None:
    """The ``ast`` half of :func:`site_of`."""
    if _ast_returned(detector, call):
        return Site(RETURNED, _ast_function(detector, call))
    combined = _ast_or_policy_line(detector, call)
    if combined:
        return Site(COMBINED, "", combined)
    parent = detector.parent(call)
    callee = detector.parent(parent) if type(parent) is ast.keyword else parent
    if type(callee) is ast.Call and call is not callee.func:  # type: ignore[attr-defined]
        name = on_ast.dotted(callee.func)  # type: ignore[attr-defined]
        if name is not None:
            return Site(PASSED, name)
    if not (type(parent) is ast.Assign and len(parent.targets) == 1):
        return None
    target = parent.targets[0]
    scope = detector.scope(target)
    if type(target) is not ast.Name or scope is None:
        return None
    if scope.parent is None:
        return Site(MODULE, target.id)
    accesses = detector.names.references(scope, target.id)
    if not accesses:
        return Site(UNREAD, target.id)
    returned, called, combined = False, 0, 0
    for use in sorted(accesses, key=lambda use: use.lineno):
        outer = detector.parent(use)
        if _ast_returned(detector, use):
            returned = True
        elif type(outer) is ast.Call and outer.func is use:  # type: ignore[attr-defined]
            called = called or use.lineno
        elif line := _ast_or_policy_line(detector, use):
            combined = combined or line
        elif not ast_reaches_policy_consumers(detector, use, 1):
            return Site(ELSEWHERE, target.id, use.lineno)
    if returned:
        return Site(RETURNED, _ast_function(detector, parent))
    return _called_site(target.id, called, combined)


class PolicyPartial(Behaviour):
    """``partial(old, argument=X)`` as ``New(X)``."""

    def partials(self) -> tuple[str, ...]:
        return self.rule.old

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        rule = self.rule
        if _lightning_takes_classes(engine, original):
            return updated  # FSDP209 turns it into the set of classes itself
        rest = original.args[1:]
        form = len(rest) == 1 and keyword(rest[0]) == rule.argument
        exact = form and imported_at_module_level(engine, original.args[0].value)
        certain = exact and reaches_policy_consumers(engine, original)
        # A policy whose uses the file does not all show (imported or returned elsewhere)
        # works as a callable too where ModuleWrapPolicy is one: unsafe there.
        site = site_of(engine, original) if exact and not certain else None
        fixed, unknown, why = verdict(rule, site, engine.target_at_least(CALLABLE_SINCE))
        why = LOCAL_IMPORT if form and not exact else why
        fixable = certain or fixed
        detail = unsafe_detail(rule, site) if unknown and site is not None else None
        if why is not None and lasting(rule, site):
            detail, why = why, None
        applies = engine.report(
            original, rule, fixable_here=fixable, unsafe_here=unknown, why_not=why, detail=detail
        )
        if not applies or not fixable:
            return updated
        module, _, new_name = rule.new.rpartition(".")
        engine.need_import(module, new_name)
        engine.forget(original.func)
        engine.forget(original.args[0].value)
        dropped, kept = updated.args[0], updated.args[1]
        # Keep the surviving argument's layout, and a comment that followed the dropped
        # first argument: it moves up to the opening parenthesis.
        before_args = updated.whitespace_before_args
        comma = dropped.comma
        if isinstance(comma, cst.Comma) and isinstance(
            comma.whitespace_after, cst.ParenthesizedWhitespace
        ):
            before_args = comma.whitespace_after
            if not isinstance(updated.whitespace_before_args, cst.ParenthesizedWhitespace):
                before_args = _aligned(engine, original, new_name, before_args)
        return updated.with_changes(
            func=cst.Name(new_name),
            whitespace_before_args=before_args,
            args=[kept.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)],
        )

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        if _ast_lightning_takes_classes(detector, call):
            return
        arguments = on_ast.arguments(call)
        rest = arguments[1:]
        form = len(rest) == 1 and on_ast.keyword(rest[0]) == self.rule.argument
        exact = form and _ast_imported_at_module_level(detector, on_ast.value(arguments[0]))
        certain = exact and ast_reaches_policy_consumers(detector, call)
        site = ast_site_of(detector, call) if exact and not certain else None
        fixed, unknown, why = verdict(self.rule, site, detector.target_at_least(CALLABLE_SINCE))
        why = LOCAL_IMPORT if form and not exact else why
        detail = unsafe_detail(self.rule, site) if unknown and site is not None else None
        if why is not None and lasting(self.rule, site):
            detail, why = why, None
        fixable = certain or fixed
        detector.report(
            call, self.rule, fixable_here=fixable, unsafe_here=unknown, why_not=why, detail=detail
        )


def _aligned(
    engine: Engine, call: cst.Call, new_name: str, moved: cst.ParenthesizedWhitespace
) -> cst.BaseParenthesizableWhitespace:
    """The break before the kept argument of a call whose arguments align with its ``(``.

    ``partial(policy,`` then ``transformer_layer_cls=S)`` on the next line aligned ``S``
    under the old call's first argument; under ``ModuleWrapPolicy(`` that column means
    nothing. The argument joins the opening line, unless a comment ends the line before
    it: then it stays on its own line, aligned under the new call's parenthesis.
    """
    if moved.first_line.comment is None and not moved.empty_lines:
        return cst.SimpleWhitespace("")
    column = engine.position(call).start.column + len(new_name) + 1
    # An indented break counts the enclosing block's indentation before its own spaces.
    block = engine.position(call.args[1]).start.column - len(moved.last_line.value)
    return moved.with_changes(last_line=cst.SimpleWhitespace(" " * (column - block)))


BEHAVIOUR = PolicyPartial
__all__ = ["PARTIAL", "POLICY_CONSUMERS", "PolicyPartial", "reaches_policy_consumers"]
