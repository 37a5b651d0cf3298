"""Lightning 1.x APIs that Lightning 2.0 removed or reordered with no alias (FSDP215-FSDP221).

Each fails on Lightning 2.x (ImportError, TypeError or ValueError, checked on 2.6.6).
Only the half-precision literal (FSDP220) and ``amp_backend="native"`` (FSDP218) have a
fix that means the same on every release that runs the new form; the rest are reported.
"""

from __future__ import annotations

from codemods.registry.lightning_trainer_rules import TRAINER_AND_FABRIC
from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import LIGHTNING, fabric_paths, trainer_paths

#: The Trainer and where it is imported from.
TRAINER = trainer_paths("Trainer", "trainer.Trainer", "trainer.trainer.Trainer") + (
    f"{LIGHTNING}.Trainer",
)
#: Fabric, whose ``save`` took ``(content, filepath)`` before 2.0 (FSDP221).
FABRIC = fabric_paths("Fabric", "fabric.Fabric") + (f"{LIGHTNING}.Fabric",)
#: Trainer arguments Lightning 2.0 removed (FSDP218).
REMOVED_TRAINER_ARGUMENTS = ("amp_backend", "amp_level", "track_grad_norm")
#: Lightning's AMP precision plugin, under its 1.x and 2.x names (FSDP220).
MIXED_PRECISION = trainer_paths(
    "plugins.MixedPrecisionPlugin",
    "plugins.precision.MixedPrecisionPlugin",
    "plugins.precision.amp.MixedPrecisionPlugin",
    "plugins.MixedPrecision",
    "plugins.precision.MixedPrecision",
    "plugins.precision.amp.MixedPrecision",
) + fabric_paths("plugins.MixedPrecision", "plugins.precision.MixedPrecision")
#: The FairScale sharded-DDP strategy strings Lightning 2.0 removed (FSDP215).
SHARDED_STRINGS = (
    "ddp_sharded",
    "ddp_sharded_find_unused_parameters_false",
    "ddp_sharded_spawn",
    "ddp_sharded_spawn_find_unused_parameters_false",
)
_SHARDED_WHY = (
    "Lightning 1.9 deprecated its FairScale strategies and 2.0 removed them. "
    "`DDPShardedStrategy` (`ddp_sharded`) was FairScale's ZeRO stage 2: the optimizer "
    "state and gradients sharded (`OSS` and `ShardedDataParallel`), the parameters "
    "replicated. Lightning 2.x has no strategy with exactly that layout: "
    '`FSDPStrategy(sharding_strategy="SHARD_GRAD_OP")` also shards the parameters '
    'between steps, `"deepspeed_stage_2"` needs DeepSpeed, and plain `"ddp"` shards '
    "nothing. The choice is the user's."
)

RULES = (
    Rule(
        code="FSDP215",
        name="sharded-strategy-string",
        framework=Framework.LIGHTNING,
        # Not a STRING_VALUE: no string means the same, and compat would serve such a pair.
        kind=ChangeKind.CALL_REWRITE,
        old=TRAINER_AND_FABRIC,
        new=TRAINER_AND_FABRIC[0],
        argument="strategy",
        message=(
            'the FairScale strategy `"ddp_sharded"` was removed in Lightning 2.0: choose '
            '`"fsdp"` with `sharding_strategy="SHARD_GRAD_OP"`, `"deepspeed_stage_2"` or `"ddp"`'
        ),
        why=_SHARDED_WHY,
        example=Example(
            before=(
                "from pytorch_lightning import Trainer\n"
                'trainer = Trainer(strategy="ddp_sharded", accelerator="gpu", devices=4)\n'
            ),
            after=(
                "from lightning.pytorch import Trainer\n"
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "trainer = Trainer(\n"
                '    strategy=FSDPStrategy(sharding_strategy="SHARD_GRAD_OP"),\n'
                '    accelerator="gpu",\n'
                "    devices=4,\n"
                ")\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        deprecated="1.9",
        removed="2.0",
        cases=(
            Example.reported_only(
                "import pytorch_lightning as pl\n"
                "trainer = pl.Trainer(strategy='ddp_sharded_spawn', devices=2, precision=16)\n"
            ),
        ),
        untouched=(
            'from lightning.pytorch import Trainer\ntrainer = Trainer(strategy="ddp")\n',
            'from my_project import Trainer\ntrainer = Trainer(strategy="ddp_sharded")\n',
        ),
    ),
    Rule(
        code="FSDP216",
        name="ddp-sharded-strategy",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.REMOVAL,
        old=trainer_paths(
            "strategies.DDPShardedStrategy",
            "strategies.sharded.DDPShardedStrategy",
            "strategies.DDPSpawnShardedStrategy",
            "strategies.sharded_spawn.DDPSpawnShardedStrategy",
            "plugins.DDPShardedPlugin",
            "plugins.training_type.DDPShardedPlugin",
            "plugins.training_type.sharded.DDPShardedPlugin",
            "plugins.DDPSpawnShardedPlugin",
            "plugins.training_type.DDPSpawnShardedPlugin",
            "plugins.training_type.sharded_spawn.DDPSpawnShardedPlugin",
        ),
        new=None,
        message=(
            "`DDPShardedStrategy` (FairScale's sharded DDP) was removed in Lightning 2.0: "
            'use `FSDPStrategy(sharding_strategy="SHARD_GRAD_OP")`, DeepSpeed stage 2 or DDP'
        ),
        why=_SHARDED_WHY,
        example=Example(
            before=(
                "from pytorch_lightning.strategies import DDPShardedStrategy\n"
                "trainer = Trainer(strategy=DDPShardedStrategy(find_unused_parameters=False))\n"
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                'trainer = Trainer(strategy=FSDPStrategy(sharding_strategy="SHARD_GRAD_OP"))\n'
            ),
        ),
        fix=FixSafety.MANUAL,
        deprecated="1.9",
        removed="2.0",
        cases=(
            Example.reported_only(
                "from pytorch_lightning.plugins import DDPShardedPlugin\n"
                "trainer = Trainer(plugins=[DDPShardedPlugin()], gpus=2)\n"
            ),
            Example.reported_only(
                "import pytorch_lightning as pl\n"
                "if isinstance(trainer.strategy, pl.strategies.DDPSpawnShardedStrategy):\n"
                "    pass\n"
            ),
        ),
        untouched=(
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                'strategy = FSDPStrategy(sharding_strategy="SHARD_GRAD_OP")\n'
            ),
            "from my_project.strategies import DDPShardedStrategy\n",
        ),
    ),
    Rule(
        code="FSDP217",
        name="fully-sharded-plugin",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.REMOVAL,
        old=trainer_paths(
            "plugins.FullyShardedPlugin",
            "plugins.training_type.FullyShardedPlugin",
            "plugins.training_type.fully_sharded.FullyShardedPlugin",
        ),
        new=None,
        message=(
            "`FullyShardedPlugin` is the FairScale plugin's name before Lightning 1.4 "
            "(`DDPFullyShardedPlugin`, gone in 2.0): use `FSDPStrategy` (torch FSDP)"
        ),
        why=(
            "Lightning's first FairScale FSDP plugin was written as `FullyShardedPlugin` "
            "and released in 1.4 as `DDPFullyShardedPlugin` (FSDP201); both need FairScale, "
            "which Lightning 2.0 dropped. Its arguments (`cpu_offload`, `flatten_parameters`, "
            "`reshard_after_forward`, `min_num_params`, ...) are FairScale's and need "
            "translating for `FSDPStrategy`."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.plugins import FullyShardedPlugin\n"
                "trainer = Trainer(plugins=[FullyShardedPlugin(cpu_offload=True)])\n"
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "trainer = Trainer(strategy=FSDPStrategy(cpu_offload=True))\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        removed="1.4",
        untouched=(
            "from pytorch_lightning.plugins import DDPPlugin\nplugin = DDPPlugin()\n",
            "class FullyShardedPlugin:\n    pass\nplugin = FullyShardedPlugin()\n",
        ),
    ),
    Rule(
        code="FSDP218",
        name="trainer-removed-arguments",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=TRAINER,
        new=TRAINER[0],
        message=(
            "`Trainer(amp_backend=..., amp_level=..., track_grad_norm=...)` were removed in "
            "Lightning 2.0 (TypeError)"
        ),
        why=(
            "Lightning 2.0 removed the Apex backend and with it `amp_backend` and "
            '`amp_level`: torch\'s AMP (`precision="16-mixed"`) is the only one. The fix '
            'drops `amp_backend="native"`, which was the default; Apex (`amp_backend="apex"`, '
            "`amp_level`) needs a human, and so does `track_grad_norm`, which became "
            "`lightning.pytorch.utilities.grad_norm` called from the `LightningModule`'s "
            "`on_before_optimizer_step` hook and logged there."
        ),
        example=Example(
            before=(
                "from pytorch_lightning import Trainer\n"
                'trainer = Trainer(precision=16, amp_backend="native", devices=2)\n'
            ),
            after=(
                "from pytorch_lightning import Trainer\n"
                "trainer = Trainer(precision=16, devices=2)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        removed="2.0",
        cases=(
            Example.reported_only(
                "import pytorch_lightning as pl\n"
                'trainer = pl.Trainer(amp_backend="apex", amp_level="O2", track_grad_norm=2)\n'
            ),
        ),
        untouched=(
            'from lightning.pytorch import Trainer\ntrainer = Trainer(precision="16-mixed")\n',
            'from my_project import Trainer\ntrainer = Trainer(amp_backend="native")\n',
        ),
    ),
    Rule(
        code="FSDP219",
        name="colossalai-strategy",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.REMOVAL,
        old=trainer_paths(
            "strategies.ColossalAIStrategy", "strategies.colossalai.ColossalAIStrategy"
        ),
        new=None,
        message=(
            "`ColossalAIStrategy` left Lightning in 2.0 (to the `lightning-colossalai` "
            "package, archived since): use `FSDPStrategy` or DeepSpeed"
        ),
        why=(
            "Lightning 1.8 added a ColossalAI strategy; 2.0 moved it to the external "
            "`lightning-colossalai` package (pytorch-lightning PR 16757), and 2.3 dropped "
            'even the `strategy="colossalai"` hook for it (PR 19528) after that package '
            "was archived. There is no drop-in successor: FSDP or DeepSpeed ZeRO take "
            "other arguments."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.strategies import ColossalAIStrategy\n"
                'trainer = Trainer(strategy=ColossalAIStrategy(placement_policy="cpu"))\n'
            ),
            after=(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "trainer = Trainer(strategy=FSDPStrategy(cpu_offload=True))\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        removed="2.0",
        references=(
            "https://github.com/Lightning-AI/pytorch-lightning/pull/16757",
            "https://github.com/Lightning-AI/pytorch-lightning/pull/19528",
        ),
        untouched=(
            "from lightning.pytorch.strategies import FSDPStrategy\nstrategy = FSDPStrategy()\n",
        ),
    ),
    Rule(
        code="FSDP220",
        name="mixed-precision-plugin-value",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.STRING_VALUE,
        old=MIXED_PRECISION,
        new=trainer_paths("plugins.MixedPrecision")[0],
        argument="precision",
        new_argument="precision",
        values=((16, "16-mixed"), ("16", "16-mixed"), ("bf16", "bf16-mixed")),
        message=(
            'Lightning 2.x\'s `MixedPrecision` plugin takes `"16-mixed"` or `"bf16-mixed"`; '
            '`16` and `"bf16"` raise ValueError'
        ),
        why=(
            "Lightning 1.x's `MixedPrecisionPlugin(precision, device, scaler=None)` took "
            '`16` or `"bf16"`; Lightning 2.0 renamed the values (and 2.1 the class, keeping '
            "`MixedPrecisionPlugin` as a deprecated alias) and refuses the old ones with a "
            "ValueError, unlike the Trainer, which still maps them (FSDP206). The fix writes "
            "the new value, by keyword or as the first positional argument, in the plugin "
            "and in subclasses' `super().__init__(...)` calls where the file shows the base."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                'plugin = MixedPrecisionPlugin(precision=16, device="cuda")\n'
            ),
            after=(
                "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                'plugin = MixedPrecisionPlugin(precision="16-mixed", device="cuda")\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        removed="2.0",
        # the value is also passed by position, and in subclasses' super().__init__ calls
        found_in=MIXED_PRECISION,
        cases=(
            Example(
                before=(
                    "import pytorch_lightning as pl\n"
                    'trainer = pl.Trainer(plugins=[pl.plugins.MixedPrecisionPlugin(16, "cuda")])\n'
                ),
                after=(
                    "import pytorch_lightning as pl\n"
                    'trainer = pl.Trainer(plugins=[pl.plugins.MixedPrecisionPlugin("16-mixed", '
                    '"cuda")])\n'
                ),
            ),
            Example(
                before=(
                    "from lightning.pytorch.plugins.precision import MixedPrecision\n"
                    'plugin = MixedPrecision(precision="bf16", device="cuda", scaler=None)\n'
                ),
                after=(
                    "from lightning.pytorch.plugins.precision import MixedPrecision\n"
                    'plugin = MixedPrecision(precision="bf16-mixed", device="cuda", scaler=None)\n'
                ),
            ),
            Example(
                before=(
                    "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                    "class HalfPrecisionAMP(MixedPrecisionPlugin):\n"
                    "    def __init__(self, scaler=None):\n"
                    '        super().__init__(16, "cuda", scaler)\n'
                ),
                after=(
                    "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                    "class HalfPrecisionAMP(MixedPrecisionPlugin):\n"
                    "    def __init__(self, scaler=None):\n"
                    '        super().__init__("16-mixed", "cuda", scaler)\n'
                ),
            ),
        ),
        untouched=(
            (
                "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                "def plugin_for(precision):\n"
                '    return MixedPrecisionPlugin(precision, "cuda")\n'
            ),
            (
                "class Base:\n"
                "    def __init__(self, bits, device):\n"
                "        pass\n"
                "class Plugin(Base):\n"
                "    def __init__(self):\n"
                '        super().__init__(16, "cuda")\n'
            ),
            (
                "from lightning.pytorch.plugins import MixedPrecision\n"
                'plugin = MixedPrecision("16-mixed", "cuda")\n'
            ),
            (
                "from lightning.pytorch.plugins import HalfPrecision\n"
                'plugin = HalfPrecision("16-true")\n'
            ),
        ),
    ),
    Rule(
        code="FSDP221",
        name="fabric-save-argument-order",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=tuple(f"{name}.save" for name in FABRIC),
        new=f"{FABRIC[0]}.save",
        message=(
            "`fabric.save(state, path)` is Lightning 1.x's order: since 2.0 it is "
            "`fabric.save(path, state)`"
        ),
        why=(
            "Fabric's `save` took `(content, filepath)` up to Lightning 1.9 and takes "
            "`(path, state)` since 2.0, with no deprecation. The old order still reaches "
            "the strategy, which then tries to write the path string as the checkpoint and "
            "save the state where a path should be (a real script stopped with `cannot "
            "pickle 'module' object`). The rule looks at `save` called on a name the file "
            "binds to `Fabric(...)`, with two positional arguments of which only the second "
            "is a path (a string, an f-string, `os.path.join(...)`, `Path(...)` or a `/` "
            "join); the fix swaps them. Where both could be either, nothing is said."
        ),
        example=Example(
            before=(
                "from lightning.fabric import Fabric\n"
                "fabric = Fabric()\n"
                'fabric.save({"model": model, "step": step}, "checkpoint.ckpt")\n'
            ),
            after=(
                "from lightning.fabric import Fabric\n"
                "fabric = Fabric()\n"
                'fabric.save("checkpoint.ckpt", {"model": model, "step": step})\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        removed="2.0",
        found_in=FABRIC,
        cases=(
            Example(
                before=(
                    "import os\n"
                    "import lightning as L\n"
                    "class Runner:\n"
                    "    def __init__(self):\n"
                    '        self.fabric = L.Fabric(accelerator="cpu")\n'
                    "    def checkpoint(self, state, folder, epoch):\n"
                    '        self.fabric.save(state, os.path.join(folder, f"epoch-{epoch}.ckpt"))\n'
                ),
                after=(
                    "import os\n"
                    "import lightning as L\n"
                    "class Runner:\n"
                    "    def __init__(self):\n"
                    '        self.fabric = L.Fabric(accelerator="cpu")\n'
                    "    def checkpoint(self, state, folder, epoch):\n"
                    '        self.fabric.save(os.path.join(folder, f"epoch-{epoch}.ckpt"), state)\n'
                ),
            ),
        ),
        untouched=(
            (
                "from lightning.fabric import Fabric\n"
                "fabric = Fabric()\n"
                'fabric.save("checkpoint.ckpt", {"model": model})\n'
            ),
            (
                "from lightning.fabric import Fabric\n"
                "fabric = Fabric()\n"
                "fabric.save(path, state)  # either order: nothing is said\n"
            ),
            'torch.save(state, "checkpoint.ckpt")\n',
            'trainer.save(state, "checkpoint.ckpt")\n',
        ),
    ),
)
