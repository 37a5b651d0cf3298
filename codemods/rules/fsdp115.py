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

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.layout import indentation, wrapped_call
from codemods.syntax.cst_nodes import dotted, is_plain_positional, keyword, literal
from codemods.syntax.lazy_libcst import cst

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
        and not isinstance(scope, cst.metadata.GlobalScope)
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


def _unproven(function: str, options: str) -> bool:
    """Saving with ``cpu_offload``: equal by torch's code, not by a run (see the module)."""
    return function == "get_model_state_dict" and "cpu_offload" in options


# The ast half --------------------------------------------------------------------------
#
# A lint run applies no plan, so ``block`` reports nothing there: ``ast_call`` reports
# what ``call`` does, with whether a plan exists and whether it is unproven.


def _ast_from_fsdp(detector: Detector, node: ast.AST, suffix: str) -> bool:
    return any(q.startswith(_FSDP) and q.endswith(suffix) for q in detector.qualified(node))


def _ast_arguments(call: ast.Call) -> dict[str, ast.expr] | None:
    """:func:`_arguments` on ``ast``."""
    from codemods.syntax.ast_nodes import arguments, keyword, plain_positional, star

    found: dict[str, ast.expr] = {}
    for index, arg in enumerate(arguments(call)):
        name = keyword(arg) if not plain_positional(arg) else None
        if star(arg) or (name is None and index >= len(_PARAMETERS)):
            return None
        name = name or _PARAMETERS[index]
        if name in found or name not in _PARAMETERS:
            return None
        found[name] = arg.value if type(arg) is ast.keyword else arg  # type: ignore[assignment]
    return found


def _ast_config_values(detector: Detector, call: ast.expr) -> tuple[bool, bool] | None:
    """:func:`_config_values` on ``ast``."""
    from codemods.syntax.ast_nodes import arguments, keyword, literal, star, value

    if type(call) is not ast.Call or not _ast_from_fsdp(
        detector, call.func, ".FullStateDictConfig"
    ):
        return None
    values = {"offload_to_cpu": False, "rank0_only": False}
    for index, arg in enumerate(arguments(call)):
        name = keyword(arg) or (
            ("offload_to_cpu", "rank0_only")[index] if index < 2 and not star(arg) else None
        )
        found = literal(detector, value(arg))
        if name not in values or not isinstance(found, bool):
            return None
        values[name] = found
    return values["offload_to_cpu"], values["rank0_only"]


def _ast_undeleted(detector: Detector, name: str) -> None:
    from codemods.syntax.ast_nodes import Undecided

    if name in detector.names.deleted:  # `del name` binds to astscope, not to libcst
        raise Undecided(f"`{name}` is deleted somewhere")


def _ast_assignments(detector: Detector) -> dict[tuple[int, int], ast.Assign]:
    """The module's one-target assignments to a name, by the name's position."""
    found = detector.scratch.get("FSDP115:assigns")
    if found is None:
        found = {
            (node.targets[0].lineno, node.targets[0].col_offset): node
            for node in detector.nodes(ast.Assign)
            if type(node.targets[0]) is ast.Name
        }
        detector.scratch["FSDP115:assigns"] = found
    return found


def _ast_named_config(detector: Detector, name: ast.Name) -> ast.expr | None:
    """The config of :func:`_named_config` on ``ast`` (its statement: fixing runs only)."""
    scope = detector.scope(name)
    if scope is None:
        return None
    _ast_undeleted(detector, name.id)
    binder = detector.names.lookup(scope, name.id)
    if binder is None or binder.count.get(name.id) != 1 or name.id in binder.imports:
        return None
    assign = _ast_assignments(detector).get(binder.others[name.id][0])
    if assign is None or len(assign.targets) != 1:
        return None
    for use in detector.names.references(binder, name.id):
        parent = detector.parent(use)
        call = detector.parent(parent) if type(parent) in (ast.keyword, ast.Starred) else parent
        if type(call) is not ast.Call or call.func is use:  # type: ignore[union-attr]
            return None
        if not _ast_from_fsdp(detector, call.func, ".state_dict_type"):  # type: ignore[union-attr]
            return None
    return assign.value


def _ast_body_statement(detector: Detector, with_node: ast.With) -> ast.stmt | None:
    """:func:`_body_statement` on ``ast``: comments around the block are Undecided."""
    from codemods.syntax.ast_nodes import Undecided

    if len(with_node.body) != 1:
        return None
    statement = with_node.body[0]
    lines = detector.lines()
    indent = lines[statement.lineno - 1][: statement.col_offset]
    if indent.strip():
        return None  # a suite after the colon, or `a; b`
    if type(statement) not in (ast.Assign, ast.Expr):
        return None  # nothing else makes a plan (compound statements included)
    last = with_node.items[-1].context_expr
    header = [lines[last.end_lineno - 1][last.end_col_offset :]]  # type: ignore[index]
    header += lines[last.end_lineno : statement.lineno - 1]  # type: ignore[misc]
    if any(b"#" in line for line in header):
        # After the last item only `)`, `:` and comments can stand: a comment on the
        # header or above the statement, where libcst's block keeps no plan either.
        return None
    # Comment lines after the block indented as deep as its statement are its footer
    # (libcst); shallower ones belong to what follows. A mix is Undecided.
    deeper = set()
    for line in lines[statement.end_lineno :]:  # type: ignore[misc]
        text = line.lstrip()
        if text and not text.startswith(b"#"):
            break
        if text:
            deeper.add(len(line) - len(text) >= statement.col_offset)
    if len(deeper) > 1:
        raise Undecided("comments after a state_dict_type block, indented both ways")
    if True in deeper:
        return None
    return statement


def _ast_names_free(detector: Detector, node: ast.AST, names: tuple[str, ...]) -> bool:
    """:func:`_names_free` on ``ast``."""
    scope = detector.scope(node)
    if scope is None:
        return False
    for name in names:
        _ast_undeleted(detector, name)
        binder = detector.names.lookup(scope, name)
        if binder is None:
            continue
        if binder.others.get(name):
            return False
        for statement in binder.imports.get(name, ()):
            if type(statement) is not ast.ImportFrom or statement.module != DCP_STATE_DICT:
                return False
    return True


def _ast_plan(detector: Detector, call: ast.Call) -> tuple[str, str] | None:
    """:func:`plan_for` on ``ast``: the plan's function and options, where it is certain."""
    from codemods.syntax.ast_nodes import spelled

    if not _ast_from_fsdp(detector, call.func, ".state_dict_type"):
        return None
    item = detector.parent(call)
    if type(item) is not ast.withitem or item.optional_vars is not None:
        return None
    with_node = detector.parent(item)
    if type(with_node) is not ast.With or len(with_node.items) != 1:
        return None
    if not detector.target_at_least(DCP_STATE_DICT_SINCE):
        return None
    args = _ast_arguments(call)
    if args is None or "optim_state_dict_config" in args or "state_dict_type" not in args:
        return None
    module = args.get("module")
    if module is None or spelled(module) is None:
        return None
    if not _ast_from_fsdp(detector, args["state_dict_type"], "StateDictType.FULL_STATE_DICT"):
        return None
    config = args.get("state_dict_config")
    if type(config) is ast.Name:
        config = _ast_named_config(detector, config)
        if config is None:
            return None
    values = (False, False) if config is None else _ast_config_values(detector, config)
    return _ast_statement_plan(detector, call, with_node, module, values)


def _ast_statement_plan(
    detector: Detector,
    call: ast.Call,
    with_node: ast.With,
    module: ast.expr,
    values: tuple[bool, bool] | None,
) -> tuple[str, str] | None:
    """:func:`_statement_plan` on ``ast``."""
    from codemods.syntax.ast_nodes import plain_positional, spelled

    small = _ast_body_statement(detector, with_node)
    value = small.value if isinstance(small, (ast.Assign, ast.Expr)) else None
    if type(small) is ast.Assign and (
        len(small.targets) != 1 or type(small.targets[0]) is not ast.Name
    ):
        return None
    if type(value) is not ast.Call or type(value.func) is not ast.Attribute:
        return None
    same = spelled(value.func.value) is not None and spelled(value.func.value) == spelled(module)
    if not same or values not in ((False, False), (True, True)):
        return None
    method = value.func.attr
    own = [*value.args, *value.keywords]
    if method == "state_dict" and type(small) is ast.Assign and not own:
        options = "full_state_dict=True, cpu_offload=True" if values[0] else "full_state_dict=True"  # type: ignore[index]
        function = "get_model_state_dict"
    elif method == "load_state_dict" and len(own) == 1:
        if not plain_positional(own[0]):
            return None
        options, function = "full_state_dict=True", "set_model_state_dict"
    else:
        return None
    if not _ast_names_free(detector, call, (function, "StateDictOptions")):
        return None
    return function, options


class Fsdp115(Behaviour):
    """Report every ``state_dict_type`` / ``set_state_dict_type`` call; fix the certain blocks."""

    blocks = True

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        plan = plan_for(engine, original)
        unsafe = plan is not None and _unproven(plan.function, plan.options)
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

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        plan = _ast_plan(detector, call)
        unsafe = plan is not None and _unproven(*plan)
        detector.report(call, self.rule, fixable_here=plan is not None, unsafe_here=unsafe)

    def ast_block(self, detector: Detector, statements: list[ast.stmt]) -> None:
        """Nothing to report: :meth:`block` applies the plans a fixing run made in ``call``."""

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
            if isinstance(entry, _Plan):
                statement = _rewrite(entry, after, engine, indentation(engine, before))
            else:
                statement = after
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


def _rewrite(
    plan: _Plan, updated: cst.With, engine: Engine, indent: str
) -> cst.SimpleStatementLine:
    """The block's one statement, as the distributed-checkpoint call.

    Laid out as formatters do where one line would be long (:mod:`codemods.rules.layout`).
    """
    line = updated.body.body[0]
    small = line.body[0]
    call = small.value
    code = engine.module.code_for_node
    args = [code(call.func.value)]
    if plan.loaded is not None:
        args.append(code(call.args[0].value))
    args.append(f"options={plan.options}")
    taken = len(code(small.with_changes(value=cst.Name("_")))) - 1  # `state = `, `return `
    one = engine.module.default_indent
    text = wrapped_call(plan.function, args, one, indent, taken)
    new_call = cst.parse_expression(text, engine.module.config_for_parsing)
    return line.with_changes(
        body=[small.with_changes(value=new_call)], leading_lines=updated.leading_lines
    )


BEHAVIOUR = Fsdp115
