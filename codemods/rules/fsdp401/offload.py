"""FSDP1's ``cpu_offload`` as FSDP2's ``offload_policy``, for FSDP401."""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.keywords import Keywords, Untranslatable
from codemods.rules.fsdp401.values import (
    bound_once,
    call_fields,
    constructor,
    is_none,
    operand,
    source,
)
from codemods.syntax.cst_nodes import find_all, literal
from codemods.syntax.lazy_libcst import cst

#: What FSDP2's CPU offloading does otherwise than FSDP1's (torch's ``CPUOffloadPolicy``).
OFFLOADED = (
    "`CPUOffloadPolicy` keeps the sharded parameters and gradients on the CPU (pinned, "
    "as FSDP1's were) and steps the optimizer there, as FSDP1's `offload_params=True` "
    "did; but where FSDP1's `clip_grad_norm_` handled CPU gradients itself, under NCCL "
    "a collective over the CPU DTensors (`torch.nn.utils.clip_grad_norm_`'s norm, "
    "`full_tensor()`) needs them on the device first"
)


def cpu_offload(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    """Add the ``offload_policy`` of FSDP1's ``cpu_offload=value`` to ``out`` (none: no offloading).

    Raises:
        Untranslatable: Where the value is not a form read here.
    """
    policy = _offload(engine, value)
    if policy is None:
        return  # no offloading: FSDP2's default
    out.code.append(f"offload_policy={policy}")
    if "CPUOffloadPolicy()" in policy:
        out.notes.append(OFFLOADED)
    out.imports += [name for name in ("CPUOffloadPolicy", "OffloadPolicy") if f"{name}()" in policy]


def _offload(engine: Engine, value: cst.BaseExpression) -> str | None:
    """The FSDP2 offload policy for an FSDP1 ``cpu_offload`` value; None: no offloading.

    ``None``, ``CPUOffload(...)`` (by a literal or a flag read at run time) and a
    conditional choosing between them (``CPUOffload(offload_params=True) if flag else
    None``, as real scripts write it).

    Raises:
        Untranslatable: For any other value.
    """
    if is_none(value):
        return None
    bound = bound_once(engine, value)
    if isinstance(bound, cst.IfExp) and not find_all(bound.test, lambda n: isinstance(n, cst.Call)):
        value = bound  # `offload = CPUOffload(...) if flag else None`, once: its test re-read
    if isinstance(value, cst.IfExp):
        body, orelse = _offload(engine, value.body), _offload(engine, value.orelse)
        if body is None and orelse is None:
            return None
        test = operand(engine, value.test)
        return f"{_branch(body)} if {test} else {_branch(orelse)}"
    call = constructor(engine, value, "CPUOffload")
    if call is None and isinstance(value, (cst.Name, cst.Attribute)):
        # `CPUOffload(...)` or None, bound at run time (a config's, a branch's): FSDP1
        # offloads where its `offload_params` is true.
        read = source(engine, value)
        return (
            f'CPUOffloadPolicy() if getattr({read}, "offload_params", False) else OffloadPolicy()'
        )
    if call is None:
        raise Untranslatable("`cpu_offload` is not a `CPUOffload(...)` call")
    fields = call_fields(call, ("offload_params",))
    if set(fields) - {"offload_params"}:
        raise Untranslatable("`CPUOffload(...)` with a value the rewrite cannot read")
    node = fields.get("offload_params")
    offload = False if node is None else literal(node)
    if offload is True:
        return "CPUOffloadPolicy()"
    if offload is False:
        return None
    # A flag read at run time (FSDP1 offloads where it is true); `OffloadPolicy()` is
    # FSDP2's own default, no offloading.
    return f"CPUOffloadPolicy() if {operand(engine, node)} else OffloadPolicy()"


def _branch(policy: str | None) -> str:
    """One side of a conditional policy: the default where None, a conditional in parentheses."""
    if policy is None:
        return "OffloadPolicy()"
    return f"({policy})" if " if " in policy else policy
