"""FSDP115's plan on ``ast``: whether a block is rewritten, decided without libcst.

A lint run applies no plan, so ``block`` reports nothing there: ``ast_call`` reports
what ``call`` does, with whether a plan exists (:func:`ast_plan_for`) and whether it is
unproven. Each function here is the twin of the one of :mod:`codemods.rules.fsdp115.plan`
its docstring names, asking the ``ast`` detector.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Detector
from codemods.rules.fsdp115.plan import (
    DCP_LOAD_SINCE,
    DCP_STATE_DICT,
    DCP_STATE_DICT_SINCE,
    FSDP_PACKAGE,
    PARAMETERS,
)


def _ast_from_fsdp(detector: Detector, node: ast.AST, suffix: str) -> bool:
    return any(q.startswith(FSDP_PACKAGE) and q.endswith(suffix) for q in detector.qualified(node))


def _ast_arguments(call: ast.Call) -> dict[str, ast.expr] | None:
    """``plan.call_arguments`` on ``ast``."""
    from codemods.syntax.ast_nodes import arguments, keyword, plain_positional, star

    found: dict[str, ast.expr] = {}
    for index, arg in enumerate(arguments(call)):
        name = keyword(arg) if not plain_positional(arg) else None
        if star(arg) or (name is None and index >= len(PARAMETERS)):
            return None
        name = name or PARAMETERS[index]
        if name in found or name not in PARAMETERS:
            return None
        found[name] = arg.value if type(arg) is ast.keyword else arg  # type: ignore[assignment]
    return found


def _ast_config_values(detector: Detector, call: ast.expr) -> tuple[bool, bool] | None:
    """``plan._config_values`` on ``ast``."""
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
    """The config of ``plan._named_config`` on ``ast`` (its statement: fixing runs only)."""
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
    """``plan._body_statement`` on ``ast``: comments around the block are Undecided."""
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
    """``plan.names_free`` on ``ast``."""
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


def ast_plan_for(detector: Detector, call: ast.Call) -> tuple[str, str] | None:
    """``plan.plan_for`` on ``ast``: the plan's function and options, where it is certain."""
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
    """``plan._statement_plan`` on ``ast``."""
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
        if not plain_positional(own[0]) or not detector.target_at_least(DCP_LOAD_SINCE):
            return None
        options, function = "full_state_dict=True", "set_model_state_dict"
    else:
        return None
    if not _ast_names_free(detector, call, (function, "StateDictOptions")):
        return None
    return function, options
