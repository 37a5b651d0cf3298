"""FSDP125: FSDP2's ``set_reduce_scatter_divide_factor`` as ``set_gradient_divide_factor``.

A method of ``FSDPModule``: the receiver's type is only certain where the file makes
it, so the rule starts from ``fully_shard(...)`` calls. Certain: the call's own result
(``fully_shard(m).set_reduce_scatter_divide_factor(f)``), and a name the call binds or
shards in place (``m = fully_shard(m)``, ``fully_shard(m)``), used later in the same block
(function body, loop body, ...) with no assignment in between. Other uses
of that name are reported for a human; receivers the file does not shard are not found.
"""

from __future__ import annotations

import libcst as cst

from codemods.kinds.base import Behaviour, Engine
from codemods.syntax import is_plain_positional, keyword

OLD_METHOD = "set_reduce_scatter_divide_factor"
NEW_METHOD = "set_gradient_divide_factor"


def _statement(engine: Engine, node: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The body owner (module or block) and the statement of it that holds ``node``."""
    child, parent = node, engine.parent(node)
    while parent is not None:
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return parent, child
        child, parent = parent, engine.parent(parent)
    return None


def _index(engine: Engine, body: cst.CSTNode, node: cst.CSTNode) -> int | None:
    """The index in ``body`` of the statement holding ``node`` (None: not in that body)."""
    child, parent = node, engine.parent(node)
    while parent is not None and parent is not body:
        child, parent = parent, engine.parent(parent)
    return body.body.index(child) if parent is body else None


def _sharded_name(engine: Engine, call: cst.Call) -> cst.Name | None:
    """The name ``call`` (a ``fully_shard``) binds or shards in place, if any."""
    parent = engine.parent(call)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        return target if isinstance(target, cst.Name) else None
    if isinstance(parent, cst.Expr):
        first = [a for a in call.args if is_plain_positional(a) or keyword(a) == "module"]
        value = first[0].value if first else None
        return value if isinstance(value, cst.Name) else None
    return None


class Fsdp125(Behaviour):
    """Rename the method where ``fully_shard`` certainly made the receiver."""

    def calls(self) -> tuple[str, ...]:
        return tuple(old.rpartition(".")[0] for old in self.rule.old)

    def _found(self, engine: Engine, attribute: cst.Attribute, certain: bool) -> None:
        seen = engine.scratch.setdefault(self.rule.code, set())
        if id(attribute) in seen:
            return
        seen.add(id(attribute))
        if engine.report(attribute, self.rule, fixable_here=certain) and certain:
            engine.rename_name(attribute.attr, NEW_METHOD)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        parent = engine.parent(original)
        if isinstance(parent, cst.Attribute) and parent.attr.value == OLD_METHOD:
            self._found(engine, parent, certain=True)
            return updated
        name = _sharded_name(engine, original)
        where = _statement(engine, original)
        scope = engine.scope(original)
        if name is None or where is None or scope is None:
            return updated
        body, statement = where
        here = body.body.index(statement)
        later = [
            index
            for assignment in scope.assignments[name.value]
            if (node := getattr(assignment, "node", None)) is not None
            and (index := _index(engine, body, node)) is not None
            and index > here
        ]
        for access in scope.accesses[name.value]:
            attribute = engine.parent(access.node)
            if not (
                isinstance(attribute, cst.Attribute)
                and attribute.value is access.node
                and attribute.attr.value == OLD_METHOD
            ):
                continue
            index = _index(engine, body, access.node)
            certain = index is not None and index > here and not any(i <= index for i in later)
            self._found(engine, attribute, certain)
        return updated


BEHAVIOUR = Fsdp125
