"""FSDP221: ``fabric.save(state, path)``, Lightning 1.x's argument order.

``fabric`` names no class, so the file is read as a whole: the receivers are the names
(``fabric``, ``self.fabric``) it binds to a ``Fabric(...)`` call, and a ``save`` on one
of them with two positional arguments, the second a path and the first not, is the old
order. libcst swaps the two before the visit reaches them (:meth:`Fsdp221.module`); the
``ast`` half reports the same, once, at the file's first ``Fabric(...)`` call.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax import ast_nodes as on_ast
from codemods.syntax.cst_nodes import dotted, is_plain_positional
from codemods.syntax.gates import ast_fallback_regions, fallback_regions, inside_fallback
from codemods.syntax.lazy_libcst import cst

#: Calls whose result is a path (by the callee's last dotted parts).
_PATH_CALLS = ("path.join", "Path", "PurePath", "PosixPath")


def _path_call(name: str | None) -> bool:
    return name is not None and any(name == p or name.endswith(f".{p}") for p in _PATH_CALLS)


def _cst_path(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(node, cst.Call):
        return _path_call(dotted(node.func))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return _cst_path(node.left) or _cst_path(node.right)
    return False


def _ast_path(node: ast.AST) -> bool:
    if type(node) is ast.Constant:
        return type(node.value) is str  # type: ignore[attr-defined]
    if type(node) is ast.JoinedStr:
        return True
    if type(node) is ast.Call:
        return _path_call(on_ast.dotted(node.func))  # type: ignore[attr-defined]
    if type(node) is ast.BinOp and type(node.op) is ast.Div:  # type: ignore[attr-defined]
        return _ast_path(node.left) or _ast_path(node.right)  # type: ignore[attr-defined]
    return False


class Fsdp221(Behaviour):
    """Swap ``save(state, path)`` on a Fabric the file builds."""

    modules = True  # the save calls come after the Fabric(...) call that makes them Fabric's

    def calls(self) -> tuple[str, ...]:
        return self.rule.found_in

    def module(self, engine: Engine, node: cst.Module) -> None:
        fabrics = set(self.rule.found_in)
        receivers: set[str] = set()
        for assign in engine.nodes(cst.Assign):
            value = assign.value
            if isinstance(value, cst.Call) and engine.qualified(value.func) & fabrics:
                receivers |= {dotted(t.target) for t in assign.targets} - {None}
        if not receivers:
            return
        for call in engine.nodes(cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value != "save":
                continue
            if dotted(func.value) not in receivers or not self._old_order(list(call.args)):
                continue
            if inside_fallback(call, engine.parent, fallback_regions):
                continue  # a gate's older branch keeps the older order on purpose
            if engine.report(call, self.rule):
                engine.replace(call, _swapped)

    @staticmethod
    def _old_order(args: list[cst.Arg]) -> bool:
        if len(args) != 2 or not all(is_plain_positional(a) for a in args):
            return False
        return _cst_path(args[1].value) and not _cst_path(args[0].value)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        return updated  # module() found and fixed the save calls before the visit

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        if detector.scratch.setdefault(self.rule.code, False):
            return
        detector.scratch[self.rule.code] = True
        fabrics = set(self.rule.found_in)
        receivers: set[str] = set()
        for assign in detector.nodes(ast.Assign):
            value = assign.value  # type: ignore[attr-defined]
            if type(value) is ast.Call and detector.qualified(value.func) & fabrics:
                receivers |= {on_ast.dotted(t) for t in assign.targets} - {None}  # type: ignore[attr-defined]
        for found in detector.nodes(ast.Call):
            func = found.func  # type: ignore[attr-defined]
            if type(func) is not ast.Attribute or func.attr != "save":
                continue
            args = on_ast.arguments(found)  # type: ignore[arg-type]
            if on_ast.dotted(func.value) not in receivers or len(args) != 2:
                continue
            if not all(on_ast.plain_positional(a) for a in args):
                continue
            if not _ast_path(args[1]) or _ast_path(args[0]):
                continue
            regions = lambda n: ast_fallback_regions(n, detector.segment)  # noqa: E731
            if not inside_fallback(found, detector.parent, regions):
                detector.report(found, self.rule)


def _swapped(updated: cst.Call) -> cst.Call:
    first, second = updated.args
    return updated.with_changes(
        args=[first.with_changes(value=second.value), second.with_changes(value=first.value)]
    )


BEHAVIOUR = Fsdp221
