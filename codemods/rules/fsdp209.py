"""FSDP209: ``FSDPStrategy(auto_wrap_policy=partial(transformer_auto_wrap_policy, ...))``.

Since Lightning 2.1 the strategy takes the layer classes as a set and builds the
``ModuleWrapPolicy`` itself. A comment inside the partial is kept (moved after the set).
"""

from __future__ import annotations

import libcst as cst

from codemods.kinds.base import PARTIAL, Behaviour, Engine
from codemods.registry.names import TORCH_WRAP
from codemods.syntax import keyword

_TRANSFORMER_POLICY = {f"{TORCH_WRAP}.transformer_auto_wrap_policy"}


class Fsdp209(Behaviour):
    """The partial becomes the set of its layer classes."""

    rewrites = True

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        rule = self.rule
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            inner = arg.value
            if keyword(arg) != rule.argument or not isinstance(inner, cst.Call):
                continue
            if PARTIAL not in engine.qualified(inner.func) or not inner.args:
                continue
            if not engine.qualified(inner.args[0].value) & _TRANSFORMER_POLICY:
                continue
            rest = inner.args[1:]
            if len(rest) != 1 or keyword(rest[0]) != "transformer_layer_cls":
                engine.report(arg, rule, fixable_here=False)
                continue
            value = engine.class_set(rest[0].value)
            if engine.report(arg, rule, fixable_here=value is not None) and value is not None:
                engine.forget(inner.func)
                engine.forget(inner.args[0].value)
                args[index] = args[index].with_changes(value=value)
        return updated.with_changes(args=args)


BEHAVIOUR = Fsdp209
