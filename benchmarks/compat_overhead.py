"""What ``compat`` costs at wrap time and per training step, as ratios to native torch.

    python benchmarks/compat_overhead.py [--repeat N] [--steps N]

With a model of about 1,000 modules, on CPU (gloo):

- wrap time: ``compat.fsdp.FSDP(model, auto_wrap_policy={Block}, cpu_offload=False)`` (the
  legacy spellings) against torch's ``FullyShardedDataParallel`` with
  ``ModuleWrapPolicy({Block})`` and ``CPUOffload(offload_params=False)``; and a user's
  policy callable written with ``unwrapped_params`` (adapted by compat) against the same
  callable written with ``nonwrapped_numel``;
- per step, on 2 ranks: ``--steps`` pairs of single SGD steps, one of the model compat
  built and one of the model torch built.

Wrapping is local work, so it is timed on one rank: with two ranks on two cores, the
other rank's gloo threads spin and blur it. Each pair alternates which side goes first
(ABBA); the ratio printed is the median of compat/native over the pairs (1.00: no
overhead), for wall time and for the measuring thread's CPU time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from tests import distributed  # noqa: E402

WIDTH = 8
BLOCKS = 249  # 249 blocks x 4 modules + the root and its ModuleList: about 1,000 modules


class Block(nn.Module):
    """Two linear layers and an activation: four modules with the block itself."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return x + self.fc2(self.act(self.fc1(x)))


class Deep(nn.Module):
    """A stack of blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        for block in self.blocks:
            x = block(x)
        return x


def legacy_policy(module, recurse, unwrapped_params, min_num_params=100):
    """A user's policy in torch 1.12's spelling."""
    return recurse or unwrapped_params >= min_num_params


def current_policy(module, recurse, nonwrapped_numel, min_num_params=100):
    """The same policy in the current spelling."""
    return recurse or nonwrapped_numel >= min_num_params


def _builders():
    import warnings

    from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    from compat.fsdp import FSDP

    cpu = torch.device("cpu")
    warnings.simplefilter("ignore")  # compat warns once per call site; not what is timed
    return {
        "classes": (
            lambda m: FSDP(m, auto_wrap_policy={Block}, cpu_offload=False),
            lambda m: FullyShardedDataParallel(
                m,
                auto_wrap_policy=ModuleWrapPolicy({Block}),
                cpu_offload=CPUOffload(offload_params=False),
                device_id=cpu,
            ),
        ),
        "callable": (
            lambda m: FSDP(m, auto_wrap_policy=legacy_policy),
            lambda m: FullyShardedDataParallel(m, auto_wrap_policy=current_policy, device_id=cpu),
        ),
    }


def _timed(build) -> tuple[float, float]:
    """Wall and this thread's CPU seconds of ``build`` on a fresh model."""
    torch.manual_seed(0)
    model = Deep()
    torch.distributed.barrier()
    wall, cpu = time.perf_counter(), time.thread_time()
    build(model)
    return time.perf_counter() - wall, time.thread_time() - cpu


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> tuple:
    """Wall and this thread's CPU seconds of one SGD step, after a barrier."""
    torch.distributed.barrier()
    wall, cpu = time.perf_counter(), time.thread_time()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return time.perf_counter() - wall, time.thread_time() - cpu


def _pairs(measure: Callable[[int], tuple[float, float]], count: int) -> list[tuple]:
    """``count`` pairs (compat's sample, native's sample), alternating who goes first."""
    pairs = []
    for i in range(count):
        order = (0, 1) if i % 2 == 0 else (1, 0)  # ABBA: drift falls on both alike
        samples = {k: measure(k) for k in order}
        pairs.append((samples[0], samples[1]))
    return pairs


def _measure_wrap(rank: int, world_size: int, repeat: int) -> dict:
    builders = _builders()
    for legacy, native in builders.values():  # warm up: first calls import and cache
        _timed(legacy)
        _timed(native)
    wrap = {name: _pairs(lambda k, p=pair: _timed(p[k]), repeat) for name, pair in builders.items()}
    return {"modules": sum(1 for _ in Deep().modules()), "wrap": wrap}


def _measure_steps(rank: int, world_size: int, steps: int) -> list[tuple]:
    models = []
    for build in _builders()["classes"]:
        torch.manual_seed(0)
        model = build(Deep())
        models.append((model, torch.optim.SGD(model.parameters(), lr=0.01)))
    x = torch.randn(16, WIDTH)
    for model, optimizer in models:  # warm up
        _step(model, optimizer, x)
    calls = [_python_calls(model, optimizer, x) for model, optimizer in models]
    return {"calls": calls, "pairs": _pairs(lambda k: _step(*models[k], x), steps)}


def _python_calls(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> int:
    """Python and builtin calls one step makes: a count free of timing noise."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(tracer)
    try:
        _step(model, optimizer, x)
    finally:
        sys.setprofile(None)
    return count


def _report(label: str, pairs: list[tuple], unit: float, suffix: str) -> None:
    """Medians of compat and native, and the median of the paired ratios, wall and CPU."""
    for index, clock in ((0, "wall"), (1, "cpu ")):
        legacy = [a[index] for a, _ in pairs]
        native = [b[index] for _, b in pairs]
        ratio = statistics.median(a[index] / b[index] for a, b in pairs)
        legacy_median, native_median = statistics.median(legacy), statistics.median(native)
        print(f"{label} {clock}  compat {legacy_median * unit:8.2f} {suffix}  "
              f"native {native_median * unit:8.2f} {suffix}  ratio {ratio:.3f}")  # fmt: skip


def main(argv: list[str]) -> int:
    """Measure and print the ratios (rank 0's clocks)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40, help="wrap-time pairs")
    parser.add_argument("--steps", type=int, default=40, help="step pairs")
    args = parser.parse_args(argv)
    wrap = distributed.run(_measure_wrap, args.repeat, world_size=1, timeout=1800)[0]
    steps = distributed.run(_measure_steps, args.steps, world_size=2, timeout=1800)[0]
    print(f"model: {wrap['modules']} modules; torch {torch.__version__}, gloo, CPU")
    print("ratio: the median of compat/native over pairs taken side by side (ABBA order);")
    print("cpu: the measuring thread's CPU time (gloo's own threads left out)")
    print(f"wrap time, 1 rank, {args.repeat} pairs:")
    for name, pairs in wrap["wrap"].items():
        _report(f"  policy as {name:<9}", pairs, 1e3, "ms")
    print(f"training step, 2 ranks, {args.steps} pairs of single steps:")
    _report("  step              ", steps["pairs"], 1e3, "ms")
    legacy_calls, native_calls = steps["calls"]
    print(f"  Python calls in one step: compat {legacy_calls}, native {native_calls}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
