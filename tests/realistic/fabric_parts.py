"""Scripts on LightningLite (Lightning 1.8-1.9) and on Fabric through ``import lightning``.

Both carry issue 15's defects 15 and 16: ``lightning_lite`` imports, and precision
aliases (``16``, ``"bf16"``) passed to the top-level ``lightning`` re-exports.
"""

from __future__ import annotations

import random

from tests.realistic.source import fill

LITE_PINS = [
    "from lightning_lite import LightningLite",
    "from lightning_lite.strategies import FSDPStrategy",
    "from lightning_lite.utilities.seed import seed_everything",
]

_LITE = '''
class ${P}Lite(LightningLite):
    """The training loop of ``$Model``, run by LightningLite on every rank."""

    def run(self, args: argparse.Namespace) -> None:
        seed_everything(args.seed)
        model = $Model($Config())
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        model, optimizer = self.setup(model, optimizer)
        loader = self.setup_dataloaders(
            DataLoader(SyntheticDataset(), batch_size=args.batch_size, shuffle=True)
        )
        model.train()
        for epoch in range(args.epochs):
            for step, batch in enumerate(loader):
                _, loss = model(batch["input_ids"], batch["labels"])
                self.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
                if step % 50 == 0:
                    self.print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            self.barrier()
            self.save(model.state_dict(), os.path.join(args.output_dir, f"lite-{epoch}.pt"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=$lr)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output_dir", default="out")
    args = parser.parse_args()
    strategy = FSDPStrategy(
        auto_wrap_policy=partial(transformer_auto_wrap_policy, transformer_layer_cls={$Block}),
        activation_checkpointing=[$Block],
        cpu_offload=False,
    )
    lite = ${P}Lite(accelerator="cuda", devices=$devices, strategy=strategy, precision=$precision)
    lite.run(args)


if __name__ == "__main__":
    main()
'''

_FABRIC = """
def train(fabric: L.Fabric, args: argparse.Namespace) -> None:
    fabric.seed_everything(args.seed + fabric.global_rank)
    model = $Model($Config())
    model = fabric.setup_module(model)
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters(), lr=args.lr))
    loader = fabric.setup_dataloaders(DataLoader(SyntheticDataset(), batch_size=args.batch_size))
    for step, batch in enumerate(loader):
        is_accumulating = (step + 1) % args.accumulate != 0
        with fabric.no_backward_sync(model, enabled=is_accumulating):
            _, loss = model(batch["input_ids"], batch["labels"])
            fabric.backward(loss / args.accumulate)
        if is_accumulating:
            continue
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            fabric.print(f"step {step}: loss {loss.item():.4f}")
    state = {"model": model, "optimizer": optimizer, "step": step}
    fabric.save(os.path.join(args.output_dir, "final.ckpt"), state)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=$lr)
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--accumulate", type=int, default=$accumulate)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--output_dir", default="out")
    args = parser.parse_args()
    fabric = L.Fabric(accelerator="cuda", devices=$devices, strategy="fsdp", precision=$precision)
    fabric.launch()
    train(fabric, args)


if __name__ == "__main__":
    main()
"""


def lite(rng: random.Random, ctx: dict) -> str:
    """A LightningLite script (``Model``, ``Config``, ``Block``, ``P`` from ``ctx``)."""
    return fill(_LITE, lr="3e-4", devices=rng.choice([2, 4]), precision=16, **ctx)


def fabric(rng: random.Random, ctx: dict) -> str:
    """A Fabric script through ``import lightning as L``."""
    precision = rng.choice(['"bf16"', "16"])
    values = dict(lr="1e-4", devices=rng.choice([4, 8]), accumulate=rng.choice([2, 4, 8]))
    return fill(_FABRIC, precision=precision, **values, **ctx)
