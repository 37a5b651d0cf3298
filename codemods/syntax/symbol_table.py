r"""Whether Python's symbol table may refuse a module that ``ast`` has parsed.

Past the parser, Python's symbol table refuses some modules (``nonlocal x`` at module
level, ``def f(a, a)``, ``[(x := 1) for x in y]``, ...), and a run reports them as
ruff does (:mod:`codemods.batch.syntax_errors`). Finding that out costs a second parse
(``_symtable.symtable``: two thirds of ``ast.parse``'s CPU). A file that ``ast`` has
parsed already need not pay it unless its tree holds a construct that one of those
errors is about: :func:`may_refuse` looks, in the tree's index.

The constructs, from every message of the symbol tables of Python 3.9 to 3.13
(``tests/test_symbol_table.py`` holds one module per message and asks each Python
that runs it): ``global`` and ``nonlocal``; a parameter named twice; ``import *``
below the module's own statements; ``yield``, ``await`` and ``:=`` in a comprehension
or an annotation; a ``__future__`` import after the module's first other
statement, or of an unknown feature; type parameters and
``type`` aliases (3.12). A newer Python may have more: there :func:`may_refuse` says
yes to every module.

Example:
    >>> import ast
    >>> may_refuse(ast.parse("def f(a, b):\n    return [x for x in a]\n"))
    False
    >>> may_refuse(ast.parse("def f(a, a):\n    pass\n"))
    True
"""

from __future__ import annotations
import __future__

import ast
import sys

from codemods.syntax.ast_nodes import TreeIndex, tree_index

__all__ = ["may_refuse"]

#: The newest Python whose symbol table's messages were read for :data:`_CONSTRUCTS`.
CHECKED_UP_TO = (3, 13)

#: Node types whose presence alone sends the module to the symbol table.
_CONSTRUCTS = tuple(
    kind
    for kind in (
        ast.Global,
        ast.Nonlocal,
        # Python 3.12's type parameters (the index holds each) and ``type`` aliases
        *(getattr(ast, n, None) for n in ("TypeAlias", "TypeVar", "ParamSpec", "TypeVarTuple")),
    )
    if kind is not None
)
#: Node types the symbol table refuses only inside a comprehension or an annotation
#: (elsewhere ``yield`` outside a function is the compiler's refusal, not the symbol
#: table's): a generator, a ``:=`` in an ``if`` are everywhere.
_IN_COMPREHENSIONS = (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

#: ``__future__``'s features: a name outside them is refused ("future feature ... is not
#: defined").
_FUTURE = frozenset(__future__.all_feature_names)


def may_refuse(tree: ast.Module) -> bool:
    """Whether the symbol table may refuse the module ``tree`` (False: it certainly takes it).

    On a Python newer than :data:`CHECKED_UP_TO`, always True.
    """
    if sys.version_info[:2] > CHECKED_UP_TO:
        return True
    index = tree_index(tree)
    by_type = index.by_type
    if any(kind in by_type for kind in _CONSTRUCTS):
        return True
    if any(kind in by_type for kind in _IN_COMPREHENSIONS) and _inside(index):
        return True
    for node in by_type.get(ast.arguments, ()):
        named = [a.arg for a in (*node.posonlyargs, *node.args, *node.kwonlyargs)]  # type: ignore[attr-defined]
        named += [a.arg for a in (node.vararg, node.kwarg) if a is not None]  # type: ignore[attr-defined]
        if len(set(named)) != len(named):
            return True
    for node in by_type.get(ast.comprehension, ()):
        if node.is_async:  # type: ignore[attr-defined]
            return True
    top = {id(statement) for statement in tree.body}
    leading = _leading_futures(tree)
    for node in by_type.get(ast.ImportFrom, ()):
        names = [alias.name for alias in node.names]  # type: ignore[attr-defined]
        if node.module == "__future__" and (  # type: ignore[attr-defined]
            id(node) not in leading or not _FUTURE.issuperset(names)
        ):
            return True
        if "*" in names and id(node) not in top:
            return True
    return False


def _inside(index: TreeIndex) -> bool:
    """Whether a comprehension or an annotation holds a ``yield``, ``await`` or ``:=``."""
    by_type, below = index.by_type, index.below
    roots: list[ast.AST] = [node for kind in _COMPREHENSIONS for node in by_type.get(kind, ())]
    roots += [a.annotation for a in by_type.get(ast.arg, ()) if a.annotation]  # type: ignore[attr-defined]
    roots += [n.annotation for n in by_type.get(ast.AnnAssign, ())]  # type: ignore[attr-defined]
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        roots += [n.returns for n in by_type.get(kind, ()) if n.returns]  # type: ignore[attr-defined]
    while roots:
        node = roots.pop()
        if isinstance(node, _IN_COMPREHENSIONS):
            return True
        roots.extend(below[node])
    return False


def _leading_futures(tree: ast.Module) -> set[int]:
    """The ``from __future__`` imports that open the module (after its docstring).

    Any other is refused ("must occur at the beginning of the file") by the symbol
    table of Python 3.10 to 3.12, whatever statement comes before it.
    """
    body = tree.body
    start = 1 if ast.get_docstring(tree, clean=False) is not None else 0
    found = set()
    for statement in body[start:]:
        if type(statement) is not ast.ImportFrom or statement.module != "__future__":
            break
        found.add(id(statement))
    return found
