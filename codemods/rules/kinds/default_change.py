"""A default that changed: calls that leave the argument out rely on it.

A call passes the argument when it names it or reaches its position with positional
arguments; ``functools.partial(f, ...)`` counts as a call of ``f``. A rule whose fix
states the old or new value has a module of its own (see ``codemods.rules.fsdp108``).
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import is_plain_positional, keyword
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import ClassVar


class DefaultChange(Behaviour):
    """Report calls and partials of the rule's callables that leave ``rule.argument`` out.

    Attributes:
        position: The argument's 0-based position, where it may be passed positionally.
    """

    position: ClassVar[int | None] = None

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def partials(self) -> tuple[str, ...]:
        return self.rule.old

    def passes(self, args: list[cst.Arg]) -> bool:
        """Whether ``args`` (a call's, after the callee) pass the argument."""
        if any(keyword(a) == self.rule.argument or a.star for a in args):
            return True  # named, or maybe inside *args / **kwargs
        positional = sum(is_plain_positional(a) for a in args)
        return self.position is not None and positional > self.position

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not self.passes(list(original.args)):
            return self.fix(engine, original, updated, start=0)
        return updated

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not self.passes(list(original.args[1:])):
            return self.fix(engine, original, updated, start=1)
        return updated

    AST_MIRRORS = {  # noqa: RUF012 - read only
        **Behaviour.AST_MIRRORS,
        "ast_call": ("call", "passes", "fix"),
        "ast_partial": ("partial", "passes", "fix"),
    }

    def ast_passes(self, arguments: list) -> bool:
        """:meth:`passes` on ``ast`` arguments (in source order)."""
        from codemods.syntax.ast_nodes import keyword as keyword_of
        from codemods.syntax.ast_nodes import star

        if any(keyword_of(a) == self.rule.argument or star(a) for a in arguments):
            return True
        positional = sum(type(a) is not ast.keyword and not star(a) for a in arguments)
        return self.position is not None and positional > self.position

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments

        if not self.ast_passes(arguments(call)):
            detector.report(call, self.rule)

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments

        if not self.ast_passes(arguments(call)[1:]):
            detector.report(call, self.rule)

    def fix(self, engine: Engine, original: cst.Call, updated: cst.Call, start: int) -> cst.Call:
        """Report the call; a rule with a fix rewrites it here (``start``: first own arg)."""
        engine.report(original, self.rule)
        return updated
