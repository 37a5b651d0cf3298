"""A small transformer-shaped model, its data, and what a training run is judged by.

Shared by the equivalence tests: the same seed, model and batches for legacy code run
through ``compat``, current native code, and an unsharded reference.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn as nn

STEPS = 3
LR = 0.1


class Block(nn.Module):
    """A residual MLP block: 544 parameters."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(x)))


class Head(nn.Module):
    """The output layer, a class of its own so policies can name it."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class Net(nn.Module):
    """embed (144 params) -> 3 Blocks (544 each) -> Head (17)."""

    def __init__(self, depth: int = 3, width: int = 16) -> None:
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = Head(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def legacy_policy(module, recurse, unwrapped_params, min_num_params=500):
    """A user's size policy written for torch < 2.0 (wraps each Block)."""
    return recurse or unwrapped_params >= min_num_params


def current_policy(module, recurse, nonwrapped_numel, min_num_params=500):
    """The same policy in torch >= 2.0's spelling."""
    return recurse or nonwrapped_numel >= min_num_params


def is_block(module: nn.Module) -> bool:
    return isinstance(module, Block)


def make_model(seed: int = 0) -> Net:
    torch.manual_seed(seed)
    return Net()


def batch(
    rank: int, step: int, device: torch.device | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s inputs and targets at ``step``: the same on every device."""
    generator = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(4, 8, generator=generator)
    if device is not None:
        x = x.to(device)
    return x, x.sum(dim=1, keepdim=True)


def local_device() -> torch.device:
    """The device this rank computes on: its GPU under NCCL, else the CPU.

    The training scripts of ``tests/fixtures/fsdp2`` pass it as FSDP1's ``device_id``
    and move their batches there, so that they run on gloo and on NCCL alike.
    """
    import torch.distributed as dist

    from tests.distributed import device_for

    return device_for(dist.get_rank() if dist.is_initialized() else 0)


def train(
    model: nn.Module,
    ranks: list[int],
    steps: int = STEPS,
    device: torch.device | None = None,
    optimizer: Callable[[Any], torch.optim.Optimizer] | None = None,
) -> list[float]:
    """SGD for ``steps`` steps on the given ranks' batches (all of them for a reference run).

    The batches are moved to ``device`` where one is given (a GPU rank's);
    ``optimizer`` builds another optimizer from the parameters. The loss is taken in
    float32 (a model computing in bf16 included).
    """
    step_with = (optimizer or (lambda params: torch.optim.SGD(params, lr=LR)))(model.parameters())
    losses = []
    for step in range(steps):
        xs, ys = zip(*(batch(rank, step, device) for rank in ranks))
        loss = nn.functional.mse_loss(model(torch.cat(xs)).float(), torch.cat(ys))
        loss.backward()
        step_with.step()
        step_with.zero_grad()
        losses.append(loss.item())
    return losses


def state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Full parameters by clean name (FSDP1 parameters gathered first)."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    from compat.checkpointing import clean_name

    # On the CPU, so runs on a GPU compare with the unsharded CPU reference.
    if isinstance(model, FullyShardedDataParallel):
        with FullyShardedDataParallel.summon_full_params(model):
            return {clean_name(n): p.detach().cpu().clone() for n, p in model.named_parameters()}
    return {clean_name(n): p.detach().cpu().clone() for n, p in model.named_parameters()}


def summary(model: nn.Module, losses: list[float]) -> dict[str, Any]:
    """What two runs must agree on: FSDP units, checkpointed modules, parameters, losses."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    from compat.checkpointing import checkpointed_names, clean_name

    return {
        "units": sorted(
            clean_name(n)
            for n, m in model.named_modules()
            if isinstance(m, FullyShardedDataParallel)
        ),
        "checkpointed": sorted(checkpointed_names(model)),
        "state": state(model),
        "losses": losses,
    }


def without_prefix(result: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A summary with ``prefix`` dropped from every name (a LightningModule's ``net.``)."""

    def strip(name: str) -> str:
        return name[len(prefix) :] if name.startswith(prefix) else name

    return {
        **result,
        "units": sorted(strip(n) for n in result["units"]),
        "checkpointed": sorted(strip(n) for n in result["checkpointed"]),
        "state": {strip(k): v for k, v in result["state"].items()},
    }


def reference_summary(
    build: Callable[[nn.Module], nn.Module] = lambda m: m,
    world_size: int = 2,
    device: torch.device | None = None,
) -> dict[str, Any]:
    """An unsharded single-process run over every rank's data (on ``device``)."""
    model = build(make_model().to(device or "cpu"))
    return summary(model, train(model, list(range(world_size)), device=device))


def lightning_module_class(lightning_pkg: str = "lightning.pytorch") -> tuple[Any, type]:
    """``(the Lightning package, a LightningModule over make_model() that keeps its losses)``.

    The loss is taken in float32, as :func:`train` takes it (a bf16 run's included).
    """
    import importlib

    L = importlib.import_module(lightning_pkg)

    class LitNet(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = make_model()
            self.losses: list[float] = []

        def training_step(self, data, index):
            x, y = data
            loss = nn.functional.mse_loss(self.net(x).float(), y)
            self.losses.append(loss.item())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return L, LitNet
