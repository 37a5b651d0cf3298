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
from codemods.registry.names import COMPAT_FAIRSCALE
from codemods.rules.api import PARTIAL, Behaviour, Detector, Engine
from codemods.rules.kinds.parameter_rename import TORCH_POLICY_CONSUMERS
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import dotted, keyword
from codemods.syntax.lazy_libcst import cst

#: The torch release whose ``ModuleWrapPolicy`` is callable like the policy function it
#: replaces (the ``module_wrap_policy`` capability's note).
CALLABLE_SINCE = "2.2"
#: Callables whose ``auto_wrap_policy=`` takes policy objects.
POLICY_CONSUMERS = TORCH_POLICY_CONSUMERS | {f"{COMPAT_FAIRSCALE}.enable_wrap"}


def _is_policy_argument(engine: Engine, arg: cst.Arg) -> bool:
    call = engine.parent(arg)
    return (
        keyword(arg) == "auto_wrap_policy"
        and isinstance(call, cst.Call)
        and bool(engine.qualified(call.func) & POLICY_CONSUMERS)
    )


def reaches_policy_consumers(engine: Engine, value: cst.CSTNode, depth: int = 0) -> bool:
    """Whether ``value`` certainly ends up as a policy-object consumer's policy."""
    parent = engine.parent(value)
    if isinstance(parent, cst.IfExp) and value is not parent.test and depth < 8:
        return reaches_policy_consumers(engine, parent, depth + 1)
    if isinstance(parent, cst.Arg):
        return _is_policy_argument(engine, parent)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
        return False
    target = parent.targets[0].target
    scope = engine.scope(target)
    if not isinstance(target, cst.Name) or scope is None:
        return False
    accesses = [a for assignment in scope.assignments[target.value] for a in assignment.references]
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


class PolicyPartial(Behaviour):
    """``partial(old, argument=X)`` as ``New(X)``."""

    def partials(self) -> tuple[str, ...]:
        return self.rule.old

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        rule = self.rule
        if _lightning_takes_classes(engine, original):
            return updated  # FSDP209 turns it into the set of classes itself
        rest = original.args[1:]
        exact = len(rest) == 1 and keyword(rest[0]) == rule.argument
        exact = exact and imported_at_module_level(engine, original.args[0].value)
        certain = exact and reaches_policy_consumers(engine, original)
        # A module-level policy whose uses the file does not all show (it is imported
        # elsewhere) works as a callable too where ModuleWrapPolicy is one: unsafe there.
        unknown = exact and not certain and self._exported(engine, original)
        fixable = certain or unknown
        applies = engine.report(original, rule, fixable_here=fixable, unsafe_here=unknown)
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
        exact = len(rest) == 1 and on_ast.keyword(rest[0]) == self.rule.argument
        exact = exact and _ast_imported_at_module_level(detector, on_ast.value(arguments[0]))
        certain = exact and ast_reaches_policy_consumers(detector, call)
        unknown = exact and not certain and self._ast_exported(detector, call)
        detector.report(call, self.rule, fixable_here=certain or unknown, unsafe_here=unknown)

    def _ast_exported(self, detector: Detector, call: ast.Call) -> bool:
        if self.rule.code != "FSDP103" or not detector.target_at_least(CALLABLE_SINCE):
            return False
        parent = detector.parent(call)
        if not (type(parent) is ast.Assign and len(parent.targets) == 1):
            return False
        target = parent.targets[0]
        scope = detector.scope(target)
        return type(target) is ast.Name and scope is not None and scope.parent is None

    def _exported(self, engine: Engine, call: cst.Call) -> bool:
        """``NAME = partial(...)`` at module level, for a target where the object is callable."""
        if self.rule.code != "FSDP103" or not engine.target_at_least(CALLABLE_SINCE):
            return False
        parent = engine.parent(call)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return False
        target = parent.targets[0].target
        return isinstance(target, cst.Name) and isinstance(
            engine.scope(target), cst.metadata.GlobalScope
        )


BEHAVIOUR = PolicyPartial
__all__ = ["PARTIAL", "POLICY_CONSUMERS", "PolicyPartial", "reaches_policy_consumers"]
