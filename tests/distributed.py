"""One harness for every multi-process test: real process groups, gloo on CPU, NCCL on GPU.

``run(fn, *args, world_size=N)`` spawns N ranks on a free port, calls
``fn(rank, world_size, *args)`` in each with the default process group initialised,
and returns the ranks' return values in rank order. The backend follows the machine:
NCCL with one GPU per rank where there are N GPUs, gloo on the CPU otherwise, with
the GPUs hidden from those ranks (FSDP1 on a machine with CUDA otherwise moves a CPU
model's compute to a GPU, and a CPU reference no longer compares). ``fn`` builds on
:func:`device_for` its rank, so one test runs on either. A rank that raises has its
traceback put into the AssertionError the test sees; a hung run is killed at the
timeout; the process group is destroyed even when ``fn`` fails.

``fn`` must be a module-level function (it is pickled by name for the spawned
processes) and returns anything ``torch.save`` can store (plain data, tensors).
"""

from __future__ import annotations

import datetime
import io
import os
import queue
import signal
import traceback
import warnings
from typing import Any, Callable

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# The port checker (compat.portcheck) starts its ranks the same way: one copy of these.
from compat.portcheck.launch import choose_backend, free_port, torchrun_variables

DEFAULT_TIMEOUT_S = 180.0


def device_for(rank: int) -> torch.device:
    """The device a rank computes on: its GPU under NCCL, else the CPU."""
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


#: What the fork server imports once for every rank it starts: torch, and what the ranks'
#: functions import beside it (FSDP, DTensor and its compiler stack, distributed
#: checkpointing, Lightning Fabric, libcst, pytest), about two seconds of
#: each rank's start otherwise; then this module, every rank's entry point (it loads
#: ``compat`` and the rule registry: 0.17 s of CPU a rank), and the migration that most
#: test modules import (30 ms). Imports only: nothing here starts CUDA or a process group,
#: and a module that is not installed is skipped. Last, ``tests.fork_server_frozen``
#: freezes what they made, so that the ranks neither scan it nor copy its pages.
PRELOAD = [
    "torch",
    "torch.distributed",
    "torch.multiprocessing",
    "torch.distributed.fsdp",
    "torch.distributed.fsdp.wrap",
    "torch.distributed.tensor",
    "torch.distributed.checkpoint",
    "torch.distributed.checkpoint.state_dict",
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
    "lightning.fabric",
    "libcst",
    "pytest",
    "tests.distributed",
    "codemods.engine.run",
    "codemods.migrate",
    "tests.fork_server_frozen",
]


def _context() -> Any:
    """Where the ranks come from: a fork server that has imported torch, once.

    Every rank imports torch before it runs anything of its own (this module does); a
    spawned rank spends seconds on it. The fork server makes that import once and each
    rank starts as a fork of it: a new process, as a spawned one, that already has torch
    (and nothing else: no CUDA, no process group, the test's environment and working
    directory). ``spawn`` stays where there is no fork server.
    """
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_fork_server() -> None:
    """Start this process's fork server with :data:`PRELOAD`, unless one runs already.

    A process has one fork server, started with the preload of whoever needs it first;
    the port checker (``compat.portcheck``) asks for its own, shorter list (torch
    alone). Started here first, the server serves both with this list.
    """
    if _context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


#: What each :func:`run` of this process used, ``(backend, device)``: conftest records
#: it on the test's junit entry, so the matrix page counts the tests that ran on NCCL.
RUNS: list[tuple[str, str]] = []


def _worker(rank, world_size, port, backend, fn, args, results, environment) -> None:
    # The test's environment as it is now (the fork server's is the one it started with),
    # set before anything here asks CUDA for its devices.
    os.environ.clear()
    os.environ.update(environment)
    # The variables torchrun sets: Lightning reads them and then launches nothing itself.
    os.environ.update(torchrun_variables(rank, world_size, port))
    torch.set_num_threads(1)  # 2-core machines: ranks must not fight over threads
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=120),
        )
        value = fn(rank, world_size, *args)
        results.put((rank, True, _to_bytes(value)))
    except BaseException:  # noqa: BLE001 - every failure goes back to the test
        results.put((rank, False, traceback.format_exc()))
    # The report flushed before the teardown, where torch can crash (see run).
    results.close()
    results.join_thread()
    if dist.is_initialized():
        dist.destroy_process_group()
    # Leave without the interpreter's teardown: torch's background threads sometimes
    # abort there ("terminate called without an active exception", seen with FSDP2 on
    # gloo, torch 2.13) after the rank's work is done and reported.
    os._exit(0)


def _to_bytes(value: Any) -> bytes:
    # Tensors sent through a queue as-is are shared by file descriptor and break once
    # the rank exits; plain bytes outlive it.
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _from_bytes(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), weights_only=False)


def run(
    fn: Callable[..., Any],
    *args: Any,
    world_size: int | None = None,
    backend: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` real ranks.

    Args:
        fn: A module-level function.
        *args: Picklable arguments passed after rank and world size.
        world_size: How many processes (default: :func:`world_size_for` the backend,
            two where the backend is left to the machine).
        backend: ``"gloo"`` or ``"nccl"``; default :func:`choose_backend`.
        timeout: Seconds before the ranks still running are killed.

    Returns:
        Each rank's return value, in rank order.

    Raises:
        AssertionError: If a rank raised (its traceback is in the message), the run
            timed out, or a rank was killed by a signal before it reported, twice: a
            first such crash (torch's native code, not the test's) is said in a
            warning and the ranks run once more; one after every rank reported is
            said and its results stand (see ``compat.portcheck.launch``).
    """
    if backend is None:
        world_size = world_size or 2
        backend = choose_backend(world_size)
    world_size = world_size or world_size_for(backend)
    RUNS.append((backend, "cuda" if backend == "nccl" else "cpu"))
    try:
        return _run_once(fn, args, world_size, backend, timeout)
    except _Crashed as crash:  # torch's native code, not the test's: once more, said
        warnings.warn(f"{crash}; the ranks run once more", RuntimeWarning, stacklevel=2)
    return _run_once(fn, args, world_size, backend, timeout)


class _Crashed(AssertionError):
    """A rank was killed by a signal before it reported (as compat.portcheck.launch)."""


def _run_once(
    fn: Callable[..., Any], args: tuple, world_size: int, backend: str, timeout: float
) -> list[Any]:
    ctx = _context()
    results = ctx.Queue()
    port = free_port()
    environment = dict(os.environ)
    if backend == "gloo":  # the CPU: see the module's docstring
        environment["CUDA_VISIBLE_DEVICES"] = ""
    procs = [
        ctx.Process(
            target=_worker,
            args=(rank, world_size, port, backend, fn, args, results, environment),
        )
        for rank in range(world_size)
    ]
    for proc in procs:
        proc.start()
    outcomes: dict[int, tuple[bool, Any]] = {}
    failure = ""
    try:
        deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout)
        while len(outcomes) < world_size:
            remaining = (deadline - datetime.datetime.now()).total_seconds()
            if remaining <= 0:
                failure = f"timed out after {timeout:.0f}s; ranks done: {sorted(outcomes)}"
                break
            try:
                rank, ok, value = results.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                # A rank killed by a signal never reports: its peers wait in a collective.
                if any(r not in outcomes and _signal(p) for r, p in enumerate(procs)):
                    break
                continue
            outcomes[rank] = (ok, value)
            if not ok:  # a failed rank may leave its peers blocked in a collective
                break
    finally:
        settled = len(outcomes) == world_size and all(o[0] for o in outcomes.values())
        stopped = set()  # the ranks killed here (left blocked by a failed peer)
        for rank, proc in enumerate(procs):
            proc.join(timeout=10 if settled else 2)
            if proc.is_alive():
                proc.kill()
                proc.join()
                stopped.add(rank)
    unreported = [
        r for r, p in enumerate(procs) if r not in outcomes and r not in stopped and _signal(p)
    ]
    if unreported and not failure:  # the others' errors follow from it (a closed connection)
        raise _Crashed(f"rank {unreported[0]} was killed by {_signal(procs[unreported[0]])}")
    errors = [
        f"rank {rank} failed:\n{value}" for rank, (ok, value) in sorted(outcomes.items()) if not ok
    ]
    if errors or failure:
        raise AssertionError("\n".join([failure, *errors]).strip())
    exit_codes = [proc.exitcode for proc in procs]
    if any(code != 0 for code in exit_codes):
        # Every rank reported its work: a crash in the teardown after it is torch's.
        killed = [f"rank {r}: {_signal(p)}" for r, p in enumerate(procs) if _signal(p)]
        if len(killed) != sum(code != 0 for code in exit_codes):
            raise AssertionError(f"ranks exited with codes {exit_codes}")
        warnings.warn(f"after its work, {', '.join(killed)}", RuntimeWarning, stacklevel=3)
    return [_from_bytes(outcomes[rank][1]) for rank in range(world_size)]


def _signal(proc: Any) -> str | None:
    """The name of the signal that killed ``proc``, or None (running, or exited)."""
    code = proc.exitcode
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def world_size_for(backend: str) -> int:
    """One rank per GPU under NCCL (one GPU is enough); two CPU ranks under gloo."""
    return torch.cuda.device_count() if backend == "nccl" else 2


def backend_for_tests() -> str:
    """NCCL on every GPU where there is one (one rank each), else gloo."""
    return choose_backend(1)


def cpu_environment() -> dict[str, str]:
    """``os.environ`` for a subprocess written for gloo and the CPU: no GPU visible.

    As in :func:`run`'s gloo ranks: FSDP1 would otherwise compute a CPU model on a GPU.
    """
    return {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


def fsdp1_runs_here() -> bool:
    """Whether FSDP1 can run here: on the CPU (torch 2.2 and later) or on a GPU."""
    from compat.features import current

    return current().fsdp1_on_cpu or torch.cuda.is_available()


#: For a test that builds FSDP1 models: skipped where this torch runs FSDP1 only on CUDA.
NEEDS_FSDP1 = pytest.mark.skipif(
    not fsdp1_runs_here(),
    reason="this torch runs FSDP1 only on CUDA (FSDP1 on CPU and gloo needs torch 2.2)",
)


def fsdp1_optimizer_state_gathers_here() -> bool:
    """Whether FSDP1 gathers a full optimizer state dict here (``use_orig_params`` models).

    Before torch 2.4 the gather calls ``torch.cuda.synchronize()`` and
    ``torch.cuda.memory_summary()`` whatever the device (seen on 2.2; 2.4 asks the
    unit's device): on CPU ranks without CUDA it raises.
    """
    from packaging.version import Version

    from compat.features import current

    return torch.cuda.is_available() or (
        current().fsdp1_on_cpu and current().torch >= Version("2.4")
    )


#: For a test that saves FSDP1's full optimizer state (a Lightning checkpoint) on CPU ranks.
NEEDS_FSDP1_OPTIMIZER_GATHER = pytest.mark.skipif(
    not fsdp1_optimizer_state_gathers_here(),
    reason="this torch's FSDP1 gathers a full optimizer state only on CUDA "
    "(torch.cuda calls in FSDP1's optimizer-state gather before torch 2.4)",
)
