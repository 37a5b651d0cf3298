"""FSDP215: ``Trainer(strategy="ddp_sharded")`` and its variants, removed in Lightning 2.0.

A literal among :data:`SHARDED_STRINGS` passed as ``strategy=`` is reported, and a
name whose one binding holds one (``strategy = "ddp_sharded"``, a test parameter a
``pytest.mark.parametrize`` list fills), as FSDP204's strategy names are followed
(:func:`codemods.rules.kinds.string_value.bound_values`); no string of Lightning 2.x
means the same, so nothing is fixed.
"""

from __future__ import annotations

import ast

from codemods.registry.lightning_removed_rules import SHARDED_STRINGS
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.kinds.string_value import ast_bound_values, bound_values
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst


class Fsdp215(Behaviour):
    """Report the removed strategy strings.

    Attributes:
        strings: The strategy names reported.
    """

    strings: tuple[str, ...] = SHARDED_STRINGS

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        for arg in original.args:
            if keyword(arg) != self.rule.argument:
                continue
            values = [arg.value]
            if isinstance(arg.value, cst.Name):
                values = bound_values(engine, arg.value, self.rule)[0]
            if any(self._named(literal(value)) for value in values):
                engine.report(arg, self.rule, fixable_here=False)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        for arg in call.keywords:
            if arg.arg != self.rule.argument:
                continue
            values = [arg.value]
            if type(arg.value) is ast.Name:
                values = ast_bound_values(detector, arg.value, self.rule)[0]
            if any(self._named(on_ast.literal(detector, value)) for value in values):
                detector.report(arg, self.rule, fixable_here=False)

    def _named(self, value: object) -> bool:
        return type(value) is str and value in self.strings


BEHAVIOUR = Fsdp215
