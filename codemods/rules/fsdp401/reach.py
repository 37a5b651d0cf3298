"""Where a wrapped model reaches beyond the name its wrapper call binds, for FSDP401.

Scripts wrap the model in a setup function and use it where that function's result is
bound: ``model = setup_fsdp(model, args)`` in ``main``, then ``model.no_sync()`` in the
training loop. FSDP1's methods there are on the wrapped model as surely as in the
function that wraps it, so they are rewritten with the call (or keep the file FSDP1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import in_loop, line_of
from codemods.rules.fsdp401.outcome import Conversion
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst


def _function(engine: Engine, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The module-level function ``node`` is in, if any."""
    while node is not None and not isinstance(node, cst.FunctionDef):
        node = engine.parent(node)
    if node is None or not isinstance(engine.parent(node), cst.Module):
        return None
    return node


def _returns(function: cst.FunctionDef, root: str, engine: Engine) -> bool:
    """Whether every ``return`` of ``function`` returns ``root`` (and there is one)."""
    returns = find_all(function.body, lambda n: isinstance(n, cst.Return))
    code = engine.module.code_for_node
    return bool(returns) and all(r.value is not None and code(r.value) == root for r in returns)


def returned_models(
    engine: Engine, conversions: dict[int, Any]
) -> Iterator[tuple[str, tuple[Any, int, bool], int, int]]:
    """The names bound to a module-level function's result that is a wrapped model.

    For each conversion in a module-level function whose every ``return`` returns the
    wrapped model, each ``name = function(...)`` of the module after the wrapper call
    (its uses are then visited after the call is rewritten).

    Yields:
        The name, its site (scope, line, in a loop), its line and the wrapper call's key.
    """
    for key, conversion in conversions.items():
        if not isinstance(conversion, Conversion):
            continue
        function = _function(engine, conversion.call)
        statement = conversion.line.body[0]
        if function is None:
            continue
        if not (_returns(function, conversion.root, engine) or isinstance(statement, cst.Return)):
            continue
        after = line_of(engine, conversion.call)
        for call in engine.nodes(cst.Call):
            if not (isinstance(call.func, cst.Name) and call.func.value == function.name.value):
                continue
            scope = engine.scope(call)
            if scope is None or {getattr(a, "node", None) for a in scope[call.func.value]} != {
                function
            }:
                continue  # another binding of the name where it is called
            parent = engine.parent(call)
            if not (isinstance(parent, cst.Assign) and parent.value is call):
                continue
            if len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
                continue
            line = line_of(engine, call)
            if line > after:
                name = parent.targets[0].target.value
                yield name, (scope, line, in_loop(engine, call)), line, key
