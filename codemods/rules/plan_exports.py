"""Renames held where ``__all__`` lists the name their import binds.

``from pkg import OldName`` with ``__all__ = ["OldName"]``: renaming the import takes
``OldName`` from every module that imports it from here, so both planners (libcst's
:class:`codemods.rules.plan.Planner` and the ``ast`` detector's walk) hold the fix
with the same words, and lint's ``[*]`` agrees with what migrate writes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from codemods.registry import Rule
from codemods.syntax.exports import (
    ast_exports,
    ast_module_imports,
    cst_exports,
    cst_module_imports,
)
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


def why_not_exported(name: str) -> str:
    """Why a rename is not fixed where ``__all__`` lists the name its import binds.

    Example:
        >>> why_not_exported("OldName")
        '`OldName` is listed in `__all__`: renaming its import would take the name from the modules that import it from here'
    """  # noqa: E501
    return (
        f"`{name}` is listed in `__all__`: renaming its import would take the name from "
        "the modules that import it from here"
    )


def exported_renames(
    imports: Iterable[tuple[str, bool, Rule, str]],
    exports: frozenset[str],
    new_name: Callable[[Rule, str], str | None],
) -> dict[str, str]:
    """Rule code -> why not, for each rule whose rename would change a name ``__all__`` lists.

    Args:
        imports: For each alias of a module-level from-import that brings in an old name:
            the name it binds, whether it has an ``as`` alias, its rule and the old name.
        exports: The names of the module's ``__all__``.
        new_name: :func:`codemods.rules.plan.new_name` (passed in: the planner imports
            this module).
    """
    found: dict[str, str] = {}
    for bound, aliased, rule, old in imports:
        if aliased or bound not in exports:
            continue
        new = new_name(rule, old)
        if new and new.rpartition(".")[2] != bound:
            found.setdefault(rule.code, why_not_exported(bound))
    return found


def ast_exported(
    tree: ast.Module,
    imported: Callable[[ast.ImportFrom], Iterable[tuple[ast.alias, Rule, str]]],
    new_name: Callable[[Rule, str], str | None],
) -> dict[str, str]:
    """:func:`exported_renames` of an ``ast`` module, ``imported`` as the detector's."""
    exports = ast_exports(tree)
    if not exports:
        return {}
    imports = [
        (alias.name, alias.asname is not None, rule, old)
        for node in ast_module_imports(tree)
        for alias, rule, old in imported(node)
    ]
    return exported_renames(imports, exports, new_name)


def cst_exported(
    module: Any,
    imported: Callable[[Any], Iterable[tuple[str, Rule]]],
    new_name: Callable[[Rule, str], str | None],
) -> dict[str, str]:
    """:func:`exported_renames` of a libcst module, ``imported`` as the planner's."""
    exports = cst_exports(module)
    if not exports:
        return {}
    imports = []
    for node in cst_module_imports(module):
        if isinstance(node.names, cst.ImportStar):
            continue
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            one = node.with_changes(names=[alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
            for old, rule in imported(one):
                imports.append((alias.name.value, alias.asname is not None, rule, old))
    return exported_renames(imports, exports, new_name)
