r"""The nodes the detector's walk must reach: those above anything it may act on.

The names it looks up (:func:`relevant`) are those that may refer to what a rule
names: imported from where a rule's name starts (``torch.distributed``, not
``torch.nn`` nor ``numpy``), spelled like a package the rules name (a module-level
``torch = ...``), or a module-level alias of an import. Any other chain refers to local
names, builtins or other modules (``nn.Linear``, ``np.zeros``), which no rule names; and
a chain of such a name is passed over whole where no reading of it starts with a rule's
name (``torch.zeros``: :func:`names_nothing`).

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
    >>> [type(s).__name__ for s in tree.body if s in live]
    ['Import', 'Assign']
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from codemods.rules.api import PARTIAL
from codemods.rules.index import INDEX
from codemods.syntax.ast_nodes import dotted

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.astlint.scopes import Names


def relevant(imported: dict[str, set[str]], aliases: Iterable[str]) -> frozenset[str]:
    """The names whose chains the walk looks up (see the module docstring).

    Args:
        imported: Each first part of a name the module's imports bind -> what a use of
            it names first (:attr:`~codemods.astlint.scopes.Names.imported_roots`).
        aliases: The module-level aliases (:attr:`~codemods.astlint.scopes.Names.aliases`).
    """
    kept = [name for name, came in imported.items() if any(map(_related, came))]
    return package_roots().union(kept, aliases)


@functools.cache
def package_roots() -> frozenset[str]:
    """The first parts of the names the rules look at (``torch``, ``lightning`` ...)."""
    return frozenset(_rule_names()[1])


@functools.cache
def _rule_names() -> tuple[frozenset[str], dict[str, list[str]]]:
    """The names the rules look at, as a set and by their first parts."""
    names = frozenset([*INDEX.references, *INDEX.calls, *INDEX.partials, PARTIAL])
    by_root: dict[str, list[str]] = {}
    for name in names:
        by_root.setdefault(name.partition(".")[0], []).append(name)
    return names, by_root


def names_nothing(names: Names, root: str, chain: ast.AST) -> bool:
    """Whether an attribute chain, and each chain inside it, names nothing a rule names.

    Whatever binds ``root`` where the chain is, the chain names what one of the file's
    imports or aliases of ``root`` names, or ``root`` itself (bound in the module, or a
    package's name), followed by the chain's rest; or a local name, which no rule names.
    Not where ``import root.x`` binds it: :meth:`Detector.find
    <codemods.astlint.detector.Detector.find>` may refuse such a chain.
    """
    if root in names.dotted_roots:
        return False
    rest = dotted(chain)[len(root) :]  # type: ignore[index]
    bound = (*names.imported_roots.get(root, ()), *names.aliases.get(root, ()), root)
    return not any(starts_a_rule(target + rest) for target in bound)


@functools.cache
def starts_a_rule(qualified: str) -> bool:
    """Whether a name a rule looks at is ``qualified`` or a dotted start of it.

    Example:
        >>> starts_a_rule("torch.distributed.fsdp.wrap.default_auto_wrap_policy.x")
        True
        >>> starts_a_rule("torch.nn.Linear"), starts_a_rule("torch.distributed")
        (False, False)
    """
    names = _rule_names()[0]
    parts = qualified.split(".")
    return any(".".join(parts[:n]) in names for n in range(1, len(parts) + 1))


@functools.cache
def _related(imported: str) -> bool:
    """Whether a use of what an import binds may name what a rule looks at.

    ``torch.nn`` (``from torch import nn``) starts no rule's name and no rule's name
    starts it: ``nn.Linear`` is not looked up.
    """
    if starts_a_rule(imported):
        return True
    start = imported + "."  # or it starts a rule's name
    return any(name.startswith(start) for name in _rule_names()[1].get(start.partition(".")[0], ()))


def reached(
    tree: ast.Module,
    by_type: dict[type, list[ast.AST]],
    parents: dict[ast.AST, ast.AST],
    relevant: set[str] | frozenset[str],
    kinds: Iterable[type],
) -> set[ast.AST] | Everything:
    """The nodes at or above a name in ``relevant``, an import, a class or ``kinds``.

    Classes are always reached: a class hook's rules are asked for only where the
    walk meets a class (there are few, and their rules' modules load when asked).

    Args:
        tree: The module.
        by_type: Its nodes by type (:attr:`~codemods.syntax.ast_nodes.TreeIndex.by_type`).
        parents: Each node's parent (:attr:`~codemods.astlint.scopes.Names.parents`).
        relevant: The names whose uses the walk looks up (any context).
        kinds: The further node types the walk acts on (functions, classes).

    Returns:
        The nodes, the module among them; :class:`Everything` where a node's parent
        is not known, so that the walk reaches every node rather than miss one.
    """
    live: set[ast.AST] = {tree}
    seeds = [n for n in by_type.get(ast.Name, ()) if n.id in relevant]  # type: ignore[attr-defined]
    for kind in (ast.Import, ast.ImportFrom, ast.ClassDef, *kinds):
        seeds += by_type.get(kind, ())
    add = live.add
    for node in seeds:
        key = node
        while key not in live:
            add(key)
            above = parents.get(key)
            if above is None:
                return Everything()
            key = above
    return live


class Everything:
    """Every node (``in`` is always true): the walk reaches the whole tree."""

    def __contains__(self, key: object) -> bool:
        return True
