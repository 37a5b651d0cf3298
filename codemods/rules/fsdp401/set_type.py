"""FSDP1's ``set_state_dict_type(model, SHARDED_STATE_DICT)`` on a converted model, for FSDP401.

verl's rollout tests set the type once, then read ``model.state_dict()`` (or hand the
model to code that does)::

    FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig())
    state = model.state_dict()

From then on FSDP1's ``state_dict()`` is sharded; FSDP2's is sharded already
(``FSDP2-PORTS.md`` row 16, verl's own FSDP2 path), so the statement goes and the
model's state-dict calls after it stay as written. Only where that is certain: the
statement stands alone with no comment to lose and not alone in its block, the config
is absent or ``ShardedStateDictConfig()`` (and the optimizer's
``ShardedOptimStateDictConfig()``), and every ``state_dict()`` / ``load_state_dict()`` of
that name in the file comes after it in the same scope (elsewhere it would be rewritten
as a full state dict, FSDP1's default, where the type may hold).
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp115.plan import call_arguments, from_fsdp
from codemods.rules.fsdp401.lookups import line_of
from codemods.syntax.cst_nodes import dotted, find_all
from codemods.syntax.lazy_libcst import cst

#: What the form does otherwise than FSDP1, for the converted call's finding.
DIFFERENCE = (
    "its `FSDP.set_state_dict_type(model, SHARDED_STATE_DICT)` goes: FSDP2's "
    "`state_dict()` is sharded already, as DTensors where FSDP1 gave ShardedTensors, so "
    "files `torch.save`d from FSDP1's do not load as they are (torch.distributed."
    "checkpoint directories load by FQN)"
)

#: The model's calls whose layout the type sets.
STATE_DICT_CALLS = ("state_dict", "load_state_dict")
#: FSDP1's configs of the sharded type that say nothing but the default.
DEFAULTS = {
    "state_dict_config": ".ShardedStateDictConfig",
    "optim_state_dict_config": ".ShardedOptimStateDictConfig",
}


def sharded_line(engine: Engine, call: cst.Call) -> cst.SimpleStatementLine | None:
    """The statement of ``set_state_dict_type(model, SHARDED_STATE_DICT)``, where it may go."""
    args = call_arguments(call)
    expr = engine.parent(call)
    line = engine.parent(expr)
    if args is None or not isinstance(expr, cst.Expr):
        return None
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    module = dotted(args.get("module"))
    if module is None or not from_fsdp(
        engine, args.get("state_dict_type"), "StateDictType.SHARDED_STATE_DICT"
    ):
        return None
    for name, suffix in DEFAULTS.items():
        config = args.get(name)
        if config is None:
            continue
        if not (isinstance(config, cst.Call) and not config.args):
            return None
        if not from_fsdp(engine, config.func, suffix):
            return None
    block = engine.parent(line)
    siblings = list(getattr(block, "body", ()))
    if len(line.body) != 1 or len(siblings) < 2 or any(e.comment for e in line.leading_lines):
        return None
    if "#" in engine.module.code_for_node(line.with_changes(leading_lines=())):
        return None
    return line if _all_after(engine, call, module) else None


def _all_after(engine: Engine, call: cst.Call, module: str) -> bool:
    """Whether every state-dict call on ``module`` is after ``call``, in its scope."""
    scope, line = engine.scope(call), line_of(engine, call)
    for node in find_all(
        engine.module,
        lambda n: isinstance(n, cst.Attribute) and n.attr.value in STATE_DICT_CALLS,
    ):
        if dotted(node.value) == module and not (
            engine.scope(node) is scope and line_of(engine, node) > line
        ):
            return False
    return True


def after_set(engine: Engine, node: cst.CSTNode, sets: list[cst.Call]) -> bool:
    """Whether ``node`` (``model.state_dict``) follows a sharded set of its model (``sets``)."""
    if not isinstance(node, cst.Attribute) or node.attr.value not in STATE_DICT_CALLS:
        return False
    receiver = dotted(node.value)
    return any(
        dotted(call_arguments(call)["module"]) == receiver
        and engine.scope(call) is engine.scope(node)
        and line_of(engine, call) < line_of(engine, node)
        for call in sets
    )


def form(engine: Engine, call: cst.Call) -> str | None:
    """``"set-sharded"`` where the set's statement may go (:func:`sharded_line`)."""
    return None if sharded_line(engine, call) is None else "set-sharded"


def write(engine: Engine, call: cst.Call, updated: cst.Call, flag: str | None) -> cst.Call:
    """Remove the set's statement (``flag``: keep it for FSDP1 under ``if not flag:``)."""
    line = engine.parent(engine.parent(call))
    for value in call_arguments(call).values():  # the model stays; the rest goes
        for node in find_all(value, lambda n: isinstance(n, (cst.Name, cst.Attribute))):
            if flag is None and from_fsdp(engine, node, ""):
                engine.forget(node)
    if flag is None:
        engine.forget(call.func)
        engine.replace(line, cst.RemovalSentinel.REMOVE)
        return updated

    def fsdp1_only(updated: cst.SimpleStatementLine) -> cst.If:
        test = cst.UnaryOperation(operator=cst.Not(), expression=cst.Name(flag))
        body = cst.IndentedBlock(body=[updated.with_changes(leading_lines=())])
        return cst.If(test=test, body=body, leading_lines=updated.leading_lines)

    engine.replace(line, fsdp1_only)
    return updated
