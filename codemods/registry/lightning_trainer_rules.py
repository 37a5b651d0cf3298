"""Lightning's Trainer and Fabric arguments and the LightningModule hook (FSDP204-FSDP207)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import LIGHTNING, fabric_paths, trainer_paths

#: The callables that take ``strategy=`` and ``precision=``.
TRAINER_AND_FABRIC = (
    trainer_paths("Trainer", "trainer.Trainer", "trainer.trainer.Trainer")
    + fabric_paths("Fabric", "fabric.Fabric")
    + (f"{LIGHTNING}.Trainer", f"{LIGHTNING}.Fabric")
)

RULES = (
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
        cases=(
            Example(
                before=(
                    "from lightning.fabric import Fabric\n"
                    "fabric = Fabric(accelerator='cuda', "
                    "strategy='fsdp_native_full_shard_offload')\n"
                ),
                after=(
                    "from lightning.fabric import Fabric\n"
                    "fabric = Fabric(accelerator='cuda', strategy='fsdp_cpu_offload')\n"
                ),
            ),
            # A name bound once to the old name, used only as the argument: reported at
            # each call (the literal is in another statement: for a human).
            Example.reported_only(
                "from lightning.pytorch import Trainer\n"
                'STRATEGY = "fsdp_native"\n'
                "def fit(model):\n"
                "    Trainer(strategy=STRATEGY).fit(model)\n"
            ),
            # A test parameter a parametrize list fills, one of its values the old name:
            # the old value is rewritten in the list.
            Example(
                before=(
                    "import pytest\n"
                    "from lightning.pytorch import Trainer\n"
                    '@pytest.mark.parametrize("strategy", ["ddp", "fsdp_native"])\n'
                    "def test_fit(strategy):\n"
                    "    Trainer(strategy=strategy)\n"
                ),
                after=(
                    "import pytest\n"
                    "from lightning.pytorch import Trainer\n"
                    '@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])\n'
                    "def test_fit(strategy):\n"
                    "    Trainer(strategy=strategy)\n"
                ),
            ),
            # A local bound once, passed once: rewritten where it is bound.
            Example(
                before=(
                    "from lightning.pytorch import Trainer\n"
                    "def fit(model):\n"
                    '    strategy = "fsdp_native"\n'
                    "    Trainer(strategy=strategy).fit(model)\n"
                ),
                after=(
                    "from lightning.pytorch import Trainer\n"
                    "def fit(model):\n"
                    '    strategy = "fsdp"\n'
                    "    Trainer(strategy=strategy).fit(model)\n"
                ),
            ),
            # Passed by two calls: one of them may be kept on purpose, for a human.
            Example.reported_only(
                "from lightning.pytorch import Trainer\n"
                "def fit(model):\n"
                '    strategy = "fsdp_native"\n'
                "    Trainer(strategy=strategy).fit(model)\n"
                "    Trainer(strategy=strategy).test(model)\n"
            ),
        ),
        untouched=(
            (
                "from lightning.pytorch import Trainer\n"
                'trainer = Trainer(strategy="fsdp", devices=2)\n'
            ),
            (
                "from lightning.pytorch import Trainer\n"
                'strategy = "fsdp_native"\n'
                'print(f"using {strategy}")  # used otherwise too: not only the argument\n'
                "trainer = Trainer(strategy=strategy)\n"
            ),
            ('from my_project.launch import Trainer\ntrainer = Trainer(strategy="fsdp_native")\n'),
            (
                "from lightning.pytorch import Trainer\n"
                'STRATEGY = "fsdp_native"  # the Lightning 1.x name\n'
                'trainer = Trainer(strategy="auto")\n'
            ),
        ),
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
        cases=(
            Example(
                before=(
                    "from lightning_fabric import Fabric\n"
                    "fabric = Fabric(\n"
                    "    strategy='ddp_fully_sharded',  # FairScale\n"
                    "    devices=8,\n"
                    ")\n"
                ),
                after=(
                    "from lightning_fabric import Fabric\n"
                    "fabric = Fabric(\n"
                    "    strategy='fsdp',  # FairScale\n"
                    "    devices=8,\n"
                    ")\n"
                ),
            ),
        ),
        untouched=(
            (
                "from pytorch_lightning import Trainer\n"
                'trainer = Trainer(strategy="ddp_sharded", devices=2)\n'
            ),
            (
                "from pytorch_lightning import Trainer\n"
                'config = {"strategy": "ddp_fully_sharded"}\n'
                "trainer = Trainer(**config)\n"
            ),
        ),
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
        cases=(
            Example(
                before=(
                    "from lightning.fabric import Fabric\n"
                    "fabric = Fabric(precision='bf16', devices=2)\n"
                ),
                after=(
                    "from lightning.fabric import Fabric\n"
                    "fabric = Fabric(precision='bf16-mixed', devices=2)\n"
                ),
            ),
            Example(
                before=(
                    "import lightning as L\n"
                    "fabric = L.Fabric(precision='bf16')\n"
                    'trainer = L.Trainer(precision="16")\n'
                ),
                after=(
                    "import lightning as L\n"
                    "fabric = L.Fabric(precision='bf16-mixed')\n"
                    'trainer = L.Trainer(precision="16-mixed")\n'
                ),
            ),
            # Rows of several parameters, pytest.param among them: only the old value changes.
            Example(
                before=(
                    "import pytest\n"
                    "from lightning.pytorch import Trainer\n"
                    "@pytest.mark.parametrize(\n"
                    '    ("precision", "devices"), [("32", 1), pytest.param(16, 2, id="half")]\n'
                    ")\n"
                    "def test_fit(precision, devices):\n"
                    "    Trainer(precision=precision, devices=devices)\n"
                ),
                after=(
                    "import pytest\n"
                    "from lightning.pytorch import Trainer\n"
                    "@pytest.mark.parametrize(\n"
                    '    ("precision", "devices"), '
                    '[("32", 1), pytest.param("16-mixed", 2, id="half")]\n'
                    ")\n"
                    "def test_fit(precision, devices):\n"
                    "    Trainer(precision=precision, devices=devices)\n"
                ),
            ),
        ),
        untouched=(
            (
                "import pytest\n"
                "from lightning.pytorch import Trainer\n"
                '@pytest.mark.parametrize("precision", ["bf16-mixed", 32])\n'
                "def test_fit(precision):\n"
                "    Trainer(precision=precision)\n"
            ),
            (
                "import pytest\n"
                "from lightning.pytorch import Trainer\n"
                '@pytest.mark.parametrize("precision", [16])\n'
                "def test_fit(precision):\n"
                "    print(precision)  # used otherwise too: not only the argument\n"
                "    Trainer(precision=precision)\n"
            ),
            ("from lightning.pytorch import Trainer\ntrainer = Trainer(precision=32)\n"),
            ('from lightning.pytorch import Trainer\ntrainer = Trainer(precision="bf16-mixed")\n'),
            ("from my_project.config import Trainer\ntrainer = Trainer(precision=16)\n"),
        ),
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
            # Lightning's own demo model, a LightningModule that tests subclass.
            "demos.boring_classes.BoringModel.configure_sharded_model",
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
        warns=(r"^You have overridden `\{name\}\.configure_sharded_model` which is deprecated",),
        cases=(
            Example(
                before=(
                    "import pytorch_lightning as pl\n"
                    "class Base(pl.LightningModule):\n"
                    "    pass\n"
                    "class Model(Base):\n"
                    "    def configure_sharded_model(self):\n"
                    "        self.head = wrap(Head())\n"
                ),
                after=(
                    "import pytorch_lightning as pl\n"
                    "class Base(pl.LightningModule):\n"
                    "    pass\n"
                    "class Model(Base):\n"
                    "    def configure_model(self):\n"
                    "        self.head = wrap(Head())\n"
                ),
            ),
            Example.reported_only(
                "from lightning.pytorch import LightningModule\n"
                "class Model(LightningModule):\n"
                "    def configure_model(self):\n"
                "        self.block = Block()\n"
                "    def configure_sharded_model(self):\n"
                "        self.block = wrap(self.block)\n"
            ),
            Example(
                before=(
                    "import lightning as L\n"
                    "class Model(L.LightningModule):\n"
                    "    def configure_sharded_model(self):\n"
                    "        self.block = wrap(Block())\n"
                ),
                after=(
                    "import lightning as L\n"
                    "class Model(L.LightningModule):\n"
                    "    def configure_model(self):\n"
                    "        self.block = wrap(Block())\n"
                ),
            ),
        ),
        untouched=(
            (
                "class Builder:\n"
                "    def configure_sharded_model(self):\n"
                "        return wrap(Block())\n"
            ),
            (
                "from lightning.pytorch import LightningModule\n"
                "class Model(LightningModule):\n"
                "    def configure_model(self):\n"
                "        self.block = wrap(Block())\n"
            ),
        ),
    ),
    Rule(
        code="FSDP224",
        name="fsdp-strategy-meaning",
        framework=Framework.LIGHTNING,
        # The same string means another implementation from 2.0 on, with no warning.
        kind=ChangeKind.DEFAULT_CHANGE,
        old=trainer_paths("Trainer", "trainer.Trainer", "trainer.trainer.Trainer")
        + (f"{LIGHTNING}.Trainer",),
        new=TRAINER_AND_FABRIC[0],
        argument="strategy",
        message=(
            "`Trainer(strategy=\"fsdp\")` is FairScale's FSDP on Lightning 1.x and torch's from "
            "2.0, and the releases this code runs on hold both: name the strategy "
            "(`FSDPStrategy()`, 2.0 on) or declare the Lightning releases it runs on"
        ),
        why=(
            "Lightning 1.x registered the Trainer's `\"fsdp\"` for FairScale's fully sharded "
            'strategy (`DDPFullyShardedStrategy`; torch\'s was `"fsdp_native"`). Lightning 2.0 '
            "removed FairScale and gave the name to torch's FSDP (`FSDPStrategy`), without a "
            "warning: the same line needs FairScale installed and wraps with FairScale before "
            "2.0, and shards with torch's FSDP after, whose checkpoints and wrapping (an "
            "`auto_wrap_policy`, `configure_model`) differ. Reported where the releases the "
            "code runs on hold both sides of 2.0; Fabric's and Lite's `\"fsdp\"` was always "
            "torch's. Nothing is fixed: which of the two the project means is its authors' call."
        ),
        example=Example(
            before=(
                "from pytorch_lightning import Trainer\n"
                'trainer = Trainer(strategy="fsdp", accelerator="gpu", devices=4)\n'
            ),
            after=(
                "from pytorch_lightning import Trainer\n"
                "from pytorch_lightning.strategies import FSDPStrategy\n"
                'trainer = Trainer(strategy=FSDPStrategy(), accelerator="gpu", devices=4)\n'
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.0",
        references=(
            "https://github.com/Lightning-AI/pytorch-lightning/pull/16400",
            "https://github.com/Lightning-AI/pytorch-lightning/pull/16490",
        ),
        cases=(
            Example.reported_only(
                "import pytest\n"
                "import pytorch_lightning as pl\n"
                '@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])\n'
                "def test_fit(strategy):\n"
                "    pl.Trainer(strategy=strategy, devices=2)\n"
            ),
        ),
        untouched=(
            'from lightning.fabric import Fabric\nfabric = Fabric(strategy="fsdp")\n',
            'from lightning.pytorch import Trainer\ntrainer = Trainer(strategy="ddp")\n',
            'from my_project import Trainer\ntrainer = Trainer(strategy="fsdp")\n',
        ),
    ),
)
