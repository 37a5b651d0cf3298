"""Whether, and as what, FSDP115's fix rewrites a ``state_dict_type`` block (libcst).

:func:`plan_for` gives the :class:`Plan` of a ``with FSDP.state_dict_type(...):`` block
where the rewrite is certain (the shapes :mod:`codemods.rules.fsdp115` describes), and
None elsewhere; :func:`unproven` says which plans are unsafe fixes.
"""

from __future__ import annotations

from codemods.records import Record
from codemods.rules.api import Engine
from codemods.syntax.cst_nodes import dotted, find_all, is_plain_positional, keyword, literal
from codemods.syntax.lazy_libcst import cst

#: Where ``torch.distributed.checkpoint.state_dict`` first exists.
DCP_STATE_DICT_SINCE = "2.2"
#: torch 2.2 and 2.3's ``set_model_state_dict`` refuses an FSDP1 model that has not run a
#: forward yet (which is when checkpoints are loaded): the load form needs 2.4.
DCP_LOAD_SINCE = "2.4"
DCP_STATE_DICT = "torch.distributed.checkpoint.state_dict"
#: The package of FSDP1's state-dict API.
FSDP_PACKAGE = "torch.distributed.fsdp"
#: ``state_dict_type``'s parameters, in order.
PARAMETERS = ("module", "state_dict_type", "state_dict_config", "optim_state_dict_config")


class Plan(Record):
    """One ``with`` block the fix replaces, and the config statement it drops.

    Attributes:
        with_node: The block.
        function: ``get_model_state_dict`` or ``set_model_state_dict``.
        options: The ``StateDictOptions(...)`` source.
        module: The original node of the model expression.
        loaded: The original node of the dict loaded, if loading.
        config_statement: ``name = FullStateDictConfig(...)``, where one is dropped.
        config_uses: How many ``state_dict_type`` calls pass that name.
        rest: Statements after the state-dict call (FSDP401's form), kept after it.
        optim_options: FSDP401's: the block's optimizer layout, where read.
    """

    _fields = (
        "with_node",
        "function",
        "options",
        "module",
        "loaded",
        "config_statement",
        "config_uses",
        "rest",
        "optim_options",
    )

    def __init__(
        self,
        with_node: cst.With,
        function: str,
        options: str,
        module: cst.BaseExpression,
        loaded: cst.BaseExpression | None,
    ) -> None:
        self.with_node, self.function, self.options = with_node, function, options
        self.module, self.loaded = module, loaded
        self.config_statement: cst.CSTNode | None = None
        self.config_uses = 0
        self.rest = 0
        self.optim_options: str | None = None


def from_fsdp(engine: Engine, node: cst.CSTNode, suffix: str) -> bool:
    """Whether ``node`` names something of FSDP1's package ending with ``suffix``."""
    return any(q.startswith(FSDP_PACKAGE) and q.endswith(suffix) for q in engine.qualified(node))


def call_arguments(call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """The call's arguments by parameter name, or None where that is not certain."""
    found: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        name = keyword(arg) if not is_plain_positional(arg) else None
        if arg.star or (name is None and index >= len(PARAMETERS)):
            return None
        name = name or PARAMETERS[index]
        if name in found or name not in PARAMETERS:
            return None
        found[name] = arg.value
    return found


def _config_values(
    engine: Engine, call: cst.BaseExpression, suffix: str = ".FullStateDictConfig"
) -> tuple[bool, bool] | None:
    """``(offload_to_cpu, rank0_only)`` of a ``FullStateDictConfig(...)`` with literals.

    ``suffix``: the config class (``FullOptimStateDictConfig`` has the same two fields,
    but offloads to the CPU by default).
    """
    if not isinstance(call, cst.Call) or not from_fsdp(engine, call.func, suffix):
        return None
    values = {"offload_to_cpu": suffix == OPTIM, "rank0_only": False}
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
        if not isinstance(call, cst.Call) or not from_fsdp(engine, call.func, ".state_dict_type"):
            return None
    statement = engine.parent(assign)
    drop = (
        assignments[0].scope is scope
        and not isinstance(scope, cst.metadata.GlobalScope)
        and isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
    )
    return assign.value, statement if drop else None, len(references)


def _same(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return dotted(a) is not None and dotted(a) == dotted(b)


def _body_statement(with_node: cst.With, rest: bool = False) -> cst.BaseSmallStatement | None:
    """The one simple statement of the block (``rest``: its first), with no comment to lose."""
    body = with_node.body
    if not isinstance(body, cst.IndentedBlock) or body.header.comment or not body.body:
        return None
    if len(body.body) != 1 and not rest:
        return None
    line = body.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if any(empty.comment for empty in line.leading_lines) or body.footer:
        return None
    return line.body[0]


def names_free(engine: Engine, node: cst.CSTNode, names: tuple[str, ...]) -> bool:
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


def plan_for(
    engine: Engine,
    call: cst.Call,
    *,
    rest: bool = False,
    any_release: bool = False,
    optim: bool = False,
) -> Plan | None:
    """The rewrite of the ``with`` block ``call`` opens, where it is certain.

    FSDP401's forms ask more: ``rest``, statements after the state-dict call that do not
    name the model (they follow it, out of the block); ``any_release``, the form on
    whatever release the file runs (an FSDP2 branch, torch 2.4 or later); ``optim``, a
    block with an optimizer config (literal, as the model's) whose other statements
    name the model only in ``FSDP.optim_state_dict(model, optim)`` calls.
    """
    if not from_fsdp(engine, call.func, ".state_dict_type"):
        return None
    item, with_node = engine.parent(call), None
    if isinstance(item, cst.WithItem) and item.asname is None:
        with_node = engine.parent(item)
    if not isinstance(with_node, cst.With) or len(with_node.items) != 1:
        return None
    if with_node.asynchronous is not None or not (
        any_release or engine.target_at_least(DCP_STATE_DICT_SINCE)
    ):
        return None
    args = call_arguments(call)
    if args is None or "state_dict_type" not in args:
        return None
    optim_options = None
    if optim:  # FSDP1's default optimizer config (a CPU copy on every rank) has no form
        config = args.get("optim_state_dict_config")
        values = None if config is None else _config_values(engine, config, OPTIM)
        optim_options = _OPTIONS.get(values)  # type: ignore[arg-type]
        if optim_options is None and config is not None:
            return None  # (none: the block's statements may not read the optimizer)
    elif "optim_state_dict_config" in args:
        return None
    module = args.get("module")
    if module is None or dotted(module) is None:
        return None
    if not from_fsdp(engine, args["state_dict_type"], "StateDictType.FULL_STATE_DICT"):
        return None
    config, statement, uses = args.get("state_dict_config"), None, 0
    if isinstance(config, cst.Name):
        named = _named_config(engine, config, with_node)
        if named is None:
            return None
        config, statement, uses = named
    values = (False, False) if config is None else _config_values(engine, config)
    reads = engine if optim_options else None
    plan = _statement_plan(engine, with_node, module, values, rest, any_release, reads)
    if plan is not None:
        plan.config_statement, plan.config_uses = statement, uses
        plan.optim_options = optim_options
    return plan


#: FSDP1's optimizer config of a full block, and its read of the optimizer state.
OPTIM, OPTIM_READ = ".FullOptimStateDictConfig", ".optim_state_dict"
#: The ``StateDictOptions`` of each config's ``(offload_to_cpu, rank0_only)`` that has one.
_OPTIONS = {
    (False, False): "StateDictOptions(full_state_dict=True)",
    (True, True): "StateDictOptions(full_state_dict=True, cpu_offload=True)",
}


def optim_read(engine: Engine, node: cst.CSTNode, module: cst.BaseExpression) -> bool:
    """Whether ``node`` is ``module`` as the first of ``FSDP.optim_state_dict``'s two arguments."""
    arg = engine.parent(node)
    call = engine.parent(arg) if isinstance(arg, cst.Arg) else None
    return (
        isinstance(call, cst.Call)
        and len(call.args) == 2
        and call.args[0] is arg
        and all(is_plain_positional(a) or keyword(a) == "optim" for a in call.args[1:])
        and is_plain_positional(arg)
        and from_fsdp(engine, call.func, OPTIM_READ)
        and _same(node, module)
    )


def _statement_plan(
    engine: Engine,
    with_node: cst.With,
    module: cst.BaseExpression,
    values: tuple[bool, bool] | None,
    rest: bool = False,
    any_release: bool = False,
    reads: Engine | None = None,
) -> Plan | None:
    """The plan for the block's one (or first) statement, given the config's values.

    ``reads``: the engine, where the other statements may read the optimizer's state.
    """
    small = _body_statement(with_node, rest)
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
        if not is_plain_positional(value.args[0]) or not (
            any_release or engine.target_at_least(DCP_LOAD_SINCE)
        ):
            return None
        options, function, loaded = "full_state_dict=True", "set_model_state_dict", value.args[0]
    else:
        return None
    if not names_free(engine, with_node, (function, "StateDictOptions")):
        return None
    after = with_node.body.body[1:]
    for line in after:
        for node in find_all(line, lambda n: _same(n, module)):
            if reads is None or not optim_read(reads, node, module):
                return None  # the model again: its state dict in FSDP1's layout of the block
    plan = Plan(with_node, function, f"StateDictOptions({options})", module, loaded)
    plan.rest = len(after)
    return plan


def unproven(function: str, options: str) -> bool:
    """Saving with ``cpu_offload``: equal by torch's code, not by a run (see the module)."""
    return function == "get_model_state_dict" and "cpu_offload" in options
