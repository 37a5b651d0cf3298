"""FSDP108: ``checkpoint_wrapper`` without ``checkpoint_impl`` relies on a changed default.

The unsafe fix states the implementation torch 2.2 and later use by default,
``CheckpointImpl.NO_REENTRANT`` (before 2.2 the default was reentrant, so the fix
changes behaviour there). ``checkpoint_impl`` is the second parameter.
"""

from __future__ import annotations

import ast

from codemods.registry.names import CHECKPOINT_WRAPPER
from codemods.rules.api import Detector, Engine
from codemods.rules.kinds.default_change import DefaultChange
from codemods.syntax.cst_nodes import append_arg, dotted, keyword, new_keyword
from codemods.syntax.lazy_libcst import cst

_OFFLOAD = "offload_to_cpu"


class Fsdp108(DefaultChange):
    """Add ``checkpoint_impl=CheckpointImpl.NO_REENTRANT`` to calls and partials."""

    position = 1

    def passes(self, args: list[cst.Arg]) -> bool:
        # `offload_to_cpu=` is FSDP133's: torch 1.13 ignored the implementation with it.
        return any(keyword(a) == _OFFLOAD for a in args) or DefaultChange.passes(self, args)

    def ast_passes(self, arguments: list) -> bool:
        found = any(type(a) is ast.keyword and a.arg == _OFFLOAD for a in arguments)
        return found or DefaultChange.ast_passes(self, arguments)

    def fix(self, engine: Engine, original: cst.Call, updated: cst.Call, start: int) -> cst.Call:
        if not engine.report(original, self.rule):
            return updated
        impl = new_keyword("checkpoint_impl", "CheckpointImpl.NO_REENTRANT")
        if not _in_scope(engine, original):  # a function-local import may have it already
            engine.need_import(CHECKPOINT_WRAPPER, "CheckpointImpl")
        return updated.with_changes(args=append_arg(updated, list(updated.args), impl))

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        # The fix above reports the call as DefaultChange.fix does: the same ast half.
        DefaultChange.ast_call(self, detector, call)

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        DefaultChange.ast_partial(self, detector, call)


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
