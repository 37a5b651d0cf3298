"""FSDP133: ``checkpoint_wrapper(module, offload_to_cpu=...)``, a keyword torch 2.0 removed.

``offload_to_cpu=True`` becomes ``offload_wrapper(module)`` (a ``partial`` of the
wrapper becomes ``offload_wrapper`` itself), a form that needs torch 2.0. A literal
``offload_to_cpu=False`` is FSDP139's (:mod:`codemods.rules.fsdp139`, this behaviour
with the other form): it is dropped, which runs on every torch. The fix is certain only
about the flag itself: the module passed by position, the flag as a literal, and at
most ``checkpoint_impl`` beside it (which torch 1.13 ignored while offloading). Anything
else is reported for a human, and so is a file that binds ``offload_wrapper`` to
something other than torch's.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from codemods.registry.names import CHECKPOINT_WRAPPER
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.alias_positions import parse
from codemods.syntax.cst_nodes import keep_ending, keyword, literal
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import ClassVar

NEW_NAME = "offload_wrapper"
#: Keywords torch 1.13 ignored beside ``offload_to_cpu=True``; dropped with it.
_IGNORED_WHEN_OFFLOADING = ("checkpoint_impl",)

#: One argument as the decision sees it: (keyword or None, is ``*``/``**``, literal value).
Shape = tuple[object, bool, object]


def decide(shapes: Sequence[Shape], partial: bool) -> str | None:
    """What the fix writes for one call: ``"offload"``, ``"drop"``, or None (reported only).

    Args:
        shapes: The call's own arguments (after the callee, for a ``partial``).
        partial: Whether the call is ``functools.partial(checkpoint_wrapper, ...)``.

    Example:
        >>> decide([(None, False, None), ("offload_to_cpu", False, True)], partial=False)
        'offload'
        >>> decide([("offload_to_cpu", False, False), ("checkpoint_fn", False, None)], True)
        'drop'
        >>> decide([(None, False, None), ("offload_to_cpu", False, None)], partial=False) is None
        True
    """
    flags = [value for name, _, value in shapes if name == "offload_to_cpu"]
    if len(flags) != 1 or not isinstance(flags[0], bool) or any(star for _, star, _ in shapes):
        return None
    if flags[0] is False:
        return "drop"
    module = [] if partial else [None]
    rest = [name for name, _, _ in shapes if name != "offload_to_cpu"]
    head, tail = rest[: len(module)], rest[len(module) :]
    if head != module or any(name not in _IGNORED_WHEN_OFFLOADING for name in tail):
        return None
    return "offload"


def name_taken(tree: ast.Module) -> bool:
    """Whether the module binds ``offload_wrapper`` to anything but torch's."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == NEW_NAME:
                return True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if node.id == NEW_NAME:
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                torch_s = isinstance(node, ast.ImportFrom) and node.module == CHECKPOINT_WRAPPER
                if bound == NEW_NAME and not (torch_s and alias.name == NEW_NAME):
                    return True
    return False


class Fsdp133(Behaviour):
    """Report ``offload_to_cpu=`` on torch's wrapper; write ``offload_wrapper`` where certain.

    A literal ``False`` is left to FSDP139, whose behaviour is this one with
    :attr:`FALSE_FLAG` set.
    """

    #: Whether this behaviour takes the calls whose flag is a literal ``False``, or the rest.
    FALSE_FLAG: ClassVar[bool] = False

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def partials(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return self._fix(engine, original, updated, start=0)

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return self._fix(engine, original, updated, start=1)

    def _fix(
        self, engine: Engine, original: cst.Call, updated: cst.Call, start: int
    ) -> cst.BaseExpression:
        own = list(original.args[start:])
        flag = next((a for a in own if keyword(a) == self.rule.argument), None)
        if flag is None or (literal(flag.value) is False) is not self.FALSE_FLAG:
            return updated
        shapes = [(keyword(a), bool(a.star), literal(a.value)) for a in own]
        action = decide(shapes, partial=bool(start))
        if action == "offload" and _taken(engine):
            action = None
        if not engine.report(flag, self.rule, fixable_here=action is not None) or action is None:
            return updated
        if action == "drop":
            kept = [u for o, u in zip(original.args, updated.args) if o is not flag]
            return updated.with_changes(args=keep_ending(kept, list(updated.args)))
        callee = original.args[0].value if start else original.func
        new_callee = _offload_callee(engine, callee)
        engine.forget(callee)
        for dropped in original.args[1:]:
            engine.forget(dropped.value)  # the flag and what it made torch ignore
        if start:
            engine.forget(original.func)
            return new_callee
        module = updated.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(func=new_callee, args=[module])

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        self._ast_report(detector, on_ast.arguments(call), partial=False)

    def ast_partial(self, detector: Detector, call: ast.Call) -> None:
        self._ast_report(detector, on_ast.arguments(call)[1:], partial=True)

    def _ast_report(self, detector: Detector, own: list, partial: bool) -> None:
        flag = next((a for a in own if on_ast.keyword(a) == self.rule.argument), None)
        if flag is None:
            return
        flag_value = on_ast.literal(detector, on_ast.value(flag))
        if (flag_value is False) is not self.FALSE_FLAG:
            return
        shapes = [
            (on_ast.keyword(a), on_ast.star(a), on_ast.literal(detector, on_ast.value(a)))
            for a in own
        ]
        action = decide(shapes, partial)
        if action == "offload" and _taken(detector):
            action = None
        detector.report(flag, self.rule, fixable_here=action is not None)


def _taken(engine: Engine | Detector) -> bool:
    """:func:`name_taken` of the module, asked once a file (it walks the whole tree).

    An ASCII module that does not spell the name does not bind it (elsewhere NFKC may
    fold other letters into it): most files, which are not walked.
    """
    key = f"{NEW_NAME}:taken"
    if key not in engine.scratch:
        tree = getattr(engine, "tree", None)  # the detector's; the engine's is libcst's
        text = engine.source if tree is not None else engine.text  # type: ignore[union-attr]
        spelled = NEW_NAME.encode() if isinstance(text, bytes) else NEW_NAME
        if text.isascii() and spelled not in text:
            engine.scratch[key] = False
        else:
            engine.scratch[key] = name_taken(tree or parse(engine.text))  # type: ignore[union-attr]
    return engine.scratch[key]


def _offload_callee(engine: Engine, callee: cst.BaseExpression) -> cst.BaseExpression:
    """``offload_wrapper``, spelled through the module alias where the wrapper was."""
    if isinstance(callee, cst.Attribute):
        return callee.with_changes(attr=cst.Name(NEW_NAME))
    engine.need_import(CHECKPOINT_WRAPPER, NEW_NAME)
    return cst.Name(NEW_NAME)


BEHAVIOUR = Fsdp133
