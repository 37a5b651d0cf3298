"""Lightning 1.x precision plugins and Lightning Lite, renamed or removed (FSDP211-FSDP214)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import (
    LIGHTNING,
    LITE_NAMES_NOT_IN_FABRIC,
    LITE_ROOTS,
    lite_paths,
    trainer_paths,
)

RULES = (
    Rule(
        code="FSDP211",
        name="fsdp-native-precision-plugin",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=trainer_paths(
            "plugins.FullyShardedNativeNativeMixedPrecisionPlugin",
            "plugins.precision.FullyShardedNativeNativeMixedPrecisionPlugin",
            "plugins.precision.fsdp_native_native_amp.FullyShardedNativeNativeMixedPrecisionPlugin",
        ),
        new="lightning.pytorch.plugins.precision.FSDPPrecision",
        message=(
            "`FullyShardedNativeNativeMixedPrecisionPlugin` is gone; use "
            '`FSDPPrecision("16-mixed")`, or just `Trainer(precision="16-mixed")`'
        ),
        why=(
            "Lightning 2.0 renamed the torch-FSDP precision plugin with its strategy "
            "(`FSDPMixedPrecisionPlugin`, in module `fsdp` instead of "
            "`fsdp_native_native_amp`), and 2.1 and 2.2 renamed it again, to "
            "`FSDPPrecision`. Its arguments changed too: `precision` takes "
            '`"16-mixed"`/`"bf16-mixed"` (or the true-half and 32-bit forms) rather than '
            '`16`/`"bf16"`, and `device` is gone (autocast runs on CUDA), so each call needs '
            "a human. `FSDPStrategy` selects the plugin itself from `Trainer(precision=...)`."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.plugins.precision import "
                "FullyShardedNativeNativeMixedPrecisionPlugin\n"
                'plugin = FullyShardedNativeNativeMixedPrecisionPlugin(16, "cuda")\n'
            ),
            after=(
                "from lightning.pytorch.plugins.precision import FSDPPrecision\n"
                'plugin = FSDPPrecision("16-mixed")\n'
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        removed="2.0",
        references=(
            "https://github.com/Lightning-AI/pytorch-lightning/pull/16490",
            "https://github.com/Lightning-AI/pytorch-lightning/pull/18840",
        ),
        untouched=(
            "from lightning.pytorch.plugins.precision import FSDPPrecision\n"
            'plugin = FSDPPrecision("16-mixed")\n',
            "class FullyShardedNativeNativeMixedPrecisionPlugin:\n"
            "    pass\n"
            "plugin = FullyShardedNativeNativeMixedPrecisionPlugin()\n",
        ),
    ),
    Rule(
        code="FSDP212",
        name="fairscale-precision-plugin",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=trainer_paths(
            "plugins.FullyShardedNativeMixedPrecisionPlugin",
            "plugins.precision.FullyShardedNativeMixedPrecisionPlugin",
            "plugins.precision.fully_sharded_native_amp.FullyShardedNativeMixedPrecisionPlugin",
        ),
        new="lightning.pytorch.plugins.precision.FSDPPrecision",
        message=(
            "the FairScale precision plugin `FullyShardedNativeMixedPrecisionPlugin` was "
            "removed; torch FSDP's is `FSDPPrecision`"
        ),
        why=(
            "Despite its name, this plugin served the FairScale strategy "
            "`DDPFullyShardedStrategy` (FSDP202) and went away with it in Lightning 2.0, "
            "after a deprecation in 1.9. torch FSDP's plugin, `FSDPPrecision`, takes "
            '`precision="16-mixed"`/`"bf16-mixed"` and no `device`, and comes with a change '
            "of backend: rewrite by hand together with the strategy."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.plugins import FullyShardedNativeMixedPrecisionPlugin\n"
                'plugin = FullyShardedNativeMixedPrecisionPlugin("16", "cuda")\n'
            ),
            after=(
                "from lightning.pytorch.plugins.precision import FSDPPrecision\n"
                'plugin = FSDPPrecision("16-mixed")\n'
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        deprecated="1.9",
        removed="2.0",
        warns=(r"^PyTorch Lightning's sharded implementation using FairScale has been deprecated",),
        references=("https://github.com/Lightning-AI/pytorch-lightning/pull/16490",),
        untouched=(
            "from lightning.pytorch.plugins.precision import MixedPrecision\n"
            'plugin = MixedPrecision("16-mixed", "cuda")\n',
        ),
    ),
    Rule(
        code="FSDP213",
        name="lightning-lite",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=lite_paths(*LITE_NAMES_NOT_IN_FABRIC)
        + (f"{LIGHTNING}.LightningLite",)
        + trainer_paths("lite.LightningLite", "lite"),
        new="lightning.fabric.Fabric",
        message=(
            "Lightning Lite is now Fabric, and this Lite name has no counterpart in "
            "`lightning.fabric` (`LightningLite` became `Fabric`, launched with `fabric.launch()`)"
        ),
        why=(
            "Lightning 1.9 renamed Lightning Lite Fabric. `LightningLite` became `Fabric`, "
            "whose `run()` no longer launches the processes by itself (call "
            "`fabric.launch(function)`) and whose arguments are keyword-only; FairScale's and "
            "the spawn strategies, the `native` precision plugin and a few enums and modules "
            "have no counterpart under the same path. The rest of the package moved under "
            "its own names (FSDP214), once the file has none of these."
        ),
        example=Example(
            before=(
                "from lightning_lite import LightningLite\n"
                "\n"
                "\n"
                "class Lite(LightningLite):\n"
                "    def run(self, epochs):\n"
                "        train(self, epochs)\n"
                "\n"
                "\n"
                'Lite(strategy="fsdp", devices=2).run(10)\n'
            ),
            after=(
                "from lightning.fabric import Fabric\n"
                "\n"
                'fabric = Fabric(strategy="fsdp", devices=2)\n'
                "fabric.launch(train, 10)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="1.9",
        deprecated="1.9",
        removed="2.0",
        references=("https://github.com/Lightning-AI/pytorch-lightning/pull/15932",),
        untouched=(
            'from lightning.fabric import Fabric\nfabric = Fabric(accelerator="cpu", devices=2)\n',
            "class LightningLite:\n    pass\n",
        ),
    ),
    Rule(
        code="FSDP214",
        name="lightning-lite-package",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.SYMBOL_RENAME,
        old=LITE_ROOTS,
        new="lightning.fabric",
        message=(
            "Lightning Lite is now Fabric: import from `lightning_fabric` (`lightning.fabric` "
            "for `lightning.lite`); the current Fabric differs from Lite 1.8 in places (a "
            "strategy's `reduce` became `all_reduce`)"
        ),
        why=(
            "Lightning 1.9 renamed the `lightning_lite` package (the unified package's "
            "`lightning.lite`) `lightning_fabric` (`lightning.fabric`), and its modules kept "
            "their names and most of their contents. The fix moves a file's Lite imports "
            "only where every Lite name it uses exists in `lightning.fabric` under the same "
            "path (FSDP213 lists those that do not). Unsafe: it swaps the last Lite release "
            "(1.8) for the current Fabric, whose behaviour differs in places (strategies' "
            "`reduce` became `all_reduce`), and Lite objects must not meet Fabric ones "
            "created in files still on Lite."
        ),
        example=Example(
            before=(
                "from lightning_lite.strategies import FSDPStrategy\n"
                "from lightning_lite.utilities.seed import seed_everything\n"
                "seed_everything(42)\n"
                "strategy = FSDPStrategy(cpu_offload=True)\n"
            ),
            after=(
                "from lightning_fabric.strategies import FSDPStrategy\n"
                "from lightning_fabric.utilities.seed import seed_everything\n"
                "seed_everything(42)\n"
                "strategy = FSDPStrategy(cpu_offload=True)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.9",
        references=("https://github.com/Lightning-AI/pytorch-lightning/pull/15932",),
        untouched=(
            "from lightning.fabric.utilities.seed import seed_everything\nseed_everything(42)\n",
            'LITE = "lightning_lite"\n',
        ),
    ),
)
