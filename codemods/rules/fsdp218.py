"""FSDP218: ``Trainer`` arguments Lightning 2.0 removed (Apex's, and ``track_grad_norm``).

``amp_backend``, ``amp_level`` and ``track_grad_norm`` are each reported;
``amp_backend="native"`` (the default it restates) is dropped.
"""

from __future__ import annotations

import ast

from codemods.registry.lightning_removed_rules import REMOVED_TRAINER_ARGUMENTS
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keep_ending, keyword, literal
from codemods.syntax.lazy_libcst import cst


def _droppable(name: str | None, value: object) -> bool:
    return name == "amp_backend" and value == "native"


class Fsdp218(Behaviour):
    """Report the removed keywords; drop ``amp_backend="native"``."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        kept = []
        for before, after in zip(original.args, updated.args):
            name = keyword(before)
            if name in REMOVED_TRAINER_ARGUMENTS:
                drop = _droppable(name, literal(before.value))
                if engine.report(before, self.rule, fixable_here=drop) and drop:
                    continue
            kept.append(after)
        return updated.with_changes(args=keep_ending(kept, list(updated.args)))

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        for arg in call.keywords:
            if arg.arg in REMOVED_TRAINER_ARGUMENTS:
                value = on_ast.literal(detector, arg.value)
                detector.report(arg, self.rule, fixable_here=_droppable(arg.arg, value))


BEHAVIOUR = Fsdp218
