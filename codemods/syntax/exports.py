"""The names a module exports in ``__all__``, read from its ``ast`` or libcst tree.

A rename fix that changes the name a from-import binds takes that name away from every
module importing it from here when ``__all__`` lists it (``from mypkg import OldName``):
both planners hold such a fix, so lint's ``[*]`` and migrate agree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


def ast_exports(tree: ast.Module) -> frozenset[str]:
    r"""The strings of the module-level ``__all__`` (assigned, added to, extended).

    Example:
        >>> source = "__all__ = ['a'] + ['b']\nif x:\n    __all__.append('c')"
        >>> sorted(ast_exports(ast.parse(source)))
        ['a', 'b', 'c']
    """
    return frozenset(
        s.value for node in ast_module_statements(tree) for s in ast_export_strings(node)
    )


def ast_export_strings(statement: ast.AST) -> list[ast.Constant]:
    r"""The string constants a module-level statement puts in ``__all__`` (the one reader).

    The verifier (:mod:`codemods.verify.bindings`) keeps their positions.

    Example:
        >>> [s.col_offset for s in ast_export_strings(ast.parse("__all__ += ['a', 'b']").body[0])]
        [12, 17]
    """
    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = getattr(statement, "targets", None) or [statement.target]  # type: ignore[attr-defined]
        if any(_ast_is_all(t) for t in targets):
            return list(_ast_strings(statement.value))
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute) and _ast_is_all(func.value):
            return [s for arg in statement.value.args for s in _ast_strings(arg)]
    return []


def _ast_is_all(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "__all__"


def _ast_strings(value: ast.AST | None) -> Iterator[ast.Constant]:
    if isinstance(value, ast.BinOp):
        yield from _ast_strings(value.left)
        yield from _ast_strings(value.right)
    elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        for item in value.elts:
            yield from _ast_strings(item)
    elif isinstance(value, ast.Constant) and isinstance(value.value, str):
        yield value


def cst_exports(module: Any) -> frozenset[str]:
    r""":func:`ast_exports` for a libcst module.

    Example:
        >>> import libcst
        >>> sorted(cst_exports(libcst.parse_module("__all__ = ('a', 'b')\n__all__ += ['c']\n")))
        ['a', 'b', 'c']
    """
    found: set[str] = set()
    for statement in cst_module_statements(module):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                if any(_cst_is_all(t.target) for t in small.targets):
                    found.update(_cst_strings(small.value))
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                if _cst_is_all(small.target) and small.value is not None:
                    found.update(_cst_strings(small.value))
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                func = small.value.func
                if isinstance(func, cst.Attribute) and _cst_is_all(func.value):
                    for arg in small.value.args:
                        found.update(_cst_strings(arg.value))
    return frozenset(found)


def _cst_is_all(node: Any) -> bool:
    return isinstance(node, cst.Name) and node.value == "__all__"


def _cst_strings(value: Any) -> Iterator[str]:
    if isinstance(value, cst.BinaryOperation):
        yield from _cst_strings(value.left)
        yield from _cst_strings(value.right)
    elif isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        for element in value.elements:
            yield from _cst_strings(element.value)
    elif isinstance(value, cst.SimpleString):
        evaluated = value.evaluated_value
        if isinstance(evaluated, str):
            yield evaluated


def ast_module_imports(tree: ast.Module) -> Iterator[ast.ImportFrom]:
    r"""The from-imports that bind module-level names (also in ``if``/``try``/``with``).

    Example:
        >>> tree = ast.parse("try:\n    from a import b\nexcept ImportError:\n    b = None")
        >>> [n.module for n in ast_module_imports(tree)]
        ['a']
    """
    return (node for node in ast_module_statements(tree) if isinstance(node, ast.ImportFrom))


def ast_module_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's statements in source order, those in ``if``/``try``/``with`` too.

    Not those in a function or class body (they bind names of their own scopes).
    """
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("finalbody", "orelse", "handlers", "body"):  # popped in reverse
                for child in reversed(getattr(node, field, None) or ()):
                    if isinstance(child, ast.ExceptHandler):
                        stack.extend(reversed(child.body))
                    elif isinstance(child, ast.stmt):
                        stack.append(child)


def cst_module_imports(module: Any) -> Iterator[Any]:
    """:func:`ast_module_imports` for a libcst module."""
    for node in cst_module_statements(module):
        if isinstance(node, cst.SimpleStatementLine):
            yield from (s for s in node.body if isinstance(s, cst.ImportFrom))


def cst_module_statements(module: Any) -> Iterator[Any]:
    """:func:`ast_module_statements` for a libcst module (statement lines and compounds)."""
    stack: list[Any] = list(reversed(module.body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef)):
            for child in reversed(_cst_blocks(node)):
                stack.extend(reversed(child))


def _cst_blocks(node: Any) -> list[Any]:
    """The statement lists directly inside a compound statement."""
    blocks = []
    for field in ("body", "handlers", "orelse", "finalbody"):
        part = getattr(node, field, None)
        if part is None:
            continue
        if isinstance(part, (list, tuple)):  # handlers
            blocks.extend(list(h.body.body) for h in part)
        elif isinstance(part, cst.IndentedBlock):
            blocks.append(list(part.body))
        elif hasattr(part, "body"):  # Else, Finally, an elif's If
            inner = part.body
            if isinstance(part, cst.If):
                blocks.append([part])
            elif isinstance(inner, cst.IndentedBlock):
                blocks.append(list(inner.body))
    return blocks
