"""FSDP124: activation checkpointing without ``use_reentrant`` relies on a warned-about default.

``torch.utils.checkpoint.checkpoint`` and ``checkpoint_sequential`` called (or
``functools.partial``-ed) without ``use_reentrant`` warn on every call and fall back to
the reentrant implementation. One rule, two fixes, chosen per run: the safe fix states
the value used today, ``use_reentrant=True``; with ``--unsafe-fixes`` the fix writes the
recommended ``use_reentrant=False`` instead, which changes what the checkpointed code
supports (see the rule's ``why``). torch's ``checkpoint_wrapper`` passes extra keywords
on to its ``checkpoint_fn``, so ``checkpoint_wrapper(m, checkpoint_fn=checkpoint)``
(or its ``partial``) is the same case; without ``checkpoint_fn`` the wrapper passes
``use_reentrant`` itself (its ``checkpoint_impl``, FSDP108's concern).
"""

from __future__ import annotations

import libcst as cst

from codemods.kinds.base import Engine
from codemods.kinds.default_change import DefaultChange
from codemods.registry.names import CHECKPOINT_WRAPPER
from codemods.syntax import append_arg, is_plain_positional, keyword, new_keyword

WRAPPER = f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper"
#: ``checkpoint_sequential(functions, segments, input, use_reentrant)``: its position.
_SEQUENTIAL_POSITION = 3


class Fsdp124(DefaultChange):
    """Add ``use_reentrant=True`` (``False`` with unsafe fixes) where it is missing."""

    def calls(self) -> tuple[str, ...]:
        return (*self.rule.old, WRAPPER)

    def partials(self) -> tuple[str, ...]:
        return (*self.rule.old, WRAPPER)

    def _passes(self, engine: Engine, func: cst.BaseExpression, args: list[cst.Arg]) -> bool:
        names = engine.qualified(func)
        if WRAPPER in names:  # only a torch checkpoint given as checkpoint_fn needs it
            fn = [a for a in args if keyword(a) == "checkpoint_fn"]
            positional = [a for a in args if is_plain_positional(a)]
            if not fn and len(positional) >= 3:
                fn = positional[2:3]
            if not fn or not set(self.rule.old) & engine.qualified(fn[0].value):
                return True
        sequential = any(name.endswith("checkpoint_sequential") for name in names)
        # `checkpoint`'s use_reentrant is keyword-only: `*args` cannot reach it.
        if any(keyword(a) == self.rule.argument or a.star == "**" for a in args):
            return True
        if sequential and any(a.star == "*" for a in args):
            return True
        positional = sum(is_plain_positional(a) for a in args)
        return sequential and positional > _SEQUENTIAL_POSITION

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if self._passes(engine, original.func, list(original.args)):
            return updated
        return self.fix(engine, original, updated, start=0)

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if self._passes(engine, original.args[0].value, list(original.args[1:])):
            return updated
        return self.fix(engine, original, updated, start=1)

    def fix(self, engine: Engine, original: cst.Call, updated: cst.Call, start: int) -> cst.Call:
        if not engine.report(original, self.rule):
            return updated
        # The same finding asks whether this run also takes unsafe fixes.
        recommended = engine.report(original, self.rule, quiet=True, unsafe_here=True)
        value = new_keyword(self.rule.argument, "False" if recommended else "True")
        return updated.with_changes(args=append_arg(updated, list(updated.args), value))


BEHAVIOUR = Fsdp124
