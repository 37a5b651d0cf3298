"""What the code of a module reads and binds, from the ``ast`` detector's record of its tree.

The pruning (:mod:`codemods.engine.pruning`) asks which names a function body reads from
the scopes around it and which module-level names a statement reads or binds. The walks
here go over the detector's record of each node's children (``tree_index``) rather than
``ast``'s own fields, in ``ast.walk``'s order.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

from codemods.syntax.ast_nodes import Undecided
from codemods.syntax.ast_nodes import children as _children

#: The statements that define functions.
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: The fields of a statement that hold statements (``handlers``: its except clauses).
BLOCKS = ("body", "orelse", "finalbody", "handlers")


class TreeReads:
    """Walks over the ``ast`` detector's record of a module's tree, and the names code reads.

    Attributes:
        below: Each node's children as the detector recorded them, where it
            still keeps them.
        names: The detector's scopes.
    """

    def __init__(self, tree: ast.Module, names) -> None:
        from codemods.syntax.ast_nodes import tree_index

        self.below = tree_index(tree).below  # the detector's, where it is still kept
        self.names = names

    def walk(self, node: ast.AST) -> Iterator[ast.AST]:
        """``ast.walk`` (the same order) over the detector's record of each node's children.

        Its children leave out the context and operator nodes (``Load()``): nothing here
        looks for those.
        """
        below = self.below
        todo = deque([node])
        while todo:
            node = todo.popleft()
            found = below.get(node)
            todo.extend(_children(node) if found is None else found)
            yield node

    def own_nodes(self, statement: ast.stmt) -> Iterator[ast.AST]:
        """The statement's nodes, not into nested statements, functions or lambdas."""
        below = self.below
        stack: list[ast.AST] = [statement]
        while stack:
            node = stack.pop()
            yield node
            found = below.get(node)
            for child in _children(node) if found is None else found:
                if not isinstance(child, (ast.stmt, ast.Lambda, ast.ExceptHandler)):
                    stack.append(child)

    def bound(self, statement: ast.stmt) -> set[str]:
        """The module-level names a statement binds other than by importing.

        A definition binds its name.
        """
        if type(statement) in (*FUNCTIONS, ast.ClassDef):
            return {statement.name}
        # Not an import's names: every use of an old name an import binds is seen already.
        nodes = self.own_nodes(statement)
        return {n.id for n in nodes if type(n) is ast.Name and type(n.ctx) is ast.Store}

    def read(self, statement: ast.stmt) -> set[str]:
        """The names a statement reads (a definition: anywhere inside it)."""
        if type(statement) in (*FUNCTIONS, ast.ClassDef):
            nodes = self.walk(statement)
        else:
            nodes = self.own_nodes(statement)
        return {n.id for n in nodes if type(n) is ast.Name and type(n.ctx) is ast.Load}

    def reads(self, definition: ast.stmt, outer: object) -> list[str] | None:
        """The names the body reads from outside it, once per read; None: cannot tell."""
        names = self.names
        if outer is None:
            return None
        found: list[str] = []
        for statement in definition.body:
            for node in self.walk(statement):
                kind = type(node)
                if kind is ast.Name and type(node.ctx) is ast.Load:
                    scope = names.scope_of.get(node)
                    if scope is None:
                        return None
                    try:
                        binder = names.lookup(scope, node.id)
                    except Undecided:
                        return None
                    if binder is not None and not _within(binder, scope, outer):
                        found.append(node.id)
                elif kind is ast.Constant and type(node.value) is str and self.annotation(node):
                    found += _annotation_names(node.value)
        return found

    def annotation(self, node: ast.AST) -> bool:
        """Whether a string sits in a type annotation (libcst reads the names in it)."""
        parents = self.names.parents
        child, parent = node, parents.get(node)
        while isinstance(parent, (ast.Subscript, ast.Tuple, ast.BinOp, ast.Attribute, ast.List)):
            child, parent = parent, parents.get(parent)
        if type(parent) is ast.AnnAssign or type(parent) is ast.arg:
            return parent.annotation is child
        return type(parent) in FUNCTIONS and parent.returns is child


def _within(binder, scope, outer) -> bool:
    """Whether ``binder`` is ``scope`` or a scope between it and ``outer`` (the body's)."""
    current = scope
    while current is not None and current is not outer:
        if current is binder:
            return True
        current = current.parent
    return False


def _annotation_names(text: str) -> list[str]:
    """The names a string reads if it is a type annotation (libcst resolves those)."""
    if not text.isprintable() or len(text) > 200:
        return []
    try:
        expression = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return []
    return [n.id for n in ast.walk(expression) if type(n) is ast.Name]


def module_statements(body: list[ast.stmt]):
    """Module-level statements and definitions, through module-level blocks."""
    for statement in body:
        yield statement
        if type(statement) in (*FUNCTIONS, ast.ClassDef):
            continue
        for field in BLOCKS:
            for child in getattr(statement, field, ()) or ():
                if type(child) is ast.ExceptHandler:
                    yield from module_statements(child.body)
                elif isinstance(child, ast.stmt):
                    yield from module_statements([child])
