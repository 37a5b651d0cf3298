"""FSDP109: ``cpu_offload=True`` (Lightning's and FairScale's spelling) as a ``CPUOffload``."""

from __future__ import annotations

import ast

from codemods.registry.names import TORCH_FSDP
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import is_bool, keyword
from codemods.syntax.lazy_libcst import cst


class Fsdp109(Behaviour):
    """``cpu_offload=<bool>`` becomes ``cpu_offload=CPUOffload(offload_params=<bool>)``."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if keyword(arg) != self.rule.argument or not is_bool(arg.value):
                continue
            if engine.report(arg, self.rule):
                value = cst.parse_expression(f"CPUOffload(offload_params={arg.value.value})")
                args[index] = args[index].with_changes(value=value)
                engine.need_import(TORCH_FSDP, "CPUOffload")
        return updated.with_changes(args=args)

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        for arg in call.keywords:
            if arg.arg == self.rule.argument and on_ast.is_bool(arg.value):
                detector.report(arg, self.rule)


BEHAVIOUR = Fsdp109
