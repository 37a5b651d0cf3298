"""Where a wrapped model reaches beyond the name its wrapper call binds, for FSDP401.

Scripts wrap the model in a setup function and use it where that function's result is
bound: ``model = setup_fsdp(model, args)`` in ``main``, then ``model.no_sync()`` in the
training loop. Trainers keep it on ``self``: ``self.model = FSDP(...)`` in ``__init__``,
then ``self.model.clip_grad_norm_(...)`` in ``step``. FSDP1's methods there are on the
wrapped model as surely as in the function that wraps it, so they are rewritten with
the call (or keep the file FSDP1). Only uses after the call in the file are followed
(they are visited after the call is rewritten); any other keeps the file FSDP1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from codemods.rules.api import Engine
from codemods.rules.fsdp401.fsdp1_only import CHANGED_MEANING, FSDP1_ONLY
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


def _self_target(engine: Engine, conversion: Conversion) -> tuple[cst.ClassDef, str] | None:
    """The class and ``self.name`` a method's wrapper call assigns, if that is its target."""
    statement = conversion.line.body[0]
    targets = getattr(statement, "targets", ())
    if len(targets) != 1 or not isinstance(targets[0].target, cst.Attribute):
        return None
    target = targets[0].target
    method = engine.parent(engine.parent(conversion.line))  # line -> block -> def
    if not isinstance(method, cst.FunctionDef) or not isinstance(target.value, cst.Name):
        return None
    owner = engine.parent(engine.parent(method))  # def -> block -> class
    params = method.params.params
    if not isinstance(owner, cst.ClassDef) or not params or params[0].name.value != "self":
        return None
    if target.value.value != "self":
        return None
    return owner, f"self.{target.attr.value}"


def attribute_models(
    engine: Engine, conversions: dict[int, Any]
) -> Iterator[tuple[str, tuple[Any, int, bool], int, int]]:
    """``self.name`` in the other methods of a class whose method wraps into it.

    The attribute must be assigned nowhere else in the class. Each method of the class
    (taking ``self``) gets the name as bound at the wrapper call's line, so its uses
    after the call are followed.

    Yields:
        ``self.name``, a site in the method, the call's line and the wrapper call's key.
    """
    code = engine.module.code_for_node
    for key, conversion in conversions.items():
        if not isinstance(conversion, Conversion):
            continue
        found = _self_target(engine, conversion)
        if found is None:
            continue
        owner, name = found
        assigned = [
            target
            for node in find_all(owner, lambda n: isinstance(n, (cst.Assign, cst.AugAssign)))
            for target in (
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            )
            if name in code(target)
        ]
        if len(assigned) != 1:
            continue  # assigned elsewhere too: not certainly the wrapped model
        line = line_of(engine, conversion.call)
        for method in owner.body.body:
            if not isinstance(method, cst.FunctionDef) or not method.body.body:
                continue
            params = method.params.params
            if not params or params[0].name.value != "self":
                continue
            scope = engine.scope(method.body.body[0])
            yield name, (scope, line_of(engine, method), False), line, key


def reached_models(
    engine: Engine, conversions: dict[int, Any]
) -> Iterator[tuple[str, tuple[Any, int, bool], int, int]]:
    """Both: the names a setup function's result is bound to, and ``self.name``."""
    yield from returned_models(engine, conversions)
    yield from attribute_models(engine, conversions)


def method_model_reads(engine: Engine, conversions: dict[int, Any]) -> list[str]:
    """FSDP1-only reads of ``self.name`` where a method's wrapped model may be bound to it.

    A benchmark's ``setup_distributed(self, model)`` returns ``FSDP(model, ...)``, the
    class binds ``self.model = self.setup_distributed(self.model)`` (among other
    values: DDP's model, a compiled one) and its training loop reads
    ``self.model.no_sync`` (lightning-thunder). The read may be FSDP1's method on the
    converted model, which FSDP2 lacks, or another wrapper's: it is not rewritten, and
    the file stays FSDP1 (each read is a reason).
    """
    found = []
    code = engine.module.code_for_node
    for conversion in conversions.values():
        if not isinstance(conversion, Conversion):
            continue
        method = _method(engine, conversion.call)
        statement = conversion.line.body[0]
        if method is None or not (
            _returns(method, conversion.root, engine) or isinstance(statement, cst.Return)
        ):
            continue
        owner = engine.parent(engine.parent(method))
        called = f"self.{method.name.value}"
        names = {
            code(target.target)
            for node in find_all(owner, lambda n: isinstance(n, cst.Assign))
            if isinstance(node.value, cst.Call) and code(node.value.func) == called
            for target in node.targets
            if code(target.target).startswith("self.")  # a local is another method's own
        }
        for node in find_all(owner, lambda n: isinstance(n, cst.Attribute)):
            attr = node.attr.value
            if attr in CHANGED_MEANING and _in_state_dict_type(engine, node):
                continue  # the checkpoint block's own FSDP2 form covers it (checkpoints.py)
            if code(node.value) in names and (attr in FSDP1_ONLY or attr in CHANGED_MEANING):
                why = CHANGED_MEANING.get(attr, f"an FSDP2 model has no `{attr}`")
                found.append(
                    f"`{code(node)}` at line {line_of(engine, node)} reads what "
                    f"`{called}` returns (line {line_of(engine, conversion.call)}'s FSDP1 "
                    f"model): {why}"
                )
    return found


def _method(engine: Engine, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The method (of a class, taking ``self``) ``node`` is in, if any."""
    while node is not None and not isinstance(node, cst.FunctionDef):
        node = engine.parent(node)
    owner = engine.parent(engine.parent(node)) if node is not None else None
    params = node.params.params if node is not None else ()
    if not isinstance(owner, cst.ClassDef) or not params or params[0].name.value != "self":
        return None
    return node


def _in_state_dict_type(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in the body of ``with FSDP.state_dict_type(...):``."""
    while node is not None:
        node = engine.parent(node)
        if isinstance(node, cst.With) and any(
            isinstance(item.item, cst.Call)
            and isinstance(item.item.func, cst.Attribute)
            and item.item.func.attr.value == "state_dict_type"
            for item in node.items
        ):
            return True
    return False
