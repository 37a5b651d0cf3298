"""FSDP311: FairScale FSDP's own state-dict methods, called on a model.

``model.local_state_dict()`` names no class, so the rule asks the file instead: where
it builds a model with FairScale's ``FullyShardedDataParallel`` (a call of one of the
rule's ``found_in`` names), every call of one of the methods by attribute, anywhere in
the file, is reported once. Nothing is fixed.
"""

from __future__ import annotations

import ast

from codemods.registry.fairscale_optim_rules import FAIRSCALE_FSDP_METHODS
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.gates import ast_fallback_regions, fallback_regions, inside_fallback
from codemods.syntax.lazy_libcst import cst


class Fsdp311(Behaviour):
    """At the file's first FairScale FSDP call, report every FairScale-only method call."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.found_in

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if engine.scratch.setdefault(self.rule.code, False):
            return updated
        engine.scratch[self.rule.code] = True
        for call in engine.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in FAIRSCALE_FSDP_METHODS:
                if not inside_fallback(call, engine.parent, fallback_regions):
                    engine.report(func, self.rule, fixable_here=False)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        if detector.scratch.setdefault(self.rule.code, False):
            return
        detector.scratch[self.rule.code] = True
        for found in detector.nodes(ast.Call):
            func = found.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr in FAIRSCALE_FSDP_METHODS:
                regions = lambda n: ast_fallback_regions(n, detector.segment)  # noqa: E731
                if not inside_fallback(found, detector.parent, regions):
                    detector.report(func, self.rule, fixable_here=False)


BEHAVIOUR = Fsdp311
