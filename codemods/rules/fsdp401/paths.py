"""Where a statement runs relative to a wrapper call, for FSDP401's reading of ``**kwargs``.

Block structure only (no data flow): a statement in a block that also holds the call,
before it, runs whenever the call does; two statements in different branches of one
``if`` never run together.
"""

from __future__ import annotations

from typing import Any

from codemods.rules.api import Engine
from codemods.syntax.lazy_libcst import cst


def enclosing_loop(engine: Engine, node: cst.CSTNode, scope: Any) -> cst.CSTNode | None:
    """The outermost ``for``/``while`` of ``scope`` around ``node``, if any."""
    found = None
    parent = engine.parent(node)
    while parent is not None and not isinstance(parent, (cst.FunctionDef, cst.Module)):
        if isinstance(parent, (cst.For, cst.While)):
            found = parent
        parent = engine.parent(parent)
    return found


def inside(engine: Engine, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    """Whether ``node`` is ``outer`` or below it."""
    while node is not None and node is not outer:
        node = engine.parent(node)
    return node is outer


def on_every_path(engine: Engine, statement: cst.CSTNode, call: cst.Call) -> bool:
    """Whether ``statement`` runs before ``call`` whenever the call runs.

    It does where its own block also holds the call (directly or in a nested block),
    later: nothing between them chooses.
    """
    line = engine.parent(statement)
    lines = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
    while line is not None and not isinstance(line, lines):
        line = engine.parent(line)
    block = engine.parent(line) if line is not None else None
    return block is not None and inside(engine, call, block) and not inside(engine, call, line)


def exclusive(engine: Engine, one: cst.CSTNode, other: cst.CSTNode) -> bool:
    """Whether ``one`` and ``other`` sit in different branches of one ``if``."""
    child, parent = one, engine.parent(one)
    while parent is not None:
        if isinstance(parent, cst.If) and inside(engine, other, parent):
            side = parent.body if inside(engine, one, parent.body) else parent.orelse
            if side is not None and inside(engine, child, side) and not inside(engine, other, side):
                return not inside(engine, other, parent.test)
        child, parent = parent, engine.parent(parent)
    return False
