"""A LightningModule that builds its big layers in `configure_sharded_model`, wrapping
them by hand, trained with the native FSDP strategy by its Lightning 1.x name.
"""

import torch
import torch.nn as nn
from lightning.pytorch import LightningModule, Trainer
from torch.distributed.fsdp.wrap import wrap


class BigModel(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(1024, 10)

    def configure_sharded_model(self):
        # created inside the sharded context so each layer is wrapped as it is built
        self.layers = nn.Sequential(*[wrap(nn.Linear(1024, 1024)) for _ in range(24)])

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.head(self.layers(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


if __name__ == "__main__":
    trainer = Trainer(strategy="fsdp_native", accelerator="gpu", devices=8, precision="bf16")
    trainer.fit(BigModel())
