"""How long the fix verifier takes on a large module, against a parse of it.

    python benchmarks/verify_speed.py [--lines N] [--repeat N]

Generates two modules of ordinary torch code of ``--lines`` lines (2,500 by default):
model classes and training helpers as many top-level statements, and one large
Lightning-style class (a single statement that is most of the file). Each has legacy
FSDP imports and uses, and a copy edited as a fix edits it (an import renamed with all
its uses). For each it prints the median of ``--repeat`` calls, taken in turn, in ms
and as a ratio to the first figure, of:

- ``ast.parse`` of the module (the floor of any Python tool that reads it);
- ``breakages(old, new)`` on the sound rewrite (what every fixed file costs);
- ``breakages`` on a broken rewrite (one use left behind: the verifier looks further);
- ``breakages(src, src)`` (unchanged: returns at once).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemods.verify.check import breakages  # noqa: E402

HEADER = '''"""Generated model code for the verifier benchmark."""

from __future__ import annotations

import math
import os
import sys
from functools import partial
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

LOG_EVERY = 50
'''

BLOCK = '''

class Block{i}(nn.Module):
    """Transformer block {i}."""

    def __init__(self, dim: int, heads: int = 8, dropout: float = 0.1) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(self.norm(x)).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            attn = attn.masked_fill(mask == 0, float("-inf"))
        attn = F.softmax(attn, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, c)
        x = x + self.drop(self.proj(out))
        return x + self.mlp(self.norm(x))

    def extra_repr(self) -> str:
        sizes = [p.numel() for p in self.parameters() if p.requires_grad]
        return f"heads={{self.heads}}, params={{sum(sizes)}}"


def train_{i}(model: nn.Module, batches, steps: int = 100) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    total = 0.0
    for step, (inputs, targets) in enumerate(batches):
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        total += loss.item()
        if step % LOG_EVERY == 0:
            print(f"block {i} step {{step}}: {{total / (step + 1):.3f}}", file=sys.stderr)
        if step >= steps:
            break
    return total / max(1, steps) / math.log(2)


def wrap_{i}(dim: int = 64) -> FSDP:
    policy = partial(transformer_auto_wrap_policy, transformer_layer_cls={{Block{i}}})
    model = nn.Sequential(*[Block{i}(dim) for _ in range(4)])
    return FSDP(model, auto_wrap_policy=policy, device_id=int(os.environ.get("LOCAL_RANK", 0)))
'''

USE = """

def strategy() -> DDPFullyShardedNativeStrategy:
    print("using", DDPFullyShardedNativeStrategy.strategy_name)
    return DDPFullyShardedNativeStrategy(cpu_offload=False)
"""


METHOD = '''
    def step_{i}(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Training step variant {i}."""
        inputs, targets = batch
        logits = self.model(inputs)
        loss = F.cross_entropy(logits, targets)
        if batch_idx % LOG_EVERY == 0:
            self.log("loss_{i}", loss, prog_bar=True, sync_dist=True)
        accuracy = (logits.argmax(dim=-1) == targets).float().mean()
        self.log_dict({{"acc_{i}": accuracy, "lr": self.lr}}, on_step=True)
        return loss * math.exp(-{i} / 100)
'''


USE_METHOD = """
    def strategy(self) -> DDPFullyShardedNativeStrategy:
        print("using", DDPFullyShardedNativeStrategy.strategy_name)
        return DDPFullyShardedNativeStrategy(cpu_offload=False)
"""


def module(lines: int) -> str:
    """A module of about ``lines`` lines, with the legacy strategy used in the middle."""
    parts = [HEADER]
    index = 0
    while sum(part.count("\n") for part in parts) < lines:
        parts.append(BLOCK.format(i=index))
        if index == 10:
            parts.append(USE)
        index += 1
    return "".join(parts)


def one_class(lines: int) -> str:
    """A module that is mostly one class of about ``lines`` lines."""
    parts = [HEADER, "\n\nclass Module(nn.Module):\n    lr = 3e-4\n"]
    index = 0
    while sum(part.count("\n") for part in parts) < lines:
        parts.append(METHOD.format(i=index))
        if index == 40:
            parts.append(USE_METHOD)
        index += 1
    return "".join(parts) + '\n\nif __name__ == "__main__":\n    print(Module())\n'


def medians_ms(calls: dict, repeat: int) -> dict[str, float]:
    """The median wall time of each call, in ms.

    The calls are taken in turn, ``repeat`` times, so that the machine's drift falls on
    all of them alike.
    """
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(found) * 1000 for name, found in times.items()}


def report(label: str, old: str, repeat: int) -> None:
    """Print the figures for one module: ms, and the ratio to its parse."""
    renamed = {"DDPFullyShardedNativeStrategy": "FSDPStrategy"}
    sound = old.replace("DDPFullyShardedNativeStrategy", "FSDPStrategy")
    broken = sound.replace('print("using", FSDP', 'print("using", DDPFullyShardedNative')
    assert breakages(old, sound, renamed) == []
    assert len(breakages(old, broken, renamed)) == 1
    print(f"\n{label}: {old.count(chr(10))} lines, {len(old) // 1024} KiB")
    figures = {
        "ast.parse (the floor)": lambda: ast.parse(old),
        "breakages, sound rewrite": lambda: breakages(old, sound, renamed),
        "breakages, broken rewrite": lambda: breakages(old, broken, renamed),
        "breakages, unchanged": lambda: breakages(old, old),
    }
    medians = medians_ms(figures, repeat)
    floor = medians["ast.parse (the floor)"]
    for name, ms in medians.items():
        print(f"  {name:28} {ms:7.1f} ms  {ms / floor:5.2f}")


def main(argv: list[str] | None = None) -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2500)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    print(f"median of {args.repeat} interleaved calls; ratio to ast.parse of the same module")
    report("top-level statements", module(args.lines), args.repeat)
    report("one class", one_class(args.lines), args.repeat)


if __name__ == "__main__":
    main()
