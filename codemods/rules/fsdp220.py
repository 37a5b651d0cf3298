"""FSDP220: the AMP precision plugin given Lightning 1.x's ``16`` / ``"bf16"``.

The value is the plugin's first parameter, passed by keyword or position, in a call of
the plugin or in a subclass's ``super().__init__(...)`` (where the file's class names
the plugin as a base). Only literals are rewritten; a value that comes from elsewhere
may already be the new one and is left alone.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import find_all, is_plain_positional, keyword, literal, string_like
from codemods.syntax.gates import ast_fallback_regions, fallback_regions, inside_fallback
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


def new_value(rule_values: tuple, value: Any) -> str | None:
    """The new spelling of an old literal (``16`` and ``"16"`` differ; ``True`` is no ``1``)."""
    for old, new in rule_values:
        if value == old and type(value) is type(old):
            return new
    return None


def cst_precision(args: list[cst.Arg]) -> int | None:
    """The index of the argument that passes ``precision``, if one certainly does."""
    for index, arg in enumerate(args):
        if keyword(arg) == "precision":
            return index
    if args and is_plain_positional(args[0]):
        return 0
    return None


def ast_precision(args: list) -> Any:
    """:func:`cst_precision` on ``ast``: the argument itself, or None."""
    for arg in args:
        if on_ast.keyword(arg) == "precision":
            return arg
    if args and on_ast.plain_positional(args[0]):
        return args[0]
    return None


def _is_super_init(func: cst.BaseExpression) -> bool:
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def _ast_is_super_init(func: ast.AST) -> bool:
    return (
        type(func) is ast.Attribute
        and func.attr == "__init__"  # type: ignore[attr-defined]
        and type(func.value) is ast.Call  # type: ignore[attr-defined]
        and type(func.value.func) is ast.Name  # type: ignore[attr-defined]
        and func.value.func.id == "super"  # type: ignore[attr-defined]
    )


class Fsdp220(Behaviour):
    """Write ``"16-mixed"`` / ``"bf16-mixed"`` for the old literal."""

    modules = True  # a subclass's super().__init__ literals, rewritten as the visit leaves
    classes = True  # the ast half finds those in ast_class_def

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        index = cst_precision(list(original.args))
        if index is None:
            return updated
        arg = original.args[index]
        new = new_value(self.rule.values, literal(arg.value))
        if new is None or not engine.report(arg, self.rule):
            return updated
        args = list(updated.args)
        args[index] = args[index].with_changes(value=string_like(arg.value, new))
        return updated.with_changes(args=args)

    def module(self, engine: Engine, node: cst.Module) -> None:
        old = set(self.rule.old)
        for class_def in engine.nodes(cst.ClassDef):
            if not any(engine.qualified(base.value) & old for base in class_def.bases):
                continue
            for call in find_all(class_def.body, lambda n: isinstance(n, cst.Call)):
                if not _is_super_init(call.func):
                    continue
                if inside_fallback(call, engine.parent, fallback_regions):
                    continue
                index = cst_precision(list(call.args))
                arg = None if index is None else call.args[index]
                new = None if arg is None else new_value(self.rule.values, literal(arg.value))
                if new is not None and engine.report(arg, self.rule):
                    engine.replace(arg.value, string_like(arg.value, new))

    def class_def(
        self, engine: Engine, original: cst.ClassDef, updated: cst.ClassDef
    ) -> cst.ClassDef:
        return updated  # module() did the work before the class was visited

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        self._ast_report(detector, ast_precision(on_ast.arguments(call)))

    def ast_class_def(self, detector: Detector, node: ast.ClassDef) -> None:
        old = set(self.rule.old)
        if not any(detector.qualified(on_ast.value(base)) & old for base in node.bases):
            return
        regions = lambda n: ast_fallback_regions(n, detector.segment)  # noqa: E731
        for found in ast.walk(node):
            if type(found) is ast.Call and _ast_is_super_init(found.func):
                if not inside_fallback(found, detector.parent, regions):
                    self._ast_report(detector, ast_precision(on_ast.arguments(found)))

    def _ast_report(self, detector: Detector, arg: Any) -> None:
        if arg is None:
            return
        value = on_ast.literal(detector, on_ast.value(arg))
        if new_value(self.rule.values, value) is not None:
            detector.report(arg, self.rule)


BEHAVIOUR = Fsdp220
