"""FSDP215: ``Trainer(strategy="ddp_sharded")`` and its variants, removed in Lightning 2.0.

A literal among :data:`SHARDED_STRINGS` passed as ``strategy=`` is reported; no string
of Lightning 2.x means the same, so nothing is fixed.
"""

from __future__ import annotations

import ast

from codemods.registry.lightning_removed_rules import SHARDED_STRINGS
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst


class Fsdp215(Behaviour):
    """Report the removed strategy strings."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        for arg in original.args:
            if keyword(arg) == self.rule.argument and literal(arg.value) in SHARDED_STRINGS:
                engine.report(arg, self.rule, fixable_here=False)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        for arg in call.keywords:
            if arg.arg == self.rule.argument:
                if on_ast.literal(detector, arg.value) in SHARDED_STRINGS:
                    detector.report(arg, self.rule, fixable_here=False)


BEHAVIOUR = Fsdp215
