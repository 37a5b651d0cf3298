"""Lightning calls whose arguments Lightning 2.0 changed in place (FSDP220, FSDP221).

The AMP plugin's precision values and the order of Fabric's ``save`` arguments: the same
callables, taking other values, with no deprecation. Both fixes write what Lightning
2.0 and later take, so they need a range that starts at 2.0.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import LIGHTNING, fabric_paths, trainer_paths

#: Lightning's AMP precision plugin, under its 1.x and 2.x names (FSDP220).
MIXED_PRECISION = trainer_paths(
    "plugins.MixedPrecisionPlugin",
    "plugins.precision.MixedPrecisionPlugin",
    "plugins.precision.amp.MixedPrecisionPlugin",
    "plugins.MixedPrecision",
    "plugins.precision.MixedPrecision",
    "plugins.precision.amp.MixedPrecision",
) + fabric_paths("plugins.MixedPrecision", "plugins.precision.MixedPrecision")
#: Fabric, whose ``save`` took ``(content, filepath)`` before 2.0 (FSDP221).
FABRIC = fabric_paths("Fabric", "fabric.Fabric") + (f"{LIGHTNING}.Fabric",)

RULES = (
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
            "and in subclasses' `super().__init__(...)` calls where the file shows the base. "
            "Under `fsdp-compat-run` the plugin takes the old values again, mapped as the "
            "Trainer maps them."
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
                "from pytorch_lightning.plugins import MixedPrecisionPlugin\n"
                "from pytorch_lightning.utilities import _PL_GREATER_EQUAL_2_0\n"
                "class HalfAMP(MixedPrecisionPlugin):\n"
                "    def __init__(self):\n"
                "        if _PL_GREATER_EQUAL_2_0:\n"
                '            super().__init__("16-mixed", "cuda")\n'
                "        else:\n"
                '            super().__init__(16, "cuda")\n'
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
            (
                # a gate's older branch keeps Lightning 1.x's order on purpose
                "import lightning\n"
                "from lightning.fabric import Fabric\n"
                "from packaging.version import Version\n"
                "fabric = Fabric()\n"
                'if Version(lightning.__version__) >= Version("2.0"):\n'
                '    fabric.save("checkpoint.ckpt", state)\n'
                "else:\n"
                '    fabric.save(state, "checkpoint.ckpt")\n'
            ),
        ),
    ),
)
