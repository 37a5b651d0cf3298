"""Lightning 1.x APIs that Lightning 2.0 removed with no alias (FSDP215-FSDP219, FSDP222, FSDP223).

Each fails on Lightning 2.x (ImportError, TypeError or ValueError, checked on 2.6.6).
``amp_backend="native"`` (FSDP218) is dropped, and ``NativeMixedPrecisionPlugin(16, ...)``
(FSDP222) becomes ``MixedPrecisionPlugin("16-mixed", ...)``; the rest are reported.
Calls whose arguments 2.0 changed are in :mod:`codemods.registry.lightning_call_rules`.
"""

from __future__ import annotations

from codemods.registry.lightning_trainer_rules import TRAINER_AND_FABRIC
from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import LIGHTNING, trainer_paths

#: The Trainer and where it is imported from.
TRAINER = trainer_paths("Trainer", "trainer.Trainer", "trainer.trainer.Trainer") + (
    f"{LIGHTNING}.Trainer",
)
#: Where a file visibly holds a Trainer (FSDP223 reads attributes of the Trainer only there).
TRAINER_HOLDERS = (
    *TRAINER,
    *trainer_paths("LightningModule", "core.LightningModule", "core.module.LightningModule"),
    *trainer_paths("Callback", "callbacks.Callback", "callbacks.callback.Callback"),
    f"{LIGHTNING}.LightningModule",
    f"{LIGHTNING}.Callback",
)
#: Trainer arguments Lightning 2.0 removed (FSDP218).
REMOVED_TRAINER_ARGUMENTS = ("amp_backend", "amp_level", "track_grad_norm")
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
            'FairScale\'s sharded strategies (`"ddp_sharded"`, `"ddp_sharded_spawn"` and their '
            "`_find_unused_parameters_false` forms) were removed in Lightning 2.0: choose "
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
            "FairScale's sharded DDP (`DDPShardedStrategy`, `DDPSpawnShardedStrategy`, their "
            "plugins) was removed in Lightning 2.0: use "
            '`FSDPStrategy(sharding_strategy="SHARD_GRAD_OP")`, DeepSpeed stage 2 or DDP'
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
        code="FSDP222",
        name="native-mixed-precision-plugin",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.CALL_REWRITE,
        old=trainer_paths(
            "plugins.NativeMixedPrecisionPlugin",
            "plugins.precision.NativeMixedPrecisionPlugin",
            "plugins.precision.native_amp.NativeMixedPrecisionPlugin",
        ),
        new="lightning.pytorch.plugins.MixedPrecisionPlugin",
        message=(
            "`NativeMixedPrecisionPlugin` was removed in Lightning 2.0: use "
            '`MixedPrecisionPlugin("16-mixed", device)` (`MixedPrecision` since 2.1)'
        ),
        why=(
            "Lightning 1.x's AMP plugin was `NativeMixedPrecisionPlugin(precision, device, "
            "scaler=None)`; 1.9 renamed it `MixedPrecisionPlugin` (the old name deprecated) "
            'and 2.0 removed the old name and took only `"16-mixed"` / `"bf16-mixed"`, so '
            "both the name and the value change (FSDP220 is the value alone). The fix does "
            "both where the precision is a literal, for Lightning 2.0 and later; "
            "`MixedPrecisionPlugin` is a deprecated alias of `MixedPrecision` since 2.1."
        ),
        example=Example(
            before=(
                "from pytorch_lightning.plugins import NativeMixedPrecisionPlugin\n"
                'plugin = NativeMixedPrecisionPlugin(16, "cuda", torch.cuda.amp.GradScaler())\n'
            ),
            after=(
                "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                'plugin = MixedPrecisionPlugin("16-mixed", "cuda", torch.cuda.amp.GradScaler())\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        deprecated="1.9",
        removed="2.0",
        cases=(
            Example(
                before=(
                    "import pytorch_lightning as pl\n"
                    "amp = pl.plugins.precision.NativeMixedPrecisionPlugin(precision='bf16', "
                    "device='cuda')\n"
                ),
                after=(
                    "from pytorch_lightning.plugins import MixedPrecisionPlugin\n\n"
                    "amp = MixedPrecisionPlugin(precision='bf16-mixed', device='cuda')\n"
                ),
            ),
            Example.reported_only(
                "from pytorch_lightning.plugins import NativeMixedPrecisionPlugin\n"
                "def amp_plugin(precision):\n"
                '    return NativeMixedPrecisionPlugin(precision, "cuda")\n'
            ),
        ),
        untouched=(
            (
                "from lightning.pytorch.plugins import MixedPrecision\n"
                'plugin = MixedPrecision("16-mixed", "cuda")\n'
            ),
            "from my_project.amp import NativeMixedPrecisionPlugin\n",
        ),
    ),
    Rule(
        code="FSDP223",
        name="trainer-amp-backend-attribute",
        framework=Framework.LIGHTNING,
        kind=ChangeKind.REMOVAL,
        old=tuple(f"{trainer}.amp_backend" for trainer in TRAINER),
        new=None,
        message=(
            "`trainer.amp_backend` was removed in Lightning 2.0 (AttributeError): there is "
            "no AMP backend to read; `trainer.precision` says what runs"
        ),
        why=(
            "Lightning 1.x chose mixed precision's implementation with "
            "`Trainer(amp_backend=...)` (torch's AMP or NVIDIA Apex, FSDP218) and exposed "
            "the choice as `trainer.amp_backend`. 2.0 removed Apex, the argument and the "
            "attribute: reading it raises AttributeError. Nothing replaces it one for one: "
            '`trainer.precision` (`"16-mixed"`, `"bf16-mixed"`, `"32-true"`) and the '
            "precision plugin (`trainer.precision_plugin`) say what runs, and which of them "
            "answers the code's question is a human's call, so no fix is written. Reported "
            "where the receiver is visibly the Trainer: `self.trainer` or "
            "`pl_module.trainer`, a parameter annotated `Trainer`, a name bound only from "
            "`Trainer(...)`."
        ),
        example=Example(
            before=(
                "import pytorch_lightning as pl\n\n\n"
                "class Model(pl.LightningModule):\n"
                "    def on_fit_start(self):\n"
                '        self.print("AMP:", self.trainer.amp_backend)\n'
            ),
            after=(
                "import pytorch_lightning as pl\n\n\n"
                "class Model(pl.LightningModule):\n"
                "    def on_fit_start(self):\n"
                '        self.print("precision:", self.trainer.precision)\n'
            ),
        ),
        fix=FixSafety.MANUAL,
        removed="2.0",
        found_in=TRAINER_HOLDERS,
        cases=(
            Example.reported_only(
                "from pytorch_lightning import Callback\n\n\n"
                "class Report(Callback):\n"
                "    def on_train_start(self, trainer, pl_module):\n"
                "        print(pl_module.trainer.amp_backend)\n"
            ),
            Example.reported_only(
                "from lightning.pytorch import Trainer\n\n"
                "trainer = Trainer(precision=16)\n"
                "if trainer.amp_backend is not None:\n"
                '    print("mixed precision")\n'
            ),
            Example.reported_only(
                "import pytorch_lightning as pl\n\n\n"
                "def uses_apex(trainer: pl.Trainer) -> bool:\n"
                '    return str(trainer.amp_backend) == "AMPType.APEX"\n'
            ),
        ),
        untouched=(
            "import pytorch_lightning as pl\n\n\ndef backend(args):\n    return args.amp_backend\n",
            "from pytorch_lightning import Trainer\nfrom my_project import MyTrainer\n\n"
            "trainer = MyTrainer()\nprint(trainer.amp_backend)\n",
            "from pytorch_lightning import Trainer\n\ntrainer = Trainer()\n"
            "for trainer in [trainer, None]:\n    print(trainer.amp_backend)\n",
        ),
    ),
)
