"""FSDP1's optimizer state read in a ``FULL_STATE_DICT`` block, as FSDP2's, for FSDP401.

torchtune's recipes save so::

    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True),
                              FullOptimStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        state = model.state_dict()
        optim_state = FSDP.optim_state_dict(model, optim)

The block's model state dict becomes FSDP115's ``get_model_state_dict`` form, and the
optimizer's read ``get_optimizer_state_dict(model, optim, options=...)`` with the
options of the block's optimizer config (``FSDP2-PORTS.md`` row 18; torchtune's own
port, ``38bf42775``): ``offload_to_cpu=True, rank0_only=True`` is ``full_state_dict=True,
cpu_offload=True``, ``offload_to_cpu=False, rank0_only=False`` is ``full_state_dict=True``;
the mixed ones have no form, nor has a block without an optimizer config (FSDP1's
default, ``FullOptimStateDictConfig()``, offloads to the CPU on every rank). Both stacks
key the state by FQN; on torch 2.13 (2 gloo ranks) ranks other than 0 get ``{}`` from
both, as FSDP1's ``rank0_only`` gave them.
"""

from __future__ import annotations

from typing import Any

from codemods.rules.api import Engine
from codemods.rules.fsdp115.plan import Plan, plan_for
from codemods.rules.fsdp401.dual import needs_dual
from codemods.rules.layout import indentation, wrapped_call
from codemods.syntax.lazy_libcst import cst

#: What the form does otherwise than FSDP1's read, for the converted call's finding.
DIFFERENCE = (
    "`FSDP.optim_state_dict(model, optim)` in its `FULL_STATE_DICT` block becomes "
    "`get_optimizer_state_dict(model, optim, options=...)` with the block's optimizer "
    "config as options (`offload_to_cpu=True, rank0_only=True`: `cpu_offload=True`, the "
    "full state on the global rank 0's CPU and `{}` on other ranks, as FSDP1 gave for a "
    "model sharded on every rank; on a subgroup it gave each group's rank 0): keyed by FQN "
    "both ways (its `param_groups` list the names in the optimizer's order, FSDP1's by "
    "flat parameter)"
)


def full_block(engine: Engine, call: cst.Call) -> tuple[Plan, bool] | None:
    """The plan of the ``FULL_STATE_DICT`` block ``call`` opens, and whether it is FSDP2's only.

    Its statements after the state dict may read the optimizer's state in the block's
    layout; where the file's releases start before DCP's functions, the form is for the
    dual stack's FSDP2 branch (``True``: torch 2.4 or later).
    """
    plan = plan_for(engine, call, rest=True, optim=True)
    if plan is not None:
        return plan, False
    if needs_dual(engine):
        plan = plan_for(engine, call, rest=True, any_release=True, optim=True)
        if plan is not None:
            return plan, True
    return None


def call_text(engine: Engine, call: cst.Call, args: list[str], dual: bool) -> str:
    """``get_optimizer_state_dict(args)``, on more lines where long, in ``call``'s place.

    The call's line leaves its block (one level less), or goes into the dual stack's
    ``if`` (the same level); ``taken``: what comes before the call on its line.
    """
    statement: Any = engine.parent(call)
    taken = 0
    if isinstance(statement, cst.Assign) and statement.value is call:
        taken = sum(len(engine.module.code_for_node(t.target)) + 3 for t in statement.targets)
    while not isinstance(statement, cst.BaseStatement):
        statement = engine.parent(statement)
    indent = indentation(engine, statement)
    if not dual:
        indent = indent[: -len(engine.module.default_indent)]
    one = engine.module.default_indent
    return wrapped_call("get_optimizer_state_dict", args, one, indent, taken)
