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
  config), but FSDP1 cannot run either form on CPU, and under ``NO_SHARD`` (its
  fallback on one GPU) FSDP1 leaves the parameters on the GPU where the rewrite puts
  them on the CPU (same values; seen on one H200): the fix is unsafe
  (``--unsafe-fixes``);
- loading with either of those configs is ``full_state_dict=True``: the model ends equal.

FSDP1's ``rank0_only`` means rank 0 of the model's process group; ``cpu_offload=True``
gathers on the global rank 0 alone (torch's ``_gather_state_dict``). In a file that
shards a model on a group of its own (``process_group=`` or ``device_mesh=`` to the
wrapper, or hybrid sharding), each other group's rank 0 would save an empty dict: there
the save is reported, its fix withheld with that reason.

Everything else (sharded types, the mixed configs, ``set_state_dict_type``, an
optimizer state dict in the block, more statements in the block) is reported.

The decision is :mod:`codemods.rules.fsdp115.plan` (libcst) and
:mod:`codemods.rules.fsdp115.ast_plan` (its ``ast`` twin, for lint); this module holds
the hooks and writes the new statement.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from codemods.registry.names import COMPAT_FSDP_CLASSES, TORCH_FSDP_CLASSES
from codemods.rules.api import Behaviour, Detector, Engine
from codemods.rules.fsdp115.ast_plan import ast_plan_for
from codemods.rules.fsdp115.plan import DCP_STATE_DICT, Plan, call_arguments, plan_for, unproven
from codemods.rules.layout import indentation, wrapped_call
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst


class Fsdp115(Behaviour):
    """Report every ``state_dict_type`` / ``set_state_dict_type`` call; fix the certain blocks."""

    blocks = True

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        plan = plan_for(engine, original)
        unsafe = plan is not None and unproven(plan.function, plan.options)
        # Said in the finding's text: the advice does not fit such a block on any release.
        detail = YIELDS if plan is None and _cst_yields(engine, original) else None
        why_not = None
        if unsafe:
            line = _cst_subgroup_line(engine)
            if line is not None:
                plan, why_not = None, SUBGROUP.format(line=line)
        applies = engine.report(
            original,
            self.rule,
            fixable_here=plan is not None,
            unsafe_here=unsafe and plan is not None,
            why_not=why_not,
            detail=detail,
        )
        if applies and plan is not None:
            adopt(engine, plan, original)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        plan = ast_plan_for(detector, call)
        unsafe = plan is not None and unproven(*plan)
        detail = YIELDS if plan is None and _ast_yields(detector, call) else None
        why_not = None
        if unsafe:
            line = _ast_subgroup_line(detector)
            if line is not None:
                plan, why_not = None, SUBGROUP.format(line=line)
        detector.report(
            call,
            self.rule,
            fixable_here=plan is not None,
            unsafe_here=unsafe and plan is not None,
            why_not=why_not,
            detail=detail,
        )

    def ast_block(self, detector: Detector, statements: list[ast.stmt]) -> None:
        """Nothing to report: :meth:`block` applies the plans a fixing run made in ``call``."""

    def block(
        self,
        engine: Engine,
        original: Sequence[cst.BaseStatement],
        updated: Sequence[cst.BaseStatement],
    ) -> Sequence[cst.BaseStatement]:
        plans = engine.scratch.get(self.rule.code)
        if not plans or not any(id(statement) in plans for statement in original):
            return updated
        pairs = _aligned(engine, original, updated)
        if pairs is None:
            return updated
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []  # the lines above a dropped statement
        for before, inserted, after in pairs:
            out += inserted
            entry = plans.get(id(before))
            if entry == 0 and not isinstance(entry, Plan):  # a config whose uses are gone
                carried.extend(after.leading_lines)
                continue
            rest: list[cst.BaseStatement] = []
            if isinstance(entry, Plan):
                statement = _rewrite(entry, after, engine, indentation(engine, before))
                rest = list(after.body.body[1:])  # FSDP401's: the block's other statements
            elif callable(entry):  # a block whose statements take its place (adopt_block)
                statement, *rest = entry(after)
            else:
                statement = after
            if carried:
                lines = _merged([*carried, *statement.leading_lines])
                statement = statement.with_changes(leading_lines=lines)
                carried = []
            out += [statement, *rest]
        return out


SUBGROUP = (
    "the model is sharded on a group of its own (line {line}): FSDP1's `rank0_only` gave "
    "each group's rank 0 the full dict, `cpu_offload=True` gives it to the global rank 0 "
    "alone, and every other group's rank 0 an empty dict"
)
YIELDS = (
    "the block yields: the state dicts are taken by the code that resumes it (the caller "
    "of a context manager), which this block does not show; that code is what moves to "
    "`get_model_state_dict` / `set_model_state_dict`"
)


def _cst_yields(engine: Engine, call: cst.Call) -> bool:
    """Whether ``call`` opens a ``with`` block whose only statement is a bare ``yield``.

    What the block sets the state-dict type for then runs in its caller (a block that
    takes a state dict itself, or yields one, is not this shape).
    """
    item = engine.parent(call)
    block = engine.parent(item) if isinstance(item, cst.WithItem) else None
    if not isinstance(block, cst.With):
        return False
    body = block.body
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    smalls = [
        small
        for line in lines
        for small in (
            line.body if isinstance(line, (cst.BaseSuite, cst.SimpleStatementLine)) else [line]
        )
    ]
    return len(smalls) == 1 and _bare_yield(smalls[0])


def _bare_yield(small: object) -> bool:
    return (
        isinstance(small, cst.Expr) and isinstance(small.value, cst.Yield) and not small.value.value
    )


def _ast_yields(detector: Detector, call: ast.Call) -> bool:
    """:func:`_cst_yields` on ``ast``."""
    item = detector.parent(call)
    block = detector.parent(item) if type(item) is ast.withitem else None
    if type(block) is not ast.With or len(block.body) != 1:  # type: ignore[attr-defined]
        return False
    (statement,) = block.body  # type: ignore[attr-defined]
    return (
        type(statement) is ast.Expr
        and type(statement.value) is ast.Yield
        and statement.value.value is None
    )


#: FSDP1's wrapper keywords that shard on a group other than every rank.
_GROUP_KEYWORDS = frozenset({"process_group", "device_mesh"})
_HYBRID = frozenset({"HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"})
_WRAPPERS = frozenset({*TORCH_FSDP_CLASSES, *COMPAT_FSDP_CLASSES})


def _cst_subgroup_line(engine: Engine) -> int | None:
    """The first line where the file shards on a group of its own (libcst), or None."""
    if "FSDP115:subgroup" not in engine.scratch:  # once a file, not once a block
        engine.scratch["FSDP115:subgroup"] = _cst_subgroup_lines(engine)
    return engine.scratch["FSDP115:subgroup"]


def _cst_subgroup_lines(engine: Engine) -> int | None:
    lines = [
        engine.position(call).start.line
        for call in engine.nodes(cst.Call)
        if any(keyword(arg) in _GROUP_KEYWORDS for arg in call.args)
        and engine.qualified(call.func) & _WRAPPERS
    ]
    lines += [
        engine.position(node).start.line
        for node in engine.nodes(cst.Attribute)
        if node.attr.value in _HYBRID
    ]
    return min(lines, default=None)


def _ast_subgroup_line(detector: Detector) -> int | None:
    """:func:`_cst_subgroup_line` on ``ast``."""
    if "FSDP115:subgroup" not in detector.scratch:
        detector.scratch["FSDP115:subgroup"] = _ast_subgroup_lines(detector)
    return detector.scratch["FSDP115:subgroup"]


def _ast_subgroup_lines(detector: Detector) -> int | None:
    lines = [
        call.lineno
        for call in detector.nodes(ast.Call)
        if any(k.arg in _GROUP_KEYWORDS for k in call.keywords)  # type: ignore[attr-defined]
        and detector.qualified(call.func) & _WRAPPERS  # type: ignore[attr-defined]
    ]
    lines += [n.lineno for n in detector.nodes(ast.Attribute) if n.attr in _HYBRID]  # type: ignore[attr-defined]
    return min(lines, default=None)


def _aligned(
    engine: Engine, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
) -> list[tuple[cst.BaseStatement, list[cst.BaseStatement], cst.BaseStatement]] | None:
    """Each original statement, the statements another rule put before it, and its update.

    None where the two do not line up (a rewrite that left more or fewer statements).
    """
    pairs = []
    index = 0
    for before in original:
        extra = engine.inserted.get(id(before), 0)
        if index + extra >= len(updated):
            return None
        pairs.append((before, list(updated[index : index + extra]), updated[index + extra]))
        index += extra + 1
    return pairs if index == len(updated) else None


def adopt(engine: Engine, plan: Plan, original: cst.Call) -> None:
    """Have :meth:`Fsdp115.block` rewrite ``plan``'s block, which ``original`` opens.

    Once per block, whichever rule asks first: FSDP115 on an FSDP1 model, or FSDP401 for
    the checkpoint code of a model it converts (the same form serves both).
    """
    plans = engine.scratch.setdefault("FSDP115", {})
    if id(plan.with_node) in plans:
        return
    plans[id(plan.with_node)] = plan
    if plan.config_statement is not None:
        # Dropped once every block that uses it is rewritten (see block).
        left = plans.get(id(plan.config_statement), plan.config_uses)
        plans[id(plan.config_statement)] = left - 1
        engine.forget(plan.config_statement.body[0].value.func)
    else:
        config = call_arguments(original).get("state_dict_config")
        if isinstance(config, cst.Call):
            engine.forget(config.func)
    optim = call_arguments(original).get("optim_state_dict_config")  # FSDP401's, literal
    if isinstance(optim, cst.Call):
        engine.forget(optim.func)
    engine.forget(original.func)
    engine.forget(call_arguments(original)["state_dict_type"])
    engine.need_import(DCP_STATE_DICT, plan.function)
    engine.need_import(DCP_STATE_DICT, "StateDictOptions")


def adopt_block(engine: Engine, with_node: cst.With) -> None:
    """Have :meth:`Fsdp115.block` put ``with_node``'s statements in its place.

    For FSDP401's ``SHARDED_STATE_DICT`` blocks on FSDP2 models (sharded already): done
    here, where the block's statements are rewritten, so that both rewrites see each
    statement once.
    """

    def unwrap(updated: cst.With) -> list[cst.BaseStatement]:
        first, *rest = updated.body.body
        leading = [*updated.leading_lines, *first.leading_lines]
        return [first.with_changes(leading_lines=leading), *rest]

    engine.scratch.setdefault("FSDP115", {})[id(with_node)] = unwrap


def _merged(lines: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """``lines`` with their comments, and no two blank lines in a row."""
    kept: list[cst.EmptyLine] = []
    for line in lines:
        if line.comment is None and kept and kept[-1].comment is None:
            continue
        kept.append(line)
    return kept


def _rewrite(plan: Plan, updated: cst.With, engine: Engine, indent: str) -> cst.SimpleStatementLine:
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


#: The block's state-dict statement as DCP's (FSDP401's dual stack writes it in a branch).
rewritten_statement = _rewrite

BEHAVIOUR = Fsdp115
