r"""One ``ast.walk`` of each module for the survey of a run's FSDP1 checks.

The survey (:class:`codemods.cli.project_fsdp1.ProjectFsdp1Checks`) asks a dozen
questions of each module that names FSDP1's class (its spellings of the class, FSDP2's,
paired and dispatched checks, ...), each one a walk of the whole tree: on 520 real files,
three quarters of the survey's profiled time was ``ast.walk``. Inside :class:`SharedWalks`, a
module's walk is made once and its list of nodes handed to every question after.

Example:
    >>> import ast
    >>> tree = ast.parse("import os\nos.sep\n")
    >>> with SharedWalks():
    ...     first = walk(tree)
    ...     first is walk(tree)
    True
    >>> [type(node).__name__ for node in first][:3]
    ['Module', 'Import', 'Expr']
    >>> walk(tree) is first  # outside: a fresh walk
    False
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SharedWalks", "forget", "walk"]

#: id(module) -> (the module, its nodes in ``ast.walk``'s order), inside a SharedWalks.
_WALKS: dict[int, tuple[ast.AST, list[ast.AST]]] | None = None


def walk(tree: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk(tree)``'s nodes, in its order; a module's made once inside SharedWalks.

    The trees are only read while the walks are shared: a list made before a change
    would not see it.
    """
    if _WALKS is None or type(tree) is not ast.Module:
        return ast.walk(tree)
    kept = _WALKS.get(id(tree))
    if kept is None or kept[0] is not tree:  # (an id can come back for another tree)
        kept = _WALKS[id(tree)] = (tree, list(ast.walk(tree)))
    return kept[1]


def forget(tree: ast.AST) -> None:
    """Let go of ``tree``'s walk (and so of the tree) before the SharedWalks ends."""
    if _WALKS is not None:
        _WALKS.pop(id(tree), None)


class SharedWalks:
    """Within it, :func:`walk` makes each module's walk once (nested: the outer one's)."""

    def __enter__(self) -> SharedWalks:
        global _WALKS
        self._outer = _WALKS is not None
        if not self._outer:
            _WALKS = {}
        return self

    def __exit__(self, *exc: object) -> None:
        global _WALKS
        if not self._outer:
            _WALKS = None  # the lists go with it: they hold every node of every tree
