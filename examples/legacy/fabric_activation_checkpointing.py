"""A Fabric training script from the Lightning 2.0 days: FSDP with a transformer policy
partial and the old `activation_checkpointing` argument.
"""

from functools import partial

import torch
import torch.nn as nn
from lightning.fabric import Fabric
from lightning.fabric.strategies import FSDPStrategy
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


class Block(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.attn = nn.Linear(width, width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


def main() -> None:
    strategy = FSDPStrategy(
        # one FSDP unit per transformer block
        auto_wrap_policy=partial(transformer_auto_wrap_policy, transformer_layer_cls={Block}),
        activation_checkpointing=Block,  # recompute blocks in backward
        cpu_offload=False,
    )
    fabric = Fabric(accelerator="cuda", devices=2, strategy=strategy, precision="bf16")
    fabric.launch()
    model = fabric.setup_module(nn.Sequential(*[Block() for _ in range(8)]))
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters(), lr=1e-4))
    for _ in range(10):
        loss = model(torch.randn(8, 64, device=fabric.device)).pow(2).mean()
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
