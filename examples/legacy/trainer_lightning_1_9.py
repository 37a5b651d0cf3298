"""A Lightning 1.9 Trainer with the FairScale strategy and integer precision."""

import pytorch_lightning as pl
from my_project.data import make_datamodule
from my_project.model import LitModel
from pytorch_lightning.strategies import DDPFullyShardedStrategy

if __name__ == "__main__":
    trainer = pl.Trainer(
        accelerator="gpu",
        devices=4,
        strategy=DDPFullyShardedStrategy(
            min_num_params=1_000_000,  # auto-wrap layers above 1M parameters
            cpu_offload=True,
            reshard_after_forward=True,
        ),
        precision=16,
        max_epochs=3,
    )
    trainer.fit(LitModel(), datamodule=make_datamodule())
