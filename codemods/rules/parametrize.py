"""The values a ``pytest.mark.parametrize`` list gives a test's parameter, in both trees.

A rule that follows a name to its value (``Trainer(strategy=strategy)``) also finds it
in a test whose ``strategy`` parameter is filled by ``@pytest.mark.parametrize``::

    @pytest.mark.parametrize("strategy", ["fsdp_native", "ddp"])
    def test_fit(strategy):
        Trainer(strategy=strategy)

Each value is read where the decorator names the parameter: ``"a, b"`` or
``["a", "b"]`` with a row per case, a row being a tuple, a list, or
``pytest.param(...)``. Anything else (a list built by a call, a row of another length)
reads as nothing.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Detector, Engine
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

PARAMETRIZE = "pytest.mark.parametrize"
PYTEST_PARAM = "pytest.param"


def _names(text: Any) -> list[str] | None:
    if isinstance(text, str):
        return [part.strip() for part in text.split(",") if part.strip()]
    if isinstance(text, (list, tuple)) and all(isinstance(t, str) for t in text):
        return list(text)
    return None


def _pick(rows: list[Any], index: int, count: int, row_items: Any) -> list[Any] | None:
    """Item ``index`` of each row (``row_items(row)`` gives a row's items, or None)."""
    picked = []
    for row in rows:
        items = [row] if count == 1 and row_items(row, single=True) is None else row_items(row)
        if items is None or len(items) != count:
            return None
        picked.append(items[index])
    return picked


# libcst --------------------------------------------------------------------------------


def _cst_literal(node: cst.BaseExpression) -> Any:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, (cst.List, cst.Tuple)):
        values = [_cst_literal(e.value) for e in node.elements]
        return None if any(v is None for v in values) else values
    return None


def _cst_arguments(call: cst.Call, *names: str) -> list[cst.BaseExpression | None]:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    return [
        positional[i] if i < len(positional) else named.get(name) for i, name in enumerate(names)
    ]


def cst_values(engine: Engine, param: cst.Param) -> list[cst.BaseExpression] | None:
    """The values the decorators of ``param``'s function give it, or None.

    ``param`` is an original node (a scope assignment's ``node``).
    """
    function = engine.parent(engine.parent(param))
    if not isinstance(function, cst.FunctionDef):
        return None
    name = param.name.value

    def row_items(row: cst.BaseExpression, single: bool = False) -> list[Any] | None:
        if isinstance(row, cst.Call) and PYTEST_PARAM in engine.qualified(row.func):
            return [a.value for a in row.args if a.keyword is None and not a.star]
        if single or not isinstance(row, (cst.Tuple, cst.List)):
            return None
        return [e.value for e in row.elements if not isinstance(e, cst.StarredElement)]

    for decorator in function.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or PARAMETRIZE not in engine.qualified(call.func):
            continue
        names_node, values_node = _cst_arguments(call, "argnames", "argvalues")
        names = _names(_cst_literal(names_node)) if names_node is not None else None
        if not names or name not in names:
            continue
        if not isinstance(values_node, (cst.List, cst.Tuple)):
            return None
        rows = [e.value for e in values_node.elements]
        return _pick(rows, names.index(name), len(names), row_items)
    return None


# ast -----------------------------------------------------------------------------------


def _ast_arguments(call: ast.Call, *names: str) -> list[ast.expr | None]:
    positional = [a for a in call.args if type(a) is not ast.Starred]
    named = {k.arg: k.value for k in call.keywords if k.arg is not None}
    return [
        positional[i] if i < len(positional) else named.get(name) for i, name in enumerate(names)
    ]


def _ast_literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def ast_values(detector: Detector, name: ast.Name) -> list[ast.expr] | None:
    """The values parametrize gives the parameter ``name`` reads, or None.

    Only where the name's one binding is a parameter of the nearest enclosing function
    that has a parameter of that name.
    """
    names = detector.names
    binder = names.lookup(names.scope_of[name], name.id)
    node: Any = detector.parent(name)
    while node is not None and type(node) not in (ast.FunctionDef, ast.AsyncFunctionDef):
        node = detector.parent(node)
    param = None
    while node is not None:
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        param = next((a for a in every if a.arg == name.id), None)
        if param is not None:
            break
        node = detector.parent(node)
        while node is not None and type(node) not in (ast.FunctionDef, ast.AsyncFunctionDef):
            node = detector.parent(node)
    if node is None or param is None or binder is None:
        return None
    # The name's only binding is that parameter (the scope records where it binds).
    if binder.others.get(name.id) != [(param.lineno, param.col_offset)]:
        return None

    def row_items(row: ast.expr, single: bool = False) -> list[Any] | None:
        if type(row) is ast.Call and PYTEST_PARAM in detector.qualified(row.func):
            return [a for a in row.args if type(a) is not ast.Starred]
        if single or type(row) not in (ast.Tuple, ast.List):
            return None
        return [e for e in row.elts if type(e) is not ast.Starred]  # type: ignore[attr-defined]

    for decorator in node.decorator_list:
        if type(decorator) is not ast.Call or PARAMETRIZE not in detector.qualified(decorator.func):
            continue
        names_node, values_node = _ast_arguments(decorator, "argnames", "argvalues")
        wanted = _names(_ast_literal(names_node))
        if not wanted or name.id not in wanted:
            continue
        if type(values_node) not in (ast.List, ast.Tuple):
            return None
        rows = list(values_node.elts)  # type: ignore[union-attr]
        return _pick(rows, wanted.index(name.id), len(wanted), row_items)
    return None
