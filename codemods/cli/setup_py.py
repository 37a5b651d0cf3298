"""The requirements a ``setup.py`` declares, read with :mod:`ast`: never imported or run.

The ``install_requires`` and ``extras_require`` keywords of its ``setup(...)`` call are
read where a value is a literal list (or tuple, set, or string), a module-level name
bound once to one and never mutated, or a ``+`` of such values; ``**name`` of a literal
dict (or ``dict(...)`` call) adds its keys. Anything else is a problem, named with its
line: its requirements are not read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from codemods.syntax.ast_nodes import tree_index

__all__ = ["SetupPy", "setup_py_requirements"]

_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault"}


def setup_py_requirements(path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    r"""The requirement strings of a ``setup.py``, each with where it was read, and problems.

    Args:
        path: The ``setup.py``; a missing file declares nothing.

    Returns:
        ``([(requirement, where), ...], problems)``; ``where`` is like
        ``setup.py extras_require[gpu]``.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp(), "setup.py")
        >>> _ = path.write_text('import setuptools\nsetuptools.setup(install_requires=["torch"])')
        >>> setup_py_requirements(path)
        ([('torch', 'setup.py install_requires')], [])
    """
    found: list[tuple[str, str]] = []
    problems: list[str] = []
    if not path.is_file():
        return found, problems
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        problems.append(f"setup.py: cannot parse ({exc}); its requirements are not read")
        return found, problems
    setup_py = SetupPy(tree)
    calls = [node for node in _every(tree, ast.Call) if _is_setup(node.func)]  # type: ignore[attr-defined]
    if not calls:
        if "install_requires" in source or "extras_require" in source:
            problems.append("setup.py: no setup(...) call found; its requirements are not read")
        return found, problems
    for call in calls:
        keywords, unresolved = setup_py.keywords(call)
        for star in unresolved:
            problems.append(
                f"setup.py:{call.lineno}: setup() takes {star}; requirements passed "
                "through it are not read"
            )
        if "install_requires" in keywords:
            _strings(setup_py, keywords["install_requires"], "install_requires", found, problems)
        if "extras_require" in keywords:
            _extras(setup_py, keywords["extras_require"], found, problems)
    return found, problems


def _strings(
    setup_py: SetupPy, node: ast.expr, what: str, found: list[tuple[str, str]], problems: list[str]
) -> None:
    strings = setup_py.strings(node)
    if isinstance(strings, str):
        problems.append(
            f"setup.py:{node.lineno}: {what} is {strings}; its requirements are not read"
        )
        return
    found.extend((text, f"setup.py {what}") for text in strings)


def _extras(
    setup_py: SetupPy, node: ast.expr, found: list[tuple[str, str]], problems: list[str]
) -> None:
    table = setup_py.resolve(node)
    if not isinstance(table, ast.Dict):
        problems.append(
            f"setup.py:{node.lineno}: extras_require is not a literal dict "
            f"({_source(node)}); its requirements are not read"
        )
        return
    for key, value in zip(table.keys, table.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            problems.append(
                f"setup.py:{value.lineno}: an extras_require key is not a string "
                "literal; that extra is not read"
            )
            continue
        _strings(setup_py, value, f"extras_require[{key.value}]", found, problems)


def _is_setup(func: ast.expr) -> bool:
    """``setup(...)`` or ``<anything>.setup(...)`` (``setuptools.setup``)."""
    return (isinstance(func, ast.Name) and func.id == "setup") or (
        isinstance(func, ast.Attribute) and func.attr == "setup"
    )


def _source(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


class SetupPy:
    """Module-level bindings of a ``setup.py``, to resolve names to literals.

    Args:
        tree: The parsed ``setup.py``.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.bindings: dict[str, list[ast.AST]] = {}
        self.mutated: set[str] = set()
        for statement in _module_statements(tree.body):
            self._collect(statement)
        for node in _every(tree, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.attr in _MUTATORS:  # type: ignore[attr-defined]
                self.mutated.add(node.value.id)  # type: ignore[attr-defined]
        for node in _every(tree, ast.Subscript):
            if isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Name):  # type: ignore[attr-defined]
                self.mutated.add(node.value.id)  # type: ignore[attr-defined]

    def _bind(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind(element, ast.Pass())  # bound, but not to a literal

    def _collect(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                self._bind(target, statement.value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self._bind(statement.target, statement.value)
        elif isinstance(statement, (ast.AugAssign, ast.For)):
            self._bind(statement.target, statement)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                name = alias.asname or alias.name.split(".")[0]
                self.bindings.setdefault(name, []).append(statement)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bindings.setdefault(statement.name, []).append(statement)

    def resolve(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> ast.expr:
        """``node``, or the one literal a module-level name is bound to."""
        while isinstance(node, ast.Name) and node.id not in seen:
            bound = self.bindings.get(node.id, [])
            if len(bound) != 1 or node.id in self.mutated or not isinstance(bound[0], ast.expr):
                return node
            seen = seen | {node.id}
            node = bound[0]
        return node

    def strings(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> list[str] | str:
        """The requirement strings of a literal list, tuple, set or string, or why not one."""
        resolved = self.resolve(node, seen)
        if isinstance(resolved, ast.Name):
            return f"not a literal list (the name {resolved.id!r} is not bound once to one)"
        if isinstance(resolved, ast.Constant) and isinstance(resolved.value, str):
            return [line.strip() for line in resolved.value.splitlines() if line.strip()]
        if isinstance(resolved, (ast.List, ast.Tuple, ast.Set)):
            found: list[str] = []
            for element in resolved.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    found.append(element.value.strip())
                else:
                    return (
                        f"not a literal list (item {_source(element)} at line "
                        f"{element.lineno} is not a string literal)"
                    )
            return found
        if isinstance(resolved, ast.BinOp) and isinstance(resolved.op, ast.Add):
            left = self.strings(resolved.left, seen)
            if isinstance(left, str):
                return left
            right = self.strings(resolved.right, seen)
            return right if isinstance(right, str) else left + right
        return f"not a literal list ({_source(resolved)})"

    def keywords(self, call: ast.Call) -> tuple[dict[str, ast.expr], list[str]]:
        """``setup()``'s keywords, ``**name`` of a literal dict merged in; the rest named."""
        keywords: dict[str, ast.expr] = {}
        unresolved: list[str] = []
        for keyword in call.keywords:
            if keyword.arg is not None:
                keywords[keyword.arg] = keyword.value
                continue
            table = self.resolve(keyword.value)
            if isinstance(table, ast.Dict) and all(
                isinstance(key, ast.Constant) and isinstance(key.value, str) for key in table.keys
            ):
                for key, value in zip(table.keys, table.values):
                    assert isinstance(key, ast.Constant)
                    keywords.setdefault(key.value, value)
            elif isinstance(table, ast.Call) and _is_dict_call(table):
                for item in table.keywords:
                    if item.arg is not None:
                        keywords.setdefault(item.arg, item.value)
            else:
                unresolved.append(f"**{_source(keyword.value)}, {self._not_dict(keyword.value)}")
        return keywords, unresolved

    def _not_dict(self, node: ast.expr) -> str:
        """Why ``**node`` is not read as one literal dict (a dict updated later, say)."""
        name = node.id if isinstance(node, ast.Name) else None
        if name in self.mutated:
            return "a dict the file changes after binding it"
        if name is not None and len(self.bindings.get(name, [])) != 1:
            return "a name not bound once"
        return "which is not a literal dict"


def _is_dict_call(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "dict"
        and not call.args
        and all(keyword.arg is not None for keyword in call.keywords)
    )


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, including those inside if/try/with/for/while blocks."""
    for statement in body:
        yield statement
        for name in ("body", "orelse", "finalbody"):
            nested = getattr(statement, name, None)
            if isinstance(nested, list) and not isinstance(
                statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                yield from _module_statements(nested)
        for handler in getattr(statement, "handlers", []) or []:
            yield from _module_statements(handler.body)


def _every(tree: ast.Module, kind: type[ast.AST]) -> list[ast.AST]:
    """Every node of type ``kind`` in ``tree``, in source order, from one walk of it."""
    return tree_index(tree).by_type.get(kind, [])
