"""FSDP118: ``ShardingStrategy.NO_SHARD``, also as Lightning's string.

Reported only (switching to ``DistributedDataParallel`` changes the module tree and the
state-dict keys). Lightning's ``FSDPStrategy`` also takes the strategy by name, matched
case-insensitively as Lightning does (``ShardingStrategy[name.upper()]``):
``FSDPStrategy(sharding_strategy="NO_SHARD")`` is the same deprecated choice, also in
``StrategyRegistry.register(name, FSDPStrategy, ...)`` (:mod:`codemods.rules.strategy_registry`). A
comparison with the member (``if strategy != ShardingStrategy.NO_SHARD:``) chooses
nothing: its finding says so (:mod:`codemods.rules.tested_uses`).
"""

from __future__ import annotations

import ast

from codemods.registry.lightning_strategy_rules import FSDP_STRATEGY
from codemods.rules.api import Detector, Engine
from codemods.rules.kinds.reference import Reported
from codemods.rules.strategy_registry import (
    REGISTERS,
    registers_another_ast,
    registers_another_cst,
)
from codemods.rules.tested_uses import COMPARISON
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst


class Fsdp118(Reported):
    """Every use of the enum member, and ``sharding_strategy="NO_SHARD"`` in Lightning."""

    tested = {
        COMPARISON: (
            "a comparison: it tests whether something else chose `NO_SHARD`, and can go "
            "once nothing does"
        )
    }

    def calls(self) -> tuple[str, ...]:
        return (*FSDP_STRATEGY, *REGISTERS)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if registers_another_cst(engine, original, FSDP_STRATEGY):
            return updated
        for arg in original.args:
            value = literal(arg.value) if keyword(arg) == "sharding_strategy" else None
            if isinstance(value, str) and value.upper() == "NO_SHARD":
                engine.report(arg, self.rule)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import literal as literal_of

        if registers_another_ast(detector, call, FSDP_STRATEGY):
            return
        for arg in call.keywords:
            value = literal_of(detector, arg.value) if arg.arg == "sharding_strategy" else None
            if isinstance(value, str) and value.upper() == "NO_SHARD":
                detector.report(arg, self.rule)


BEHAVIOUR = Fsdp118
