"""FSDP108: ``checkpoint_wrapper`` without ``checkpoint_impl`` relies on a changed default.

The unsafe fix states the implementation torch 2.2 and later use by default,
``CheckpointImpl.NO_REENTRANT`` (before 2.2 the default was reentrant, so the fix
changes behaviour there). ``checkpoint_impl`` is the second parameter. Where the call
passes ``checkpoint_fn``, that function checkpoints and the implementation decides only
how keyword inputs reach it; the finding says so (:data:`CUSTOM_FN`).

``apply_activation_checkpointing`` wraps with ``checkpoint_wrapper`` and its default
where the call leaves ``checkpoint_wrapper_fn`` out (or passes torch's
``checkpoint_wrapper`` itself): such a call is reported, with what to pass
(``functools.partial(checkpoint_wrapper, checkpoint_impl=...)``), and not rewritten.
A partial of it is not reported (its call may pass the wrapper).

Where ``checkpoint_wrapper`` is imported inside a function (code that keeps
``torch.distributed`` out of its module's import time), ``CheckpointImpl`` joins that
import (the engine's ``need_import_beside``); where that import is not a ``from``
import of torch's module, the fix is withheld, saying where the name should go.
"""

from __future__ import annotations

import ast

from codemods.registry.names import CHECKPOINT_WRAPPER
from codemods.rules.api import Detector, Engine
from codemods.rules.kinds.default_change import DefaultChange
from codemods.syntax.cst_nodes import append_arg, dotted, is_plain_positional, keyword, new_keyword
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

_OFFLOAD = "offload_to_cpu"
_APPLY = f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing"
_WRAPPER = f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper"
#: ``apply_activation_checkpointing``'s parameter for the wrapper, and its position.
_WRAPPER_FN, _WRAPPER_AT = "checkpoint_wrapper_fn", 1
#: ``checkpoint_wrapper``'s parameter for a checkpointing function of the caller's.
_FN = "checkpoint_fn"
#: What the default decides in a call that passes one (torch ignores ``checkpoint_impl``
#: for the checkpointing then, but packs keyword inputs where it is reentrant).
CUSTOM_FN = (
    "with `checkpoint_fn`, that function checkpoints, reentrant or not as it does; "
    "`checkpoint_impl` decides only how keyword inputs reach it: packed into positional "
    "ones under the reentrant default before torch 2.2, as keywords since"
)
APPLY_WHY = (
    "`apply_activation_checkpointing` wraps with `checkpoint_wrapper`'s default here: pass "
    "`checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, "
    "checkpoint_impl=CheckpointImpl.NO_REENTRANT)`"
)


class Fsdp108(DefaultChange):
    """Add ``checkpoint_impl=CheckpointImpl.NO_REENTRANT`` to calls and partials."""

    position = 1

    def passes(self, args: list[cst.Arg]) -> bool:
        # `offload_to_cpu=` is FSDP133's: torch 1.13 ignored the implementation with it.
        return any(keyword(a) == _OFFLOAD for a in args) or DefaultChange.passes(self, args)

    def ast_passes(self, arguments: list) -> bool:
        found = any(type(a) is ast.keyword and a.arg == _OFFLOAD for a in arguments)
        return found or DefaultChange.ast_passes(self, arguments)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if _APPLY not in engine.qualified(original.func):
            return DefaultChange.call(self, engine, original, updated)
        args = list(original.args)
        if not any(a.star for a in args):
            given = [a.value for a in args if keyword(a) == _WRAPPER_FN]
            given += [a.value for a in args if is_plain_positional(a)][_WRAPPER_AT:][:1]
            if not given or _WRAPPER in engine.qualified(given[0]):
                engine.report(original, self.rule, fixable_here=False, why_not=APPLY_WHY)
        return updated

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if original.args and _APPLY in engine.qualified(original.args[0].value):
            return updated  # the partial's call may pass the wrapper
        return DefaultChange.partial(self, engine, original, updated)

    def fix(self, engine: Engine, original: cst.Call, updated: cst.Call, start: int) -> cst.Call:
        callee = original.func if start == 0 else original.args[0].value
        detail = CUSTOM_FN if any(keyword(a) == _FN for a in original.args[start:]) else None
        local = None if _in_scope(engine, original) else _local_import(engine, callee)
        if local is not None and not isinstance(local[1], cst.ImportFrom):
            why = _why_local(local[0])
            engine.report(original, self.rule, fixable_here=False, why_not=why, detail=detail)
            return updated
        if not engine.report(original, self.rule, detail=detail):
            return updated
        impl = new_keyword("checkpoint_impl", "CheckpointImpl.NO_REENTRANT")
        if local is not None:  # into the function's own import, not the module's
            engine.need_import_beside(local[1], "CheckpointImpl")
        elif not _in_scope(engine, original):
            engine.need_import(CHECKPOINT_WRAPPER, "CheckpointImpl")
        return updated.with_changes(args=append_arg(updated, list(updated.args), impl))

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments

        if _APPLY in detector.qualified(call.func):
            if any(type(a) is ast.Starred for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                return
            given = [k.value for k in call.keywords if k.arg == _WRAPPER_FN]
            given += call.args[_WRAPPER_AT:][:1]
            if not given or _WRAPPER in detector.qualified(given[0]):
                detector.report(call, self.rule, fixable_here=False, why_not=APPLY_WHY)
            return
        if not self.ast_passes(arguments(call)):
            self._ast_report(detector, call, call.func, arguments(call))

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments

        found = arguments(call)
        if found and _APPLY in detector.qualified(found[0]):
            return  # the partial's call may pass the wrapper
        if found and not self.ast_passes(found[1:]):
            self._ast_report(detector, call, found[0], found[1:])

    def _ast_report(self, detector: Detector, call: ast.Call, callee: ast.AST, given: list) -> None:
        fn = any(type(a) is ast.keyword and a.arg == _FN for a in given)
        detail = CUSTOM_FN if fn else None
        local = _ast_local_import(detector, call, callee)
        if local is None:
            detector.report(call, self.rule, detail=detail)
        else:
            why = _why_local(local)
            detector.report(call, self.rule, fixable_here=False, why_not=why, detail=detail)


def _why_local(function: str) -> str:
    return (
        f"`checkpoint_wrapper` is imported inside `{function}`: add `CheckpointImpl` to that "
        "import and pass `checkpoint_impl=CheckpointImpl.NO_REENTRANT` (a fix here would "
        "import torch.distributed when the module is imported)"
    )


def _local_import(engine: Engine, callee: cst.BaseExpression) -> tuple[str, Any] | None:
    """The function whose own import binds the called name, and that import; or None.

    The import is None where it is not one ``from`` torch's module, the name added to it.
    """
    if not isinstance(callee, cst.Name):
        return None
    scope = engine.scope(callee)
    if scope is None or callee.value not in scope:
        return None
    assignments = list(scope[callee.value])
    for assignment in assignments:
        node = getattr(assignment, "node", None)
        owner = getattr(assignment.scope, "node", None)
        if isinstance(node, (cst.Import, cst.ImportFrom)) and isinstance(owner, cst.FunctionDef):
            alone = len(assignments) == 1 and _from_torch(node)
            return owner.name.value, node if alone else None
    return None


def _from_torch(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.ImportFrom)
        and not node.relative
        and node.module is not None
        and dotted(node.module) == CHECKPOINT_WRAPPER
        and not isinstance(node.names, cst.ImportStar)
    )


def _ast_local_import(detector: Detector, call: ast.Call, callee: ast.AST) -> str | None:
    """:func:`_local_import` on the ``ast`` tree (``CheckpointImpl`` in scope: None)."""
    scope = detector.scope(call.func)
    if type(callee) is not ast.Name or scope is None:
        return None
    names = detector.names
    impl = names.lookup(scope, "CheckpointImpl")
    if impl is not None and "CheckpointImpl" in impl.imports and impl.kind != "module":
        return None  # a function-local import has it already
    binder = names.lookup(scope, callee.id)
    if binder is None or binder.kind != "function" or callee.id not in binder.imports:
        return None
    statements = binder.imports[callee.id]
    if callee.id not in binder.others and len(statements) == 1:
        statement = statements[0]
        if type(statement) is ast.ImportFrom and not statement.level:
            if statement.module == CHECKPOINT_WRAPPER:
                return None  # CheckpointImpl goes into that import
    return binder.prefix.rpartition(".<locals>")[0].rpartition(".")[2]


def _in_scope(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``CheckpointImpl`` at ``node`` is torch's, imported under that name."""
    scope = engine.scope(node)
    if scope is None or "CheckpointImpl" not in scope:
        return False
    return all(
        isinstance(a.node, cst.ImportFrom) and dotted(a.node.module) == CHECKPOINT_WRAPPER
        for a in scope["CheckpointImpl"]
    )


BEHAVIOUR = Fsdp108
