"""What ``compat`` costs at wrap time and per training step, as ratios to native torch.

    python benchmarks/compat_overhead.py [--repeat N] [--steps N]

On 2 CPU ranks (gloo), with a model of about 1,000 modules:

- wrap time: ``compat.fsdp.FSDP(model, auto_wrap_policy={Block}, cpu_offload=False)`` (the
  legacy spellings) against torch's ``FullyShardedDataParallel`` with
  ``ModuleWrapPolicy({Block})`` and ``CPUOffload(offload_params=False)``; and a user's
  policy callable written with ``unwrapped_params`` (adapted by compat) against the same
  callable written with ``nonwrapped_numel``;
- per step: ``--steps`` x ``--repeat`` single SGD steps of the model compat built and of
  the one torch built, alternating (ABBA) step by step.

Wrap times run interleaved (legacy, native, legacy, ...) ``--repeat`` times; every ratio
printed is compat's median over native's (1.00 means no overhead).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

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


def _timed(build) -> float:
    torch.manual_seed(0)
    model = Deep()
    torch.distributed.barrier()
    start = time.perf_counter()
    build(model)
    return time.perf_counter() - start


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> float:
    """One SGD step, timed after a barrier so both ranks start it together."""
    torch.distributed.barrier()
    start = time.perf_counter()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return time.perf_counter() - start


def _measure(rank: int, world_size: int, repeat: int, steps: int) -> dict:
    builders = _builders()
    modules = sum(1 for _ in Deep().modules())
    wrap = {name: ([], []) for name in builders}
    for legacy, native in builders.values():  # warm up: first calls import and cache
        _timed(legacy)
        _timed(native)
    for _ in range(repeat):
        for name, (legacy, native) in builders.items():
            wrap[name][0].append(_timed(legacy))
            wrap[name][1].append(_timed(native))
    legacy, native = builders["classes"]
    models = []
    for build in (legacy, native):
        torch.manual_seed(0)
        model = build(Deep())
        models.append((model, torch.optim.SGD(model.parameters(), lr=0.01)))
    x = torch.randn(16, WIDTH)
    for model, optimizer in models:  # warm up
        _step(model, optimizer, x)
    step: tuple[list[float], list[float]] = ([], [])
    # Single steps, alternating which model goes first (ABBA), so drift and noise fall
    # on both alike; the medians of many single steps shrug off the outliers.
    for i in range(steps * repeat):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            step[k].append(_step(*models[k], x))
    return {"modules": modules, "wrap": wrap, "step": step}


def main(argv: list[str]) -> int:
    """Measure on 2 gloo ranks and print the ratios (rank 0's clock)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    result = distributed.run(_measure, args.repeat, args.steps, timeout=1800)[0]
    print(f"model: {result['modules']} modules; 2 ranks, gloo, CPU; torch {torch.__version__}")
    print(f"median of {args.repeat} interleaved runs; ratio = compat / native")
    for name, (legacy, native) in result["wrap"].items():
        lm, nm = statistics.median(legacy), statistics.median(native)
        print(f"wrap time, policy as {name:<9} compat {lm:.3f} s  native {nm:.3f} s  "
              f"ratio {lm / nm:.3f}")  # fmt: skip
    legacy, native = result["step"]
    lm, nm = statistics.median(legacy), statistics.median(native)
    print(f"per step ({len(legacy)} single steps each, ABBA)  compat {lm * 1e3:.2f} ms  "
          f"native {nm * 1e3:.2f} ms  ratio {lm / nm:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
