"""FSDP135: ``functools.partial(FullyShardedDataParallel, ...)``, FSDP1's wrapper handed on.

Only the ``partial`` is reported: a plain ``FullyShardedDataParallel(...)`` call is
FSDP401's concern, and the class itself is used in many harmless ways.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.lazy_libcst import cst


class Fsdp135(Behaviour):
    """Report each ``partial`` of FSDP1's class; nothing is fixed."""

    def partials(self) -> tuple[str, ...]:
        return self.rule.old

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        engine.report(original, self.rule, fixable_here=False)
        return updated

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        detector.report(call, self.rule, fixable_here=False)


BEHAVIOUR = Fsdp135
