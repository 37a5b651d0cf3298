"""Ranks for the port checker: start N processes with a process group, or use the current one.

:func:`on_ranks` calls ``fn(rank, world_size, *args)`` on every rank of a new local
process group (gloo on the CPU, NCCL with one GPU per rank where there are enough) and
returns rank 0's value. Inside a process group that already exists (``torchrun``), it
calls ``fn`` on this rank and every rank gets rank 0's value. Ranks start from a fork
server that has imported torch once (``spawn`` where there is none); a rank that raises
stops the others and its traceback is in the error.

A rank killed by a signal (a crash inside torch's native code, not an exception of the
code run) is said in a warning, with each rank's Python stacks at that moment: where
every rank had finished its work, its result stands; before that, the ranks run once
more (:data:`CRASH_RETRIES`), and a second crash is a :class:`RankError`. Seen twice
in about 500 runs of the port checker's own 21 cases on gloo, and once in CI (torch
2.13, a 2-core machine: ``double free or corruption``, a segmentation fault in a
thread of torch's, not in Python).
"""

from __future__ import annotations

import datetime
import faulthandler
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException

from compat.portcheck.ports import free_port

#: How many times the ranks run again after one crashed before its work was done.
CRASH_RETRIES = 1

#: Imported once by the fork server, not by each rank.
PRELOAD = ["torch", "torch.distributed", "torch.distributed.fsdp", "torch.distributed.tensor"]


class RankError(RuntimeError):
    """A rank raised, or the ranks did not finish in time."""


def rank_device() -> torch.device:
    """The device this rank computes on: its GPU under NCCL, else the CPU.

    Builders pass it as FSDP1's ``device_id`` and move their models there; the checker
    moves each batch there.
    """
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def choose_backend(world_size: int) -> str:
    """NCCL where there is a GPU for each rank, else gloo.

    Example:
        >>> choose_backend(100_000)
        'gloo'
    """
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return "nccl" if gpus >= world_size and dist.is_nccl_available() else "gloo"


def torchrun_variables(rank: int, world_size: int, port: int) -> dict[str, str]:
    """The environment variables torchrun gives a rank on one machine.

    Example:
        >>> torchrun_variables(1, 2, 29500)["RANK"]
        '1'
    """
    return {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(world_size),
    }


def _rank_entry(
    rank: int,
    world_size: int,
    port: int,
    backend: str,
    timeout: float,
    result: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    environment: dict[str, str],
    path: list[str],
) -> None:
    folder = Path(result).parent
    # A crash's Python stacks (every thread's) into a file the caller reads: kept open
    # until the process ends, as faulthandler writes to it from the signal handler.
    crash = open(folder / f"rank{rank}.crash", "w")  # noqa: SIM115
    faulthandler.enable(file=crash, all_threads=True)
    # The caller's environment and import path as they are now: a fork server keeps
    # those of the moment it started.
    os.environ.clear()
    os.environ.update(environment)
    os.environ.update(torchrun_variables(rank, world_size, port))
    sys.path[:] = path
    if backend == "gloo":
        # CPU ranks: FSDP1 would otherwise move a CPU model's compute to a visible GPU.
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    else:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    dist.init_process_group(
        backend,
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout),
    )
    try:
        value = fn(rank, world_size, *args)
        if rank == 0:
            torch.save(value, result)
        (folder / f"rank{rank}.done").touch()  # a crash from here on left the work whole
    finally:
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown: torch's background threads can abort there after
    # the work is done (seen with FSDP2 on gloo, torch 2.13), which would read as a failure.
    os._exit(0)


class _Crashed(RankError):
    """A rank died by a signal before every rank had finished its work."""


def _crash_stacks(folder: str) -> str:
    """The Python stacks of ranks that died by a signal, as :mod:`faulthandler` wrote them."""
    stacks = []
    for path in sorted(Path(folder).glob("rank*.crash")):
        text = path.read_text(errors="replace").strip()
        if text:
            stacks.append(f"\n{path.stem}, when it died:\n{text}")
    return "".join(stacks)


def on_ranks(
    fn: Callable[..., Any],
    *args: Any,
    world_size: int = 2,
    backend: str | None = None,
    timeout: float = 600.0,
) -> Any:
    """Run ``fn(rank, world_size, *args)`` on every rank; return rank 0's value.

    Args:
        fn: A module-level function (it is sent to the ranks by name).
        *args: Picklable arguments.
        world_size: Ranks to start (ignored inside an existing process group).
        backend: ``gloo`` or ``nccl``; default :func:`choose_backend`.
        timeout: Seconds for the whole run, and for any one collective.

    Raises:
        RankError: A rank raised (with its traceback), the run timed out (each run of
            the ranks has ``timeout``), or a rank was killed by a signal before the
            ranks' work was done, twice (see the module).
    """
    if dist.is_initialized():
        rank, size = dist.get_rank(), dist.get_world_size()
        box = [fn(rank, size, *args)]
        dist.broadcast_object_list(box, src=0)
        return box[0]
    backend = backend or choose_backend(world_size)
    for attempt in range(CRASH_RETRIES + 1):
        try:
            return _start(fn, args, world_size, backend, timeout)
        except _Crashed as crash:
            if attempt == CRASH_RETRIES:
                raise RankError(str(crash)) from None
            warnings.warn(f"{crash}\nThe ranks run once more.", RuntimeWarning, stacklevel=2)
    raise AssertionError("not reached")


def _start(
    fn: Callable[..., Any], args: tuple[Any, ...], world_size: int, backend: str, timeout: float
) -> Any:
    """One run of :func:`on_ranks` on new ranks (:class:`_Crashed`: a rank died by a signal)."""
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    if method == "forkserver":
        mp.get_context("forkserver").set_forkserver_preload(PRELOAD)
    with tempfile.TemporaryDirectory(prefix="portcheck-") as folder:
        result = str(Path(folder) / "rank0.pt")
        context = mp.start_processes(
            _rank_entry,
            args=(
                world_size,
                free_port(),
                backend,
                timeout,
                result,
                fn,
                args,
                dict(os.environ),
                list(sys.path),
            ),
            nprocs=world_size,
            join=False,
            start_method=method,
        )
        deadline = time.monotonic() + timeout
        try:
            while not context.join(timeout=1.0):
                if time.monotonic() > deadline:
                    raise RankError(f"the ranks did not finish in {timeout:.0f} s")
        except ProcessException as error:
            signal = getattr(error, "signal_name", None)
            if signal is None:  # a rank raised, or exited on its own
                raise RankError(f"a rank failed:\n{error}{_crash_stacks(folder)}") from None
            said = f"a rank was killed by {signal}:\n{error}{_crash_stacks(folder)}"
            done = [Path(folder, f"rank{rank}.done").exists() for rank in range(world_size)]
            if not all(done):
                raise _Crashed(said) from None
            warnings.warn(
                f"{said}\nEvery rank had finished its work: its result stands.",
                RuntimeWarning,
                stacklevel=3,
            )
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
                    process.join()
        return torch.load(result, weights_only=False)


__all__ = [
    "PRELOAD",
    "RankError",
    "choose_backend",
    "rank_device",
    "free_port",
    "on_ranks",
    "torchrun_variables",
]
