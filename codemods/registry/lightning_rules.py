"""API changes of Lightning's FSDP strategies, hooks and Trainer arguments (FSDP2xx).

Lightning code reaches the same class under several roots: the standalone
``pytorch_lightning`` and ``lightning_fabric`` packages and the unified ``lightning``
package (``lightning.pytorch``, ``lightning.fabric``); every rule lists each of them.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import (
    LIGHTNING,
    LITE_NAMES_NOT_IN_FABRIC,
    LITE_ROOTS,
    fabric_paths,
    lite_paths,
    trainer_paths,
)

#: Where ``FSDPStrategy`` lives, on both the Trainer and the Fabric side.
FSDP_STRATEGY = trainer_paths("strategies.FSDPStrategy", "strategies.fsdp.FSDPStrategy") + (
    fabric_paths("strategies.FSDPStrategy", "strategies.fsdp.FSDPStrategy")
)


def compat_paths(*names: str) -> tuple[str, ...]:
    """The names of compat's stand-ins called ``names``, in each of its flavours.

    Example:
        >>> compat_paths("DDPFullyShardedPlugin")[1]
        'compat.strategies.fabric.DDPFullyShardedPlugin'
    """
    return tuple(
        f"compat.strategies.{flavour}{name}"
        for name in names
        for flavour in ("", "fabric.", "pytorch_lightning.")
    )


#: compat's stand-ins for the removed strategies, which take the same old arguments.
COMPAT_STRATEGIES = compat_paths("DDPFullyShardedStrategy", "DDPFullyShardedNativeStrategy")
#: The callables that take ``strategy=`` and ``precision=``, the unified package's
#: top-level re-exports (``import lightning as L; L.Trainer``) last.
TRAINER_AND_FABRIC = (
    trainer_paths("Trainer", "trainer.Trainer", "trainer.trainer.Trainer")
    + fabric_paths("Fabric", "fabric.Fabric")
    + (f"{LIGHTNING}.Trainer", f"{LIGHTNING}.Fabric")
)

RULES = (
    Rule(
        code="FSDP201",
        name="ddp-fully-sharded-plugin",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        # Only ever in pytorch_lightning: the unified package arrived after its removal.
        old=(
            "pytorch_lightning.plugins.DDPFullyShardedPlugin",
            "pytorch_lightning.plugins.training_type.DDPFullyShardedPlugin",
            "pytorch_lightning.plugins.training_type.fully_sharded.DDPFullyShardedPlugin",
            *compat_paths("DDPFullyShardedPlugin"),
        ),
        new="lightning.pytorch.strategies.FSDPStrategy",
        message=(
            "the FairScale plugin `DDPFullyShardedPlugin` is gone; use torch FSDP through "
            "`FSDPStrategy`"
        ),
        why=(
            "Lightning 1.6 renamed the plugin `DDPFullyShardedStrategy` (the old name warned "
            "until its removal in 1.8), and that FairScale strategy was itself removed in "
            "Lightning 2.0. Moving to torch FSDP changes the backend: rewrite by hand, "
            "starting from the `FSDP202` translation."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.plugins import DDPFullyShardedPlugin\n"
                "trainer = Trainer(plugins=[DDPFullyShardedPlugin()])\n"
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "trainer = Trainer(strategy=FSDPStrategy())\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.0",
        deprecated="1.6",
        removed="1.8",
    ),
    Rule(
        code="FSDP202",
        name="ddp-fully-sharded-strategy",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=trainer_paths(
            "strategies.DDPFullyShardedStrategy",
            "strategies.fully_sharded.DDPFullyShardedStrategy",
        )
        + (
            # The unreleased lightning-Fairscale extension kept the 1.9 class alive.
            "lightning_fairscale.strategies.DDPFullyShardedStrategy",
            "lightning_fairscale.strategies.fully_sharded.DDPFullyShardedStrategy",
            "pl_fairscale.strategies.DDPFullyShardedStrategy",
            *compat_paths("DDPFullyShardedStrategy"),
        ),
        new="lightning.pytorch.strategies.FSDPStrategy",
        message=(
            "the FairScale `DDPFullyShardedStrategy` was removed in Lightning 2.0; use "
            "`FSDPStrategy` (torch FSDP) with translated arguments"
        ),
        why=(
            "Lightning deprecated its FairScale integration in 1.9 and removed it in 2.0; "
            "torch's own FSDP behind `FSDPStrategy` replaces it. The switch changes the "
            "sharding backend and the checkpoint format, and `min_num_params` only steered "
            "`auto_wrap()` calls inside `configure_sharded_model` (1.8 and 1.9 otherwise wrapped "
            "just the root), so the translation to an `auto_wrap_policy` is opt-in."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.strategies import DDPFullyShardedStrategy\n"
                "strategy = DDPFullyShardedStrategy(\n"
                "    min_num_params=100_000,\n"
                "    cpu_offload=True,\n"
                ")\n"
            ),
            after=(
                "from pytorch_lightning.strategies import FSDPStrategy\n"
                "from functools import partial\n"
                "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "\n"
                "strategy = FSDPStrategy(\n"
                "    auto_wrap_policy=partial("
                "size_based_auto_wrap_policy, min_num_params=100_000),\n"
                "    cpu_offload=True,\n"
                ")\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.0",
        deprecated="1.9",
        removed="2.0",
    ),
    Rule(
        code="FSDP203",
        name="ddp-fully-sharded-native-strategy",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.SYMBOL_RENAME,
        old=trainer_paths(
            "strategies.DDPFullyShardedNativeStrategy",
            "strategies.fully_sharded_native.DDPFullyShardedNativeStrategy",
        ),
        new="lightning.pytorch.strategies.FSDPStrategy",
        message="`DDPFullyShardedNativeStrategy` was renamed `FSDPStrategy`",
        why=(
            "Lightning 2.0 renamed its torch-FSDP strategy (added in 1.7) when the FairScale "
            "one went away, with no deprecation period: the old name no longer imports. The "
            "arguments are unchanged."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy\n"
                "strategy = DDPFullyShardedNativeStrategy(cpu_offload=True)\n"
            ),
            after=(
                "from pytorch_lightning.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(cpu_offload=True)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        removed="2.0",
    ),
    Rule(
        code="FSDP204",
        name="native-fsdp-strategy-string",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.STRING_VALUE,
        old=TRAINER_AND_FABRIC,
        new=TRAINER_AND_FABRIC[0],
        argument="strategy",
        new_argument="strategy",
        values=(("fsdp_native", "fsdp"), ("fsdp_native_full_shard_offload", "fsdp_cpu_offload")),
        message='the strategy names of torch FSDP are now `"fsdp"` and `"fsdp_cpu_offload"`',
        why=(
            "Lightning 2.0 gave the torch-FSDP strategy the short names once used by "
            "FairScale; the `fsdp_native*` names are no longer registered and raise "
            "`ValueError: You selected an invalid strategy name`."
        ),
        example=Example(
            before=(
                "from lightning.pytorch import Trainer\n"
                'trainer = Trainer(strategy="fsdp_native", devices=2)\n'
            ),
            after=(
                "from lightning.pytorch import Trainer\n"
                'trainer = Trainer(strategy="fsdp", devices=2)\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        removed="2.0",
    ),
    Rule(
        code="FSDP205",
        name="fairscale-strategy-string",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.STRING_VALUE,
        old=TRAINER_AND_FABRIC,
        new=TRAINER_AND_FABRIC[0],
        argument="strategy",
        new_argument="strategy",
        values=(("ddp_fully_sharded", "fsdp"),),
        message='the FairScale strategy `"ddp_fully_sharded"` was removed; `"fsdp"` is torch FSDP',
        why=(
            'Lightning 2.0 removed the FairScale strategies. Before 2.0 the name `"fsdp"` '
            'also meant FairScale; since 2.0 it means torch FSDP, so code that said `"fsdp"` '
            "on Lightning 1.x silently changed backend. The fix changes the backend and is "
            "opt-in."
        ),
        example=Example(
            before=(
                "from pytorch_lightning import Trainer\n"
                'trainer = Trainer(strategy="ddp_fully_sharded", devices=2)\n'
            ),
            after=(
                "from pytorch_lightning import Trainer\n"
                'trainer = Trainer(strategy="fsdp", devices=2)\n'
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.0",
        deprecated="1.9",
        removed="2.0",
    ),
    Rule(
        code="FSDP206",
        name="legacy-precision",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.STRING_VALUE,
        old=TRAINER_AND_FABRIC,
        new=TRAINER_AND_FABRIC[0],
        argument="precision",
        new_argument="precision",
        # 32 and 64 are still accepted without a warning, so they are left alone.
        values=((16, "16-mixed"), ("16", "16-mixed"), ("bf16", "bf16-mixed")),
        message='spell half precision as `"16-mixed"` or `"bf16-mixed"`',
        why=(
            'Lightning 2.0 made precision say whether it is mixed or true; `16`, `"16"` and '
            '`"bf16"` are kept only for historical reasons and warn that their use is '
            "discouraged."
        ),
        example=Example(
            before="from lightning.pytorch import Trainer\ntrainer = Trainer(precision=16)\n",
            after=(
                'from lightning.pytorch import Trainer\ntrainer = Trainer(precision="16-mixed")\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        deprecated="2.0",
    ),
    Rule(
        code="FSDP207",
        name="configure-sharded-model",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.METHOD_RENAME,
        old=trainer_paths(
            "LightningModule.configure_sharded_model",
            "core.LightningModule.configure_sharded_model",
            "core.module.LightningModule.configure_sharded_model",
        )
        + (f"{LIGHTNING}.LightningModule.configure_sharded_model",),
        new="lightning.pytorch.LightningModule.configure_model",
        message="the hook `configure_sharded_model` was renamed `configure_model`",
        why=(
            "Lightning 2.1 renamed the hook, which now runs for every strategy, and deprecated "
            "the old name; overriding both raises RuntimeError, and with the old one "
            "`FSDPStrategy` skips wrapping the root module."
        ),
        example=Example(
            before=(
                "from lightning.pytorch import LightningModule\n"
                "class Model(LightningModule):\n"
                "    def configure_sharded_model(self):\n"
                "        self.block = wrap(Block())\n"
            ),
            after=(
                "from lightning.pytorch import LightningModule\n"
                "class Model(LightningModule):\n"
                "    def configure_model(self):\n"
                "        self.block = wrap(Block())\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
        deprecated="2.1",
    ),
    Rule(
        code="FSDP208",
        name="fsdp-activation-checkpointing",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=FSDP_STRATEGY
        + trainer_paths(
            "strategies.DDPFullyShardedNativeStrategy",
            "strategies.fully_sharded_native.DDPFullyShardedNativeStrategy",
        )
        + COMPAT_STRATEGIES,
        new=FSDP_STRATEGY[0],
        argument="activation_checkpointing",
        new_argument="activation_checkpointing_policy",
        message=(
            "pass the classes to checkpoint as a set: `activation_checkpointing_policy={Block}`"
        ),
        why=(
            "Lightning 2.1 replaced `activation_checkpointing` (a class or list of classes) "
            "with `activation_checkpointing_policy`, which also takes a torch policy; the old "
            "argument warns."
        ),
        example=Example(
            before=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(activation_checkpointing=[Block, Head])\n"
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(activation_checkpointing_policy={Block, Head})\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
        deprecated="2.1",
    ),
    Rule(
        code="FSDP209",
        name="fsdp-auto-wrap-partial",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=FSDP_STRATEGY,
        new=FSDP_STRATEGY[0],
        argument="auto_wrap_policy",
        new_argument="auto_wrap_policy",
        message=(
            "pass the layer classes directly: `auto_wrap_policy={Block}` instead of a "
            "`transformer_auto_wrap_policy` partial"
        ),
        why=(
            "Since Lightning 2.1 `FSDPStrategy(auto_wrap_policy=...)` takes a set of module "
            "classes and builds the `ModuleWrapPolicy` itself."
        ),
        example=Example(
            before=(
                "from functools import partial\n"
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                "strategy = FSDPStrategy(\n"
                "    auto_wrap_policy=partial(transformer_auto_wrap_policy, "
                "transformer_layer_cls={Block})\n"
                ")\n"
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(\n    auto_wrap_policy={Block}\n)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
    ),
    Rule(
        code="FSDP210",
        name="compat-native-strategy",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=compat_paths("DDPFullyShardedNativeStrategy"),
        new="lightning.pytorch.strategies.FSDPStrategy",
        message=(
            "compat's `DDPFullyShardedNativeStrategy` is Lightning's `FSDPStrategy`; "
            "import that instead"
        ),
        why=(
            "compat keeps the Lightning 1.x name working on Lightning 2.x, translating its "
            "old arguments at run time; `FSDPStrategy` from the Lightning package the file "
            "uses is the current API. Unsafe: compat also runs the strategy on CPU (gloo), "
            "which Lightning's own `FSDPStrategy` refuses."
        ),
        example=Example(
            before=(
                "from compat.strategies import DDPFullyShardedNativeStrategy\n"
                "strategy = DDPFullyShardedNativeStrategy(auto_wrap_policy=[Block])\n"
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(auto_wrap_policy={Block})\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.0",
    ),
    Rule(
        code="FSDP211",
        name="fsdp-native-precision-plugin",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=trainer_paths(
            "plugins.FullyShardedNativeNativeMixedPrecisionPlugin",
            "plugins.precision.FullyShardedNativeNativeMixedPrecisionPlugin",
            "plugins.precision.fsdp_native_native_amp.FullyShardedNativeNativeMixedPrecisionPlugin",
            "plugins.precision.fsdp_native_native_amp",
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
            "plugins.precision.fully_sharded_native_amp",
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
        references=("https://github.com/Lightning-AI/pytorch-lightning/pull/16490",),
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
            "`LightningLite` is now `Fabric`, launched with `fabric.launch()`; this Lite name "
            "has no counterpart in `lightning.fabric`"
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
    ),
    Rule(
        code="FSDP214",
        name="lightning-lite-package",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.SYMBOL_RENAME,
        old=LITE_ROOTS,
        new="lightning.fabric",
        message="Lightning Lite is now Fabric: import from `lightning.fabric`",
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
                "from lightning.fabric.strategies import FSDPStrategy\n"
                "from lightning.fabric.utilities.seed import seed_everything\n"
                "seed_everything(42)\n"
                "strategy = FSDPStrategy(cpu_offload=True)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.9",
        references=("https://github.com/Lightning-AI/pytorch-lightning/pull/15932",),
    ),
)
