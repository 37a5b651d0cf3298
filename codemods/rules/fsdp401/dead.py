"""The FSDP1 bindings a conversion leaves dead, removed with it (FSDP401).

``policy = ModuleWrapPolicy({Block})`` or ``strategy = ShardingStrategy.SHARD_GRAD_OP``
bound only for the wrapper call are dead once the call is ``fully_shard`` code that
names neither: the conversion removes such a line, and the imports it alone used go
with it. Only where nothing else can change: the name is bound once in the call's
scope, by a line of its own, and used by the call alone; its value only builds FSDP1's
configuration (torch's FSDP names, ``functools.partial`` of them, literals, sets of
names, a dict of them); and no comment sits above the line or inside its value (it may
say more than the binding).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from codemods.rules.api import Engine
from codemods.rules.fsdp401.outcome import Conversion
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

#: What a removable value may call: torch's FSDP package, ``functools.partial`` and
#: ``dict`` (FSDP1's keywords gathered for ``**kwargs``).
PURE_HOMES = ("torch.distributed.fsdp.", "functools.partial", "builtins.dict")


def _written(conversion: Conversion) -> str:
    """The sources the conversion's new code names."""
    return " ".join(
        [
            conversion.root,
            conversion.before or "",
            conversion.policy or "",
            *conversion.classes,
            *conversion.keywords.code,
            *conversion.keywords.bindings,
            *conversion.keywords.setup.sources(),
        ]
    )


def dead_bindings(
    engine: Engine, conversion: Conversion, conversions: tuple[Conversion, ...] = ()
) -> list[cst.SimpleStatementLine]:
    """The lines binding names only converted calls used, which their code does not name.

    ``conversions`` are the file's other converted calls: a configuration shared by the
    calls of a hand-nested wrapping (``precision = MixedPrecision(...)`` passed to each)
    is dead once they all are ``fully_shard`` code.
    """
    scope = engine.scope(conversion.call)
    if scope is None:
        return []
    calls = [conversion, *(c for c in conversions if c is not conversion)]
    found = []
    for node in find_all(conversion.call, lambda n: isinstance(n, cst.Name)):
        name = node.value
        pattern = rf"\b{re.escape(name)}\b"
        if node is conversion.call.func or re.search(pattern, _written(conversion)):
            continue

        def gone(use: cst.CSTNode, pattern: str = pattern) -> bool:
            """Whether ``use`` is in a converted call whose new code does not name it."""
            return any(
                _inside(engine, use, c.call) and not re.search(pattern, _written(c)) for c in calls
            )

        line = _sole_binding(engine, scope, name, gone)
        if line is not None and line not in found:
            found.append(line)
    return found


def _inside(engine: Engine, node: cst.CSTNode, call: cst.Call) -> bool:
    while node is not None and node is not call:
        node = engine.parent(node)
    return node is call


def _sole_binding(
    engine: Engine, scope: Any, name: str, gone: Callable[[cst.CSTNode], bool]
) -> cst.SimpleStatementLine | None:
    """The line ``name = value`` that is ``name``'s one binding, every use of it ``gone``."""
    assignments = list(scope.assignments[name]) if name in scope.assignments else []
    if len(assignments) != 1 or not isinstance(assignments[0].node, cst.Name):
        return None
    references = list(assignments[0].references)
    if not references or not all(gone(reference.node) for reference in references):
        return None
    assign = engine.parent(assignments[0].node)
    target = engine.parent(assign) if isinstance(assign, cst.AssignTarget) else None
    if not isinstance(target, cst.Assign) or len(target.targets) != 1:
        return None
    line = engine.parent(target)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if any(isinstance(e, cst.EmptyLine) and e.comment for e in line.leading_lines):
        return None
    if line.trailing_whitespace.comment is not None or not pure_configuration(engine, target.value):
        return None
    if "#" in engine.module.code_for_node(target.value):  # a comment inside says more
        return None
    first = min(engine.position(reference.node).start.line for reference in references)
    if engine.position(line).start.line >= first:
        return None
    return line


def pure_configuration(engine: Engine, value: cst.BaseExpression) -> bool:
    """Whether ``value`` only builds FSDP1 configuration (no call of anything else)."""
    for node in find_all(value, lambda n: isinstance(n, cst.Call)):
        if not any(q.startswith(PURE_HOMES) for q in engine.qualified(node.func)):
            return False
    return not any(
        isinstance(n, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr))
        for n in find_all(value, lambda n: True)
    )
