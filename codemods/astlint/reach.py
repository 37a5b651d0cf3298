r"""The nodes the detector's walk must reach: those above anything it may act on.

The walk (:class:`codemods.astlint.walk.Walk`) acts on a name or attribute chain whose
first name may refer to something a rule looks at, an import, and (where a rule of
the run asks) a function or a class; a call acts only where its callee's first name
is such a name. Every other node is passed through, and in a module of real code most
subtrees hold none of them (three in four of the nodes of the realistic tree and of
489 real files). Marking the ancestors of the few nodes that matter, from the parents
the scopes already recorded, lets the walk skip the rest: its events are the same,
in the same order.

Example:
    >>> import ast
    >>> from codemods.astlint.scopes import Names
    >>> from codemods.syntax.ast_nodes import tree_index
    >>> tree = ast.parse("x = 1 + 2\nimport torch\ny = torch.a\n")
    >>> names = Names(tree)
    >>> live = reached(tree, tree_index(tree).by_type, names.parents, {"torch"}, ())
    >>> [type(s).__name__ for s in tree.body if id(s) in live]
    ['Import', 'Assign']
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


def reached(
    tree: ast.Module,
    by_type: dict[type, list[ast.AST]],
    parents: dict[int, ast.AST],
    relevant: set[str] | frozenset[str],
    kinds: Iterable[type],
) -> set[int] | Everything:
    """The ids of the nodes at or above a name in ``relevant``, an import, a class or ``kinds``.

    Classes are always reached: a class hook's rules are asked for only where the
    walk meets a class (there are few, and their rules' modules load when asked).

    Args:
        tree: The module.
        by_type: Its nodes by type (:attr:`~codemods.syntax.ast_nodes.TreeIndex.by_type`).
        parents: Each node's parent (:attr:`~codemods.astlint.scopes.Names.parents`).
        relevant: The names whose uses the walk looks up (any context).
        kinds: The further node types the walk acts on (functions, classes).

    Returns:
        The ids, the module's among them; :class:`Everything` where a node's parent
        is not known, so that the walk reaches every node rather than miss one.
    """
    live = {id(tree)}
    seeds = [n for n in by_type.get(ast.Name, ()) if n.id in relevant]  # type: ignore[attr-defined]
    for kind in (ast.Import, ast.ImportFrom, ast.ClassDef, *kinds):
        seeds += by_type.get(kind, ())
    add = live.add
    for node in seeds:
        key = id(node)
        while key not in live:
            add(key)
            above = parents.get(key)
            if above is None:
                return Everything()
            key = id(above)
    return live


class Everything:
    """Every node (``in`` is always true): the walk reaches the whole tree."""

    def __contains__(self, key: object) -> bool:
        return True
