"""FSDP115: ``FSDP.state_dict_type(...)`` blocks as distributed-checkpoint calls.

The fix rewrites one shape, where the result is certain::

    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
        state = model.state_dict()          # or: model.load_state_dict(state)

into ``state = get_model_state_dict(model, options=StateDictOptions(...))`` (or
``set_model_state_dict(model, state, options=...)``). ``config`` is absent, a
``FullStateDictConfig(...)`` with literal ``offload_to_cpu`` / ``rank0_only``, or a
name bound to one by an earlier statement of the same block and used nowhere else
(that statement goes too, outside module level). What each config becomes was checked
on two gloo ranks (``tests/test_state_dict_fix_runs.py``):

- saving with ``offload_to_cpu=False, rank0_only=False`` (the default) is
  ``full_state_dict=True``: equal dicts on every rank, a safe fix;
- saving with ``offload_to_cpu=True, rank0_only=True`` is ``full_state_dict=True,
  cpu_offload=True`` by torch's own code (``_verify_options`` builds exactly that
  config), but FSDP1 cannot run either form on CPU, so no run here proves it: the fix
  is unsafe (``--unsafe-fixes``);
- loading with either of those configs is ``full_state_dict=True``: the model ends equal.

Everything else (sharded types, the mixed configs, ``set_state_dict_type``, an
optimizer state dict in the block, more statements in the block) is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import GlobalScope

from codemods.kinds.base import Behaviour, Engine
from codemods.syntax import dotted, is_plain_positional, keyword, literal

#: Where ``torch.distributed.checkpoint.state_dict`` first exists.
DCP_STATE_DICT_SINCE = "2.2"
DCP_STATE_DICT = "torch.distributed.checkpoint.state_dict"
_FSDP = "torch.distributed.fsdp"
_PARAMETERS = ("module", "state_dict_type", "state_dict_config", "optim_state_dict_config")


@dataclass
class _Plan:
    """One ``with`` block the fix replaces, and the config statement it drops."""

    with_node: cst.With
    function: str  # get_model_state_dict / set_model_state_dict
    options: str  # the StateDictOptions(...) source
    module: cst.BaseExpression  # original node of the model expression
    loaded: cst.BaseExpression | None  # original node of the dict loaded, if loading
    config_statement: cst.CSTNode | None = None  # `name = FullStateDictConfig(...)`
    config_uses: int = 0  # how many state_dict_type calls pass that name


def _from_fsdp(engine: Engine, node: cst.CSTNode, suffix: str) -> bool:
    return any(q.startswith(_FSDP) and q.endswith(suffix) for q in engine.qualified(node))


def _arguments(call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """The call's arguments by parameter name, or None where that is not certain."""
    found: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        name = keyword(arg) if not is_plain_positional(arg) else None
        if arg.star or (name is None and index >= len(_PARAMETERS)):
            return None
        name = name or _PARAMETERS[index]
        if name in found or name not in _PARAMETERS:
            return None
        found[name] = arg.value
    return found


def _config_values(engine: Engine, call: cst.BaseExpression) -> tuple[bool, bool] | None:
    """``(offload_to_cpu, rank0_only)`` of a ``FullStateDictConfig(...)`` with literals."""
    if not isinstance(call, cst.Call) or not _from_fsdp(engine, call.func, ".FullStateDictConfig"):
        return None
    values = {"offload_to_cpu": False, "rank0_only": False}
    for index, arg in enumerate(call.args):
        name = keyword(arg) or (
            ("offload_to_cpu", "rank0_only")[index] if index < 2 and not arg.star else None
        )
        value = literal(arg.value)
        if name not in values or not isinstance(value, bool):
            return None
        values[name] = value
    return values["offload_to_cpu"], values["rank0_only"]


def _named_config(engine: Engine, name: cst.Name, with_node: cst.With):
    """The config ``name`` is bound to, and the statement to drop with the block (or None).

    Certain where the name has one binding, ``name = FullStateDictConfig(...)``, and every
    use passes it to ``state_dict_type`` (nothing changes it). Its statement goes where
    every block that uses it is rewritten, in the same function; at module level it
    stays (other modules may import it). Returns the config, the statement and its
    number of uses.
    """
    scope = engine.scope(name)
    if scope is None or name.value not in scope:
        return None
    assignments = list(scope[name.value])
    if len(assignments) != 1 or not isinstance(assignments[0].node, cst.Name):
        return None
    target = engine.parent(assignments[0].node)
    assign = engine.parent(target) if isinstance(target, cst.AssignTarget) else None
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    references = list(assignments[0].references)
    for reference in references:
        arg = engine.parent(reference.node)
        call = engine.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or not _from_fsdp(engine, call.func, ".state_dict_type"):
            return None
    statement = engine.parent(assign)
    drop = (
        assignments[0].scope is scope
        and not isinstance(scope, GlobalScope)
        and isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
    )
    return assign.value, statement if drop else None, len(references)


def _same(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return dotted(a) is not None and dotted(a) == dotted(b)


def _body_statement(with_node: cst.With) -> cst.BaseSmallStatement | None:
    """The one simple statement of the block, where it has no comment to lose."""
    body = with_node.body
    if not isinstance(body, cst.IndentedBlock) or len(body.body) != 1 or body.header.comment:
        return None
    line = body.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if any(empty.comment for empty in line.leading_lines) or body.footer:
        return None
    return line.body[0]


def _names_free(engine: Engine, node: cst.CSTNode, names: tuple[str, ...]) -> bool:
    """Whether ``names`` are unbound at ``node`` or bound only by imports from DCP."""
    scope = engine.scope(node)
    if scope is None:
        return False
    for name in names:
        for assignment in scope[name] if name in scope else ():
            statement = getattr(assignment, "node", None)
            if not (
                isinstance(statement, cst.ImportFrom) and dotted(statement.module) == DCP_STATE_DICT
            ):
                return False
    return True


def plan_for(engine: Engine, call: cst.Call) -> _Plan | None:
    """The rewrite of the ``with`` block ``call`` opens, where it is certain."""
    if not _from_fsdp(engine, call.func, ".state_dict_type"):
        return None
    item, with_node = engine.parent(call), None
    if isinstance(item, cst.WithItem) and item.asname is None:
        with_node = engine.parent(item)
    if not isinstance(with_node, cst.With) or len(with_node.items) != 1:
        return None
    if with_node.asynchronous is not None or not engine.target_at_least(DCP_STATE_DICT_SINCE):
        return None
    args = _arguments(call)
    if args is None or "optim_state_dict_config" in args or "state_dict_type" not in args:
        return None
    module = args.get("module")
    if module is None or dotted(module) is None:
        return None
    if not _from_fsdp(engine, args["state_dict_type"], "StateDictType.FULL_STATE_DICT"):
        return None
    config, statement, uses = args.get("state_dict_config"), None, 0
    if isinstance(config, cst.Name):
        named = _named_config(engine, config, with_node)
        if named is None:
            return None
        config, statement, uses = named
    values = (False, False) if config is None else _config_values(engine, config)
    plan = _statement_plan(engine, with_node, module, values)
    if plan is not None:
        plan.config_statement, plan.config_uses = statement, uses
    return plan


def _statement_plan(
    engine: Engine,
    with_node: cst.With,
    module: cst.BaseExpression,
    values: tuple[bool, bool] | None,
) -> _Plan | None:
    """The plan for the block's one statement, given the config's values."""
    small = _body_statement(with_node)
    value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
    if isinstance(small, cst.Assign) and (
        len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name)
    ):
        return None
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return None
    if not _same(value.func.value, module) or values not in ((False, False), (True, True)):
        return None
    method = value.func.attr.value
    if method == "state_dict" and isinstance(small, cst.Assign) and not value.args:
        options = "full_state_dict=True, cpu_offload=True" if values[0] else "full_state_dict=True"
        function, loaded = "get_model_state_dict", None
    elif method == "load_state_dict" and len(value.args) == 1:
        if not is_plain_positional(value.args[0]):
            return None
        options, function, loaded = "full_state_dict=True", "set_model_state_dict", value.args[0]
    else:
        return None
    if not _names_free(engine, with_node, (function, "StateDictOptions")):
        return None
    return _Plan(with_node, function, f"StateDictOptions({options})", module, loaded)


def _unproven(plan: _Plan) -> bool:
    """Saving with ``cpu_offload``: equal by torch's code, not by a run (see the module)."""
    return plan.function == "get_model_state_dict" and "cpu_offload" in plan.options


class Fsdp115(Behaviour):
    """Report every ``state_dict_type`` / ``set_state_dict_type`` call; fix the certain blocks."""

    blocks = True

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        plan = plan_for(engine, original)
        unsafe = plan is not None and _unproven(plan)
        applies = engine.report(
            original, self.rule, fixable_here=plan is not None, unsafe_here=unsafe
        )
        if applies and plan is not None:
            plans = engine.scratch.setdefault(self.rule.code, {})
            plans[id(plan.with_node)] = plan
            if plan.config_statement is not None:
                # Dropped once every block that uses it is rewritten (see block).
                left = plans.get(id(plan.config_statement), plan.config_uses)
                plans[id(plan.config_statement)] = left - 1
                engine.forget(plan.config_statement.body[0].value.func)
            else:
                config = _arguments(original).get("state_dict_config")
                if isinstance(config, cst.Call):
                    engine.forget(config.func)
            engine.forget(original.func)
            engine.forget(_arguments(original)["state_dict_type"])
            engine.need_import(DCP_STATE_DICT, plan.function)
            engine.need_import(DCP_STATE_DICT, "StateDictOptions")
        return updated

    def block(
        self,
        engine: Engine,
        original: Sequence[cst.BaseStatement],
        updated: Sequence[cst.BaseStatement],
    ) -> Sequence[cst.BaseStatement]:
        plans = engine.scratch.get(self.rule.code)
        if not plans or len(original) != len(updated):
            return updated
        if not any(id(statement) in plans for statement in original):
            return updated
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []  # the lines above a dropped statement
        for before, after in zip(original, updated):
            entry = plans.get(id(before))
            if entry == 0 and not isinstance(entry, _Plan):  # a config whose uses are gone
                carried.extend(after.leading_lines)
                continue
            statement = _rewrite(entry, after) if isinstance(entry, _Plan) else after
            if carried:
                lines = _merged([*carried, *statement.leading_lines])
                statement = statement.with_changes(leading_lines=lines)
                carried = []
            out.append(statement)
        return out


def _merged(lines: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """``lines`` with their comments, and no two blank lines in a row."""
    kept: list[cst.EmptyLine] = []
    for line in lines:
        if line.comment is None and kept and kept[-1].comment is None:
            continue
        kept.append(line)
    return kept


def _rewrite(plan: _Plan, updated: cst.With) -> cst.SimpleStatementLine:
    """The block's one statement, as the distributed-checkpoint call."""
    line = updated.body.body[0]
    small = line.body[0]
    call = small.value
    module = call.func.value
    args = [cst.Arg(module, comma=_COMMA)]
    if plan.loaded is not None:
        args.append(call.args[0].with_changes(comma=_COMMA))
    options = cst.parse_expression(plan.options)
    args.append(cst.Arg(options, keyword=cst.Name("options"), equal=_EQUAL))
    new_call = cst.Call(cst.Name(plan.function), args=args)
    return line.with_changes(
        body=[small.with_changes(value=new_call)], leading_lines=updated.leading_lines
    )


_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
_EQUAL = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)

BEHAVIOUR = Fsdp115
