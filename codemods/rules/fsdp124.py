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

import ast

from codemods.registry.names import CHECKPOINT_WRAPPER
from codemods.rules.api import Detector, Engine
from codemods.rules.kinds.default_change import DefaultChange
from codemods.syntax.cst_nodes import append_arg, is_plain_positional, keyword, new_keyword
from codemods.syntax.lazy_libcst import cst

WRAPPER = f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper"
#: ``checkpoint_sequential(functions, segments, input, use_reentrant)``: its position.
_SEQUENTIAL_POSITION = 3


def _ast_names(detector: Detector, node: ast.expr) -> set[str]:
    """``engine.qualified`` of a ``checkpoint_fn`` value, on ``ast``.

    libcst also names ``f(...)``, ``f[...]`` and ``f().g`` (as ``f``, ``f``, ``f.g``),
    through every binding of ``f`` in reach, which :mod:`codemods.astlint.scopes` does not:
    where an import binds one of those names, the value is Undecided; elsewhere it
    names nothing a rule looks at.
    """
    from codemods.syntax.ast_nodes import Undecided, dotted

    if dotted(node) is not None:
        return detector.qualified(node)
    parts: list[str] = []
    base = node
    while type(base) in (ast.Call, ast.Subscript, ast.Attribute):
        if type(base) is ast.Attribute:
            parts.append(base.attr)  # type: ignore[attr-defined]
        base = base.func if type(base) is ast.Call else base.value  # type: ignore[attr-defined]
    scope = detector.scope(base)
    if type(base) is not ast.Name or scope is None:
        return set()
    prefix = ".".join([base.id, *reversed(parts)])
    while prefix:
        binder = detector.names.lookup(scope, prefix)
        if binder is not None and prefix in binder.imports:
            raise Undecided("a checkpoint_fn named through a call or subscript of an import")
        prefix = prefix.rpartition(".")[0]
    return set()


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

    def _ast_passes(self, detector: Detector, func: ast.expr, args: list) -> bool:
        """:meth:`_passes` on ``ast`` arguments (in source order)."""
        from codemods.syntax.ast_nodes import keyword, plain_positional, value

        names = detector.qualified(func)
        if WRAPPER in names:
            fn = [a for a in args if keyword(a) == "checkpoint_fn"]
            positional = [a for a in args if plain_positional(a)]
            if not fn and len(positional) >= 3:
                fn = positional[2:3]
            if not fn or not set(self.rule.old) & _ast_names(detector, value(fn[0])):
                return True
        sequential = any(name.endswith("checkpoint_sequential") for name in names)
        double = [a for a in args if type(a) is ast.keyword and a.arg is None]
        if double or any(keyword(a) == self.rule.argument for a in args):
            return True
        if sequential and any(type(a) is ast.Starred for a in args):
            return True
        positional_count = sum(plain_positional(a) for a in args)
        return sequential and positional_count > _SEQUENTIAL_POSITION

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments

        if not self._ast_passes(detector, call.func, arguments(call)):
            detector.report(call, self.rule)

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments, value

        found = arguments(call)
        if not self._ast_passes(detector, value(found[0]), found[1:]):
            detector.report(call, self.rule)


BEHAVIOUR = Fsdp124
