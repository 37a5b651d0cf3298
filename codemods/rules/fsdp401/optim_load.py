"""FSDP1's optimizer-state load (conversion, then the optimizer's own load) as FSDP2's, for FSDP401.

``state = FSDP.optim_state_dict_to_load(model, optim, state)`` directly followed by
``optim.load_state_dict(state)`` (torchtune's recipes) turns a full, FQN-keyed optimizer
state into FSDP1's flat shards, then loads them. FSDP2's form does both in one call:
``set_optimizer_state_dict(model, optim, state, options=StateDictOptions(full_state_dict=True))``
(``FSDP2-PORTS.md`` row 18). The pair is replaced only where the converted state is read
by nothing but that load: the new call returns nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import in_loop, line_of
from codemods.rules.layout import indentation, wrapped_call
from codemods.syntax.cst_nodes import dotted, keyword
from codemods.syntax.lazy_libcst import cst

if TYPE_CHECKING:  # (libcst loads lazily: nothing of it at import)
    #: The conversion's line and the optimizer's load after it.
    Pair = tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]

#: FSDP1's parameters of the conversion, in order (the rest keep the call FSDP1).
PARAMETERS = ("model", "optim", "optim_state_dict")

#: What the FSDP2 form does otherwise than FSDP1's pair, for the converted call's finding.
DIFFERENCE = (
    "`FSDP.optim_state_dict_to_load(model, optim, state)` and the optimizer's "
    "`load_state_dict` of its result become `set_optimizer_state_dict(model, optim, state, "
    "options=StateDictOptions(full_state_dict=True))`: every rank still passes the full "
    "FQN-keyed state (no rank-0-only load: `broadcast_from_rank0=True` would be one), "
    "each rank keeps its DTensor shard of each state where FSDP1 kept its flat shard, the "
    "optimizer keeps the `step` tensors of the dict passed (later steps count up in it too; "
    "FSDP1's conversion copied them), an optimizer with no state yet first takes one step "
    "at lr 0 on zero gradients, and a state saved from FSDP1 with flat parameters "
    "(`use_orig_params=False`) loads only where its `param_groups` match the optimizer's "
    "(per-parameter on FSDP2)"
)


def load_pair(engine: Engine, call: cst.Call) -> Pair | None:
    """The conversion's line and the optimizer's load that follows it; None: not that shape."""
    values = arguments(call)
    assign = engine.parent(call)
    line = engine.parent(assign)
    if values is None or not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not isinstance(target, cst.Name) or not isinstance(line, cst.SimpleStatementLine):
        return None
    block = engine.parent(line)
    body = list(getattr(block, "body", ()))
    if len(line.body) != 1 or line not in body or body.index(line) + 1 >= len(body):
        return None
    load = body[body.index(line) + 1]
    if not _loads(load, dotted(values[1]), target.value) or _comments(engine, line, load):
        return None
    return (line, load) if _read_only_by(engine, target, load) else None


def arguments(call: cst.Call) -> list[cst.BaseExpression] | None:
    """The model, the optimizer and the state, passed by position or by their names."""
    if len(call.args) != len(PARAMETERS) or any(arg.star for arg in call.args):
        return None
    named = {keyword(arg): arg.value for arg in call.args if keyword(arg) is not None}
    positional = [arg.value for arg in call.args if keyword(arg) is None]
    if set(named) - set(PARAMETERS[len(positional) :]):
        return None
    values = positional + [named.get(name) for name in PARAMETERS[len(positional) :]]
    return None if any(v is None for v in values) else values


def _loads(line: cst.CSTNode, optim: str | None, name: str) -> bool:
    """Whether ``line`` is ``optim.load_state_dict(name)`` alone."""
    if optim is None or not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return False
    expr = line.body[0]
    call = expr.value if isinstance(expr, cst.Expr) else None
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "load_state_dict"
        and dotted(call.func.value) == optim
        and len(call.args) == 1
        and keyword(call.args[0]) is None
        and not call.args[0].star
        and isinstance(call.args[0].value, cst.Name)
        and call.args[0].value.value == name
    )


def _comments(engine: Engine, line: cst.SimpleStatementLine, load: cst.SimpleStatementLine) -> bool:
    """Whether a comment would be lost: on the load's lines, or inside the conversion."""
    return any(lead.comment for lead in load.leading_lines) or any(
        "#" in engine.module.code_for_node(node.with_changes(leading_lines=()))
        for node in (line, load)
    )


def _read_only_by(engine: Engine, target: cst.Name, load: cst.SimpleStatementLine) -> bool:
    """Whether the converted state is read by the load alone.

    Reads on earlier lines are of the state before the conversion, unless a loop brings
    the conversion round before them (scope analysis goes by order, not by loops).
    """
    scope = engine.scope(target)
    if scope is None or target.value not in scope or in_loop(engine, target):
        return False
    mine = [a for a in scope[target.value] if a.node is target]
    if len(mine) != 1:
        return False
    argument = load.body[0].value.args[0].value
    others = [r.node for r in mine[0].references if r.node is not argument]
    return all(line_of(engine, node) < line_of(engine, target) for node in others)


def fsdp2_call(engine: Engine, importer: Any, args: list[str], indent: str) -> cst.Call:
    """``set_optimizer_state_dict(args..., options=...)`` for a line indented by ``indent``.

    ``importer`` gets its imports; the call goes on more lines where long, as formatters do.
    """
    from codemods.rules.fsdp115.plan import DCP_STATE_DICT

    importer.need_import(DCP_STATE_DICT, "set_optimizer_state_dict")
    importer.need_import(DCP_STATE_DICT, "StateDictOptions")
    options = "options=StateDictOptions(full_state_dict=True)"
    one = engine.module.default_indent
    text = wrapped_call("set_optimizer_state_dict", [*args, options], one, indent)
    return cst.parse_expression(text, engine.module.config_for_parsing)


def write(engine: Engine, pair: Pair, args: list[str]) -> cst.Call:
    """Put FSDP2's load in the pair's place; returns the new call (``args``: the old call's)."""
    line, load = pair
    new = fsdp2_call(engine, engine, args, indentation(engine, line))
    engine.replace(line, lambda updated: updated.with_changes(body=[cst.Expr(new)]))
    engine.replace(load, cst.RemovalSentinel.REMOVE)
    return new


def write_dual(engine: Engine, importer: Any, flag: str, pair: Pair, args: list[str]) -> None:
    """``if flag:`` FSDP2's load ``else:`` the pair as written, in the pair's place."""
    line, load = pair
    indent = indentation(engine, line) + engine.module.default_indent  # in the `if`
    new = cst.SimpleStatementLine(body=[cst.Expr(fsdp2_call(engine, importer, args, indent))])

    def both(updated: cst.SimpleStatementLine) -> cst.If:
        fsdp1 = [updated.with_changes(leading_lines=()), load]
        return cst.If(
            test=cst.Name(flag),
            body=cst.IndentedBlock(body=[new]),
            orelse=cst.Else(body=cst.IndentedBlock(body=fsdp1)),
            leading_lines=updated.leading_lines,
        )

    engine.replace(line, both)
    engine.replace(load, cst.RemovalSentinel.REMOVE)
