"""The port checker's calls: :func:`check_port`, :func:`check_ports` and the pytest helper.

:func:`assert_port_matches` is :func:`check_port` that fails with the whole report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compat.features import torch_version
from compat.fsdp2.availability import fsdp2_module, fsdp2_on_cpu
from compat.portcheck.launch import choose_backend, on_ranks
from compat.portcheck.report import PortReport
from compat.portcheck.spec import PortCase, Spec


def require_fsdp2(backend: str) -> None:
    """Raise a clear error where this torch cannot run FSDP2 on ``backend``'s devices.

    Raises:
        ImportError: torch without FSDP2 (before 2.4).
        RuntimeError: CPU ranks (gloo) on torch before 2.7, where FSDP2 fails on CPU.
    """
    fsdp2_module()
    if backend == "gloo" and not fsdp2_on_cpu():
        raise RuntimeError(
            f"the port checker runs FSDP2 on CPU ranks (gloo), which needs torch >= 2.7; "
            f"installed torch {torch_version()}. Run it where there is a GPU per rank (NCCL) "
            "or on torch >= 2.7"
        )


def _run_cases(rank: int, world_size: int, cases: dict[str, PortCase], backend: str) -> Any:
    # On every rank: both sides of every case in turn, then rank 0 compares.
    from compat.portcheck.compare import compare
    from compat.portcheck.observe import observe_side

    reports = {}
    for name, case in cases.items():
        before = observe_side("before", case.before, case, rank, world_size)
        after = observe_side("after", case.after, case, rank, world_size)
        if rank == 0:
            reports[name] = compare(before, after, case, world_size, backend)
    return reports if rank == 0 else None


def check_ports(
    cases: Mapping[str, PortCase],
    *,
    world_size: int = 2,
    backend: str | None = None,
    timeout: float = 600.0,
) -> dict[str, PortReport]:
    """Check several ports in one set of ranks (one start-up for all of them).

    Args:
        cases: The comparisons, by a name of your choice.
        world_size: Ranks to start; inside an existing process group (``torchrun``),
            its ranks are used and every rank gets the reports.
        backend: ``gloo`` or ``nccl``; default NCCL where there is a GPU per rank.
        timeout: Seconds for the whole run, and for any one collective.

    Returns:
        A :class:`PortReport` per case, by name.

    Raises:
        ImportError / RuntimeError: FSDP2 cannot run here (:func:`require_fsdp2`).
        ValueError / TypeError: A case that cannot run (:meth:`PortCase.check`).
        compat.portcheck.launch.RankError: A rank failed outside the checker's guard.
    """
    import torch.distributed as dist

    if dist.is_initialized():
        backend = dist.get_backend()
    for case in cases.values():
        case.check()
    backend = backend or choose_backend(world_size)
    require_fsdp2(backend)
    return on_ranks(
        _run_cases, dict(cases), backend, world_size=world_size, backend=backend, timeout=timeout
    )


def check_port(
    before: Spec,
    after: Spec,
    batch: Spec,
    *,
    loss: Spec | None = None,
    world_size: int = 2,
    backend: str | None = None,
    timeout: float = 600.0,
    **options: Any,
) -> PortReport:
    """Run two builders side by side on ``world_size`` ranks and compare them.

    Args:
        before: ``(rank, world_size) -> (model, optimizer)``: the reference (FSDP1, or
            the script before migration). A callable that pickles by name, or a
            ``module:function`` / ``file.py:function`` spec.
        after: The same for the port.
        batch: ``(step, rank) -> batch``.
        loss: ``(model, batch) -> loss``; default
            :func:`compat.portcheck.spec.default_loss`.
        world_size: Ranks to start.
        backend: ``gloo`` or ``nccl`` (default: NCCL where there is a GPU per rank).
        timeout: Seconds for the whole run.
        **options: The other fields of :class:`PortCase` (``steps``, ``accumulate``,
            ``max_norm``, ``seed``, ``distinct_seeds``, ``atol``, ``rtol``).

    Returns:
        The :class:`PortReport`; ``report.passed`` says whether the port matches.
    """
    case = PortCase(before, after, batch, loss, **options)
    reports = check_ports({"port": case}, world_size=world_size, backend=backend, timeout=timeout)
    return reports["port"]


def assert_port_matches(before: Spec, after: Spec, batch: Spec, **options: Any) -> PortReport:
    """The pytest helper: :func:`check_port`, failing with the rendered report.

    Takes :func:`check_port`'s arguments and returns the report when the port passed.

    Raises:
        AssertionError: A difference or a hazard; the message is the whole report.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, then the report
    report = check_port(before, after, batch, **options)
    report.assert_passed()
    return report


__all__ = ["assert_port_matches", "check_port", "check_ports", "require_fsdp2"]
