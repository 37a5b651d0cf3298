r"""A module's imported names and its classes' bases, spelled.

:class:`codemods.cli.project_classes.ProjectClasses` follows a class's bases through
the imports to the files of the run, and needs only this much of each file. The
screening of a run takes it from the tree it parsed anyway (where a file holds a
hook's name), so that the file is not parsed again for its classes.

Example:
    >>> source = "import lightning as L\nfrom .base import Base\nclass M(L.LightningModule, Base):1"
    >>> tree = ast.parse(source)
    >>> bound, bases = names_and_bases(tree)
    >>> bound
    {'L': ('module', 'lightning'), 'Base': ('from', '.base', 'Base')}
    >>> bases
    {'M': ['L.LightningModule', 'Base']}
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

from codemods.syntax.ast_nodes import dotted

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    #: Each name an import binds -> ``("module", dotted)`` or ``("from", module, name)``.
    Bound = dict[str, tuple[str, ...]]
    #: Each class -> its bases, spelled (``pl.LightningModule``; None: not a dotted name).
    Bases = dict[str, list[str | None]]

#: The nodes whose list fields hold statements (``match_case`` from Python 3.10).
_STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler, getattr(ast, "match_case", ast.stmt))


def statements(tree: ast.Module) -> Iterator[ast.AST]:
    r"""Every statement of ``tree``, its handlers and match cases, in ``ast.walk``'s order.

    Imports and class definitions are statements, and a statement sits only in a list
    field of a statement, a handler or a match case: the walk never enters the
    expressions, most of a module's nodes. Breadth first, fields in order, as
    ``ast.walk``, so that a name bound twice keeps the same binding.

    Example:
        >>> tree = ast.parse("import a\nif x:\n    class C(B): pass\nf(lambda: 1)")
        >>> [type(n).__name__ for n in statements(tree)]
        ['Module', 'Import', 'If', 'Expr', 'ClassDef', 'Pass']
    """
    queue = deque([tree])
    while queue:
        node = queue.popleft()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                queue.extend(item for item in value if isinstance(item, _STATEMENT_HOLDERS))


def names_and_bases(tree: ast.Module) -> tuple[Bound, Bases]:
    """The names ``tree``'s imports bind (the last binding of each) and its classes' bases.

    A class defined twice keeps its first bases, as a name bound twice its last import.
    """
    bound: Bound = {}
    bases: Bases = {}
    for node in statements(tree):
        if type(node) is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                local = alias.asname or alias.name.partition(".")[0]
                bound[local] = ("module", alias.name if alias.asname else local)
        elif type(node) is ast.ImportFrom:
            module = "." * node.level + (node.module or "")  # type: ignore[attr-defined]
            for alias in node.names:  # type: ignore[attr-defined]
                bound[alias.asname or alias.name] = ("from", module, alias.name)
        elif type(node) is ast.ClassDef:
            bases.setdefault(node.name, [dotted(b) for b in node.bases])  # type: ignore[attr-defined]
    return bound, bases
