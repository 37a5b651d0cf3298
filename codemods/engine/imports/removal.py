"""Removing unused imports without building libcst's codemod visitors for it.

libcst's ``RemoveImportsVisitor`` and the ``RemovedNodeVisitor`` behind
``remove_unused_import_by_node`` are matcher-decorated visitors: each one built
inspects every attribute of its class, which costs more than the rest of the work
on a pruned module's import line, besides loading ``libcst.codemod`` once a process.
The import pass (:mod:`codemods.engine.imports.finish`) would build one per node it
forgets and one per import line it edits. Here are the same two steps, each without
a visitor:

- :func:`queue_forgotten`: the imports a forgotten node's names were bound by, queued
  for removal as ``remove_unused_import_by_node`` queues them (from the module's scopes).
- :func:`without_unused`: one import line without the names queued for removal, where
  nothing else in the module uses them, as the visitor leaves it: the names and their
  commas gone, a comment after a removed name's comma kept on the name before it (or
  after the opening parenthesis), the line gone with its last name.

``tests/test_import_removal.py`` compares both with libcst's visitors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from libcst.helpers import get_absolute_module_from_package_for_import, get_full_name_for_node
from libcst.metadata import Assignment, MetadataWrapper, ScopeProvider

from codemods.syntax.cst_tree import child_nodes
from codemods.syntax.lazy_libcst import cst

__all__ = ["queue_forgotten", "without_unused"]

#: ``(module, name or None, asname or None)``: an import queued for removal.
Queued = tuple[str, "str | None", "str | None"]


def queue_forgotten(wrapper: MetadataWrapper, node: cst.CSTNode) -> list[Queued]:
    """The imports behind ``node``'s names, to be removed if then unused.

    What ``RemoveImportsVisitor.remove_unused_import_by_node`` queues: an import
    statement's own names, or for any other node the import aliases its names and
    attributes (or the start of them) are bound by, in its scope or an enclosing one.

    Raises:
        ValueError: A relative ``from`` import binds one (its module is not known).
    """
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return _bound_by(None, node)
    queued: list[Queued] = []
    scopes = wrapper.resolve(ScopeProvider)
    for name in _names_under(node):
        local = get_full_name_for_node(name)
        scope = scopes.get(name)
        if local is None or scope is None:
            continue
        while True:  # this scope, then each enclosing one (the global scope is its own)
            for assignment in scope.assignments[name] or ():
                if isinstance(assignment, Assignment):
                    queued += _bound_by(local, assignment.node)
            if scope is scope.parent:
                break
            scope = scope.parent
    return queued


def _names_under(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and the names and attributes below it, parents first."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Name, cst.Attribute)):
            found.append(current)
        stack.extend(reversed(child_nodes(current)))
    return found


def _bound_by(local: str | None, statement: cst.CSTNode) -> list[Queued]:
    """The aliases of an import statement that bind ``local`` or the start of it (None: all)."""
    if isinstance(statement, cst.Import):
        module = None
    elif isinstance(statement, cst.ImportFrom):
        if isinstance(statement.names, cst.ImportStar):
            return []
        module = get_absolute_module_from_package_for_import(None, statement)
        if module is None:
            raise ValueError("Cannot look up absolute module from relative import!")
    else:
        return []
    found: list[Queued] = []
    for alias in statement.names:
        bound = alias.evaluated_alias or alias.evaluated_name
        if local is not None and local != bound and not local.startswith(f"{bound}."):
            continue
        if module is None:
            found.append((alias.evaluated_name, None, alias.evaluated_alias))
        else:
            found.append((module, alias.evaluated_name, alias.evaluated_alias))
    return found


def without_unused(
    line: cst.SimpleStatementLine, unused: Sequence[Queued]
) -> list[cst.SimpleStatementLine] | None:
    r"""``line``, one import, without the ``unused`` names it imports (empty: no line left).

    None where libcst's visitor decides (several statements on the line, a relative
    import, ``__future__``). The names must be used nowhere else in the module.

    Example:
        >>> line = cst.parse_statement("from m import (a,  # first\n    b,  # second\n)\n")
        >>> left = without_unused(line, [("m", "a", None)])
        >>> [cst.Module([]).code_for_node(statement) for statement in left]
        ['from m import (  # first\n    b,  # second\n)\n']
    """
    if len(line.body) != 1:
        return None
    statement = line.body[0]
    if isinstance(statement, cst.Import):
        modules = {module: asname for module, name, asname in unused if name is None}
        kept = [
            alias
            for alias in statement.names
            if alias.evaluated_name not in modules
            or alias.evaluated_alias != modules[alias.evaluated_name]
        ]
        changes: dict[str, Any] = {}
    elif isinstance(statement, cst.ImportFrom):
        if isinstance(statement.names, cst.ImportStar) or statement.relative:
            return None
        module = get_absolute_module_from_package_for_import(None, statement)
        if module is None or module == "__future__":
            return None
        names = {(name, asname) for other, name, asname in unused if other == module}
        kept, changes = _kept_from(statement, names)
    else:
        return None
    if len(kept) == len(statement.names):
        return [line]
    if not kept:
        return []
    if kept[-1] is not statement.names[-1]:  # the last name went: no comma after the new last
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return [line.with_changes(body=[statement.with_changes(names=kept, **changes)])]


def _kept_from(
    statement: cst.ImportFrom, names: set[tuple[str, str | None]]
) -> tuple[list[cst.ImportAlias], dict[str, Any]]:
    """The aliases that stay, and the statement's new ``lpar`` where a comment moves there."""
    kept: list[cst.ImportAlias] = []
    changes: dict[str, Any] = {}
    for alias in statement.names:
        if (alias.evaluated_name, alias.evaluated_alias) not in names:
            kept.append(alias)
            continue
        comma = alias.comma
        if not isinstance(comma, cst.Comma):
            continue
        # The comments after a removed name's comma stay, on what came before it.
        if kept:
            before = kept[-1]
            if isinstance(before.comma, cst.Comma):
                after = _comments_kept(before.comma.whitespace_after, comma.whitespace_after)
                kept[-1] = before.with_changes(
                    comma=before.comma.with_changes(whitespace_after=after)
                )
            else:
                kept[-1] = before.with_changes(comma=comma)
        elif isinstance(statement.lpar, cst.LeftParen):
            # From the statement's own parenthesis each time: the last such name's
            # comments stand, as libcst's visitor leaves them.
            after = _comments_kept(statement.lpar.whitespace_after, comma.whitespace_after)
            changes["lpar"] = statement.lpar.with_changes(whitespace_after=after)
    return kept, changes


def _comments_kept(kept: Any, removed: Any) -> Any:
    """The whitespace after a kept comma or parenthesis, with a removed one's comments."""
    if not isinstance(removed, cst.ParenthesizedWhitespace):
        return kept
    if not isinstance(kept, cst.ParenthesizedWhitespace):
        return removed
    lines = tuple(line for line in removed.empty_lines if line.comment is not None)
    return kept.with_changes(empty_lines=lines)
