"""FSDP198: ``limit_all_gathers=True`` passed to FSDP, where it is the default, goes."""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import keep_ending, keyword
from codemods.syntax.lazy_libcst import cst


class Fsdp198(Behaviour):
    """A keyword argument that only repeats its default is dropped from the call."""

    def calls(self) -> tuple[str, ...]:
        # The engine calls `call` (and lint `ast_call`) for every call of these names.
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        # Ask the engine about `original` nodes; build the output from `updated` ones.
        kept = []
        for before, after in zip(original.args, updated.args):
            repeats_default = keyword(before) == self.rule.argument and _is_true(before.value)
            # report() records the finding and says whether this run applies the fix.
            if not (repeats_default and engine.report(before, self.rule)):
                kept.append(after)
        return updated.with_changes(args=keep_ending(kept, list(updated.args)))

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        # The ast half: lint reports exactly what `call` reports in a run that fixes
        # nothing, without libcst's parse.
        for arg in call.keywords:
            if arg.arg == self.rule.argument and type(arg.value) is ast.Constant:
                if arg.value.value is True:
                    detector.report(arg, self.rule)


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


BEHAVIOUR = Fsdp198
