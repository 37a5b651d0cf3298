"""Plain ``name = value`` bindings, in both trees: what a rule may follow a name to.

A rule that follows a name to its value (a policy passed as ``auto_wrap_policy=p``, a
strategy name passed as ``strategy=s``) needs each binding of it to be a plain
assignment with one target; any other binding (an import, a parameter, a loop, a
``with ... as``) could give the name another value.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Detector, Engine
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


def assign_of(engine: Engine, target: cst.CSTNode) -> cst.Assign | None:
    """The ``Assign`` whose one target is ``target`` (an original node), or None."""
    holder = engine.parent(target)
    statement = engine.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return statement
    return None


def ast_assigns(detector: Detector, scope: Any, name: str) -> list[ast.Assign] | None:
    """Each ``name = value`` statement binding ``name`` in ``scope`` (``ast``).

    None where ``scope`` binds the name in another way too (or imports it).
    """
    names = detector.names
    if scope is None or name in scope.imports:
        return None
    found = []
    for node in detector.nodes(ast.Name):
        if node.id != name or type(node.ctx) is not ast.Store:  # type: ignore[attr-defined]
            continue
        if names.lookup(names.scope_of[node], name) is not scope:
            continue
        statement = detector.parent(node)
        if type(statement) is not ast.Assign or statement.targets != [node]:  # type: ignore[attr-defined]
            return None
        found.append(statement)
    return found if len(found) == scope.count.get(name, 0) else None
