"""Lightning 1.x (and early 2.x) code: modules, data modules, trainers and strategies.

Templates read ``$LM`` (how the file spells ``LightningModule``: ``pl.LightningModule``,
``LightningModule`` or ``L.LightningModule``), ``$DM``, ``$Trainer``, ``$Model`` (the
network class), ``$Config`` and ``$Block``.
"""

from __future__ import annotations

import random

from tests.realistic.source import fill

_MODULE = '''
class ${P}LitModule($base):
    """Trains ``$Model`` as a language model; the network is built in the sharding hook."""

    def __init__(
        self,
        config: Optional[$Config] = None,
        learning_rate: float = $lr,
        weight_decay: float = 0.1,
        warmup_steps: int = $warmup,
        betas: Tuple[float, float] = (0.9, 0.95),
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["config"])
        self.config = config or $Config()
        self.model: Optional[$Model] = None

    def $hook(self) -> None:
        # built here so that each rank only materialises its shard under FSDP
        if self.model is None:
            self.model = $Model(self.config)

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None):
        return self.model(idx, targets)

    def training_step(self, batch: Dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        _, loss = self(batch["input_ids"], batch["labels"])
        self.log("train/loss", loss, on_step=True, prog_bar=True, sync_dist=False)
        return loss

    def validation_step(self, batch: Dict[str, torch.Tensor], batch_idx: int) -> None:
        _, loss = self(batch["input_ids"], batch["labels"])
        self.log("val/loss", loss, on_epoch=True, sync_dist=True)
        self.log("val/ppl", torch.exp(loss), on_epoch=True, sync_dist=True)

    def test_step(self, batch: Dict[str, torch.Tensor], batch_idx: int) -> None:
        _, loss = self(batch["input_ids"], batch["labels"])
        self.log("test/loss", loss, sync_dist=True)

    def configure_optimizers(self):
        # under FSDP self.parameters() are the flat sharded parameters
        optimizer = torch.optim.AdamW(
            self.parameters(),
            lr=self.hparams.learning_rate,
            weight_decay=self.hparams.weight_decay,
            betas=self.hparams.betas,
        )
        warmup = self.hparams.warmup_steps

        def schedule(step: int) -> float:
            return min(1.0, (step + 1) / warmup)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        schedule_config = {"scheduler": scheduler, "interval": "step"}
        return {"optimizer": optimizer, "lr_scheduler": schedule_config}

    def on_train_epoch_end(self) -> None:
        if self.trainer.is_global_zero:
            steps = self.trainer.global_step
            print(f"epoch {self.current_epoch} done after {steps} optimizer steps")
'''

_BASE = '''
class ${P}Base($LM):
    """Logging and optimizer set-up shared by our Lightning modules."""

    def __init__(self, learning_rate: float = $lr) -> None:
        super().__init__()
        self.learning_rate = learning_rate

    def log_metrics(self, prefix: str, metrics: Dict[str, torch.Tensor]) -> None:
        for name, value in metrics.items():
            self.log(f"{prefix}/{name}", value, sync_dist=prefix != "train")

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.learning_rate)
'''

_DATAMODULE = """
class ${P}DataModule($DM):
    def __init__(self, data_dir: str = "data", batch_size: int = $batch, num_workers: int = 4):
        super().__init__()
        self.data_dir = data_dir
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.train_set: Optional[Dataset] = None
        self.val_set: Optional[Dataset] = None

    def setup(self, stage: Optional[str] = None) -> None:
        train_path = os.path.join(self.data_dir, "train.bin")
        val_path = os.path.join(self.data_dir, "val.bin")
        if stage in (None, "fit"):
            self.train_set = TokenDataset(train_path)
            self.val_set = TokenDataset(val_path)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            self.train_set,
            batch_size=self.batch_size,
            shuffle=True,
            num_workers=self.num_workers,
            pin_memory=True,
            drop_last=True,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, num_workers=self.num_workers)
"""

_CALLBACK = '''
class ${P}PeakMemory(Callback):
    """Logs the peak CUDA memory of each rank at the end of every training epoch."""

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if not torch.cuda.is_available():
            return
        peak = torch.cuda.max_memory_allocated() / 2**30
        pl_module.log("memory/peak_gib", peak, sync_dist=False, rank_zero_only=False)
'''

_MAIN = """
def $cli_name(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=$devices)
    parser.add_argument("--num_nodes", type=int, default=1)
    parser.add_argument("--max_epochs", type=int, default=$epochs)
    parser.add_argument("--data_dir", type=str, default="data")
    parser.add_argument("--cpu_offload", action="store_true")
    args = parser.parse_args(argv)
$strategy_lines
    trainer = $Trainer(
        accelerator="gpu",
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=strategy,
        precision=$precision,
        max_epochs=args.max_epochs,
        gradient_clip_val=1.0,
        log_every_n_steps=$log_every,
        callbacks=[${P}PeakMemory()],$trainer_extra
    )
    module = ${P}LitModule()
    trainer.fit(module, datamodule=${P}DataModule(args.data_dir))
    if trainer.is_global_zero:
        print(f"best checkpoint: {trainer.checkpoint_callback.best_model_path}")
"""

STRATEGIES = {
    # defect 10: the partial is consumed by the old strategy class
    "native_partial": """    policy = partial(
        transformer_auto_wrap_policy, transformer_layer_cls={$Block}
    )
    strategy: "DDPFullyShardedNativeStrategy" = DDPFullyShardedNativeStrategy(
        cpu_offload=CPUOffload(offload_params=args.cpu_offload),
        auto_wrap_policy=policy,
        activation_checkpointing=[$Block],  # recompute blocks in backward
    )""",
    "native_chain": """    strategy = pl.strategies.DDPFullyShardedNativeStrategy(
        cpu_offload=CPUOffload(offload_params=args.cpu_offload),
        activation_checkpointing=$Block,
    )""",
    "native_string": '''    # "fsdp_native" is torch FSDP; "fsdp" is FairScale in Lightning 1.x
    offload = "fsdp_native_full_shard_offload"
    strategy = offload if args.cpu_offload else "fsdp_native"''',
    "fairscale_strategy": """    strategy = DDPFullyShardedStrategy(
        min_num_params=int($min_params),
        reshard_after_forward=True,
        cpu_offload=args.cpu_offload,
    )""",
    "fairscale_plugin": """    # Lightning 1.5: FairScale's FSDP came as a plugin
    strategy = DDPFullyShardedPlugin(
        min_num_params=int($min_params), cpu_offload=args.cpu_offload
    )""",
    "fairscale_string": """    strategy = "ddp_fully_sharded"  # FairScale's FSDP""",
    "native_name": """    name = DDPFullyShardedNativeStrategy.strategy_name
    strategy = f"{name}_full_shard_offload" if args.cpu_offload else name""",
    "fsdp_strategy_partial": """    strategy = FSDPStrategy(
        auto_wrap_policy=partial(
            transformer_auto_wrap_policy,
            transformer_layer_cls={$Block, nn.Embedding},  # blocks and the embedding
        ),
        activation_checkpointing=[$Block],
    )""",
}
"""How a Lightning script builds its strategy (``strategy`` for the ``Trainer``)."""


def lightning_module_parts(rng: random.Random, ctx: dict, strategy: str) -> list[str]:
    """A Lightning module file's parts: base, module, data module, callback, CLI."""
    values = dict(
        ctx,
        lr=rng.choice(["3e-4", "6e-4", "1e-4"]),
        warmup=rng.choice([100, 500, 2000]),
        batch=rng.choice([4, 8, 16]),
        devices=rng.choice([2, 4, 8]),
        epochs=rng.choice([1, 3, 10]),
        log_every=rng.choice([10, 25, 50]),
        min_params=rng.choice(["1e6", "1e7", "1e8"]),
        cli_name=rng.choice(["main", "cli_main", "run"]),
    )
    indirect = ctx.get("indirect", False)
    chunks = []
    if indirect:  # defect 12: the hook sits in a subclass of our own base class
        chunks.append(fill(_BASE, **values))
    base = f"{ctx['P']}Base" if indirect else ctx["LM"]
    chunks.append(fill(_MODULE, base=base, **values))
    chunks.append(fill(_DATAMODULE, **values))
    chunks.append(fill(_CALLBACK, **values))
    strategy_lines = fill(STRATEGIES[strategy], **values)
    chunks.append(fill(_MAIN, strategy_lines="    " + strategy_lines.lstrip(), **values))
    chunks.append(f'if __name__ == "__main__":\n    {values["cli_name"]}()')
    return chunks
