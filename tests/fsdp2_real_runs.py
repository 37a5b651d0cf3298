"""What the ranks run for tests/test_fsdp2_real_scripts.py (imported by name there).

The FSDP1 originals of the rank-0-load script and the worker pass
``sync_module_states=True``, which FSDP1 refuses on CPU tensors (its guard asks for a
GPU, as NCCL does; gloo broadcasts CPU tensors). On CPU ranks :func:`synced` lifts that
guard alone for the call, so FSDP1's own broadcast code runs; with a GPU per rank the
original runs as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import torch

from compat.portcheck import PortCase, check_ports
from compat.portcheck.spec import resolve
from tests.portcheck_ports import batch

BATCH = "tests.portcheck_ports:batch"


@contextlib.contextmanager
def _fsdp1_sync_on_cpu() -> Iterator[None]:
    from torch.distributed.fsdp import _init_utils

    if torch.cuda.is_available():  # the real run: nothing to lift
        yield
        return
    guard = _init_utils._check_module_states_for_sync_module_states
    _init_utils._check_module_states_for_sync_module_states = lambda states: None
    try:
        yield
    finally:
        _init_utils._check_module_states_for_sync_module_states = guard


#: Where the ranks find the FSDP1 originals that pass ``sync_module_states`` (a JSON
#: object of files, inherited by ranks started later).
SYNCED = "FSDP2_REAL_SCRIPTS"


def synced(name: str, rank: int, world_size: int) -> Any:
    """The FSDP1 original ``name``, its ``sync_module_states`` broadcast run on CPU ranks too."""
    with _fsdp1_sync_on_cpu():
        return resolve(f"{json.loads(os.environ[SYNCED])[name]}:build")(rank, world_size)


def rank0_fsdp1(rank: int, world_size: int) -> Any:
    """The rank-0-load script's FSDP1 original."""
    return synced("rank0", rank, world_size)


def worker_fsdp1(rank: int, world_size: int) -> Any:
    """The worker's FSDP1 original."""
    return synced("worker", rank, world_size)


def group_fsdp1(rank: int, world_size: int) -> Any:
    """FSDP1 over a process group with ``sync_module_states`` (tests/fixtures/fsdp2)."""
    return synced("group", rank, world_size)


def micro_batches(step: int, rank: int) -> list[Any]:
    """Three micro-batches per step, different on each rank."""
    return [batch(3 * step + index, rank) for index in range(3)]


def full_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=False)
    state = get_model_state_dict(model, options=options)
    return {name: tensor.detach().float().clone() for name, tensor in state.items()}


def two_ranks(rank: int, world_size: int, originals: dict, ports: dict) -> dict:
    """Every comparison on 2 ranks, in one start-up: the port checker, then the own loop.

    ``originals`` and ``ports`` map each script to its file. Returns the reports, and
    for the nested script its own training loop's losses and weights on both sides.
    """
    os.environ[SYNCED] = json.dumps(originals)
    cases = {
        "rank0-load": PortCase(
            "tests.fsdp2_real_runs:rank0_fsdp1",
            f"{ports['rank0']}:build",
            BATCH,
            distinct_seeds=True,
        ),
        "worker-1d": PortCase(
            "tests.fsdp2_real_runs:worker_fsdp1",
            f"{ports['worker']}:build",
            BATCH,
            distinct_seeds=True,
        ),
        "nested-bf16": PortCase(
            f"{originals['nested']}:build", f"{ports['nested']}:build", BATCH, accumulate=3
        ),
        # FSDP401's other steps on forms of our own: a group's mesh and broadcast, and
        # meta units materialised by `reset_parameters` (no `param_init_fn`).
        "group-sync": PortCase(
            "tests.fsdp2_real_runs:group_fsdp1",
            f"{ports['group']}:build",
            BATCH,
            distinct_seeds=True,
        ),
        "meta-default": PortCase(f"{originals['meta']}:fsdp1", f"{ports['meta']}:fsdp1", BATCH),
    }
    reports = check_ports(cases, timeout=300)
    loops = {}
    for side, path in (("before", originals["nested"]), ("after", ports["nested"])):
        torch.manual_seed(0)
        losses, model = resolve(f"{path}:train")(rank, world_size, 3, micro_batches)
        loops[side] = (losses, full_weights(model))
    return {"reports": reports, "loops": loops}
