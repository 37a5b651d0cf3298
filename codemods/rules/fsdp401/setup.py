"""FSDP1's steps before it shards each unit, written as plain FSDP2 code (FSDP401).

When FSDP1 wraps a unit it first materialises the unit's meta tensors
(``param_init_fn(module)``, or ``to_empty(recurse=False)`` and ``reset_parameters()``,
on each module of the unit, breadth-first, not entering units already wrapped) and,
with ``sync_module_states``, moves the unit to its device and broadcasts rank 0's
parameters and buffers (non-persistent ones included) over the unit's group. FSDP2's
``fully_shard`` does neither. The rewrite writes these steps, in FSDP1's order, before
each ``fully_shard``: the forms measured equal to FSDP1 (``FSDP2-FACTS.md``), not the
shard-on-meta-then-initialise or ``broadcast_from_rank0`` loads, which give other
values. :mod:`codemods.rules.fsdp401.helpers` writes the functions they call.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.keywords import Keywords, Setup
from codemods.rules.fsdp401.values import is_none, source
from codemods.syntax.cst_nodes import literal
from codemods.syntax.lazy_libcst import cst

#: Where ``DeviceMesh`` lives.
DEVICE_MESH = "torch.distributed.device_mesh"
#: The FSDP1 arguments read into :class:`~codemods.rules.fsdp401.keywords.Setup`.
SETUP = ("sync_module_states", "param_init_fn", "process_group")

MATERIALISED = (
    "each unit holding meta tensors is materialised just before its `fully_shard`, as "
    "FSDP1 did when it wrapped it"
)
BROADCAST = (
    "rank 0's parameters and buffers (non-persistent ones included) are broadcast to "
    "every rank unit by unit before `fully_shard`, as FSDP1's `sync_module_states` did"
)
GROUP = (
    "`process_group` becomes a 1-D mesh made of it (`DeviceMesh.from_group`): the same "
    "ranks, and `state_dict()`'s DTensors carry that mesh"
)
#: Without ``device_id`` the mesh's device type is written as CUDA's, where FSDP1 took
#: the module's or the current accelerator's.
GROUP_ON_CUDA = (
    ', on CUDA devices (`"cuda"`, where FSDP1 took the module\'s device or the current '
    "accelerator: write yours on another, or pass `device_id` to FSDP1 first)"
)


def take_setup(engine: Engine, name: str, value: cst.BaseExpression, out: Keywords) -> None:
    """Record one of :data:`SETUP`'s arguments (not ``False`` or ``None``) in ``out``."""
    text = source(engine, value)
    if name == "sync_module_states":
        out.setup.sync = "True" if literal(value) is True else text
    elif name == "param_init_fn":
        if not is_none(value):
            out.setup.init_fn = text
            out.setup.materialise = True
    else:
        out.setup.group = text


def setup_notes(setup: Setup) -> list[str]:
    """What the finding says of the steps written (each one's difference from FSDP1)."""
    notes = []
    if setup.materialise:
        notes.append(MATERIALISED)
    if setup.sync is not None:
        notes.append(BROADCAST)
    if setup.group is not None:
        notes.append(GROUP if setup.device else GROUP + GROUP_ON_CUDA)
    return notes


def prepare_function(name: str, setup: Setup, mesh: str | None, one: str, helpers: dict) -> str:
    """The local function doing FSDP1's steps on one unit, as source.

    ``helpers`` maps each helper's role to its name in the file; ``mesh`` is the source
    of the mesh the call shards on (the broadcast goes over it).
    """
    device = setup.device or "torch.device('cuda', torch.cuda.current_device())"
    body = []
    if setup.materialise:
        init = f", {setup.init_fn}" if setup.init_fn else ""
        body.append(f"{helpers['materialise']}(unit, {device}{init})")
    if setup.sync is not None:
        group = f", {mesh}" if mesh else ""
        call = f"{helpers['broadcast']}(unit, {setup.device or 'None'}{group})"
        body.append(call if setup.sync == "True" else f"if {setup.sync}:\n{one * 2}{call}")
    lines = "".join(f"{one}{line}\n" for line in body)
    return f"def {name}(unit):  # FSDP1's steps before it wrapped a unit\n{lines}"
