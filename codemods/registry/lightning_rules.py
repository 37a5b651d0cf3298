"""Lightning's FSDP strategy classes: removed, renamed, and compat's stand-ins (FSDP201-203, 210).

Lightning code reaches the same class under several roots: the standalone
``pytorch_lightning`` and ``lightning_fabric`` packages and the unified ``lightning``
package (``lightning.pytorch``, ``lightning.fabric``); every rule lists each of them.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import trainer_paths


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
        cases=(
            Example.reported_only(
                "from pytorch_lightning import Trainer\n"
                "from pytorch_lightning.plugins.training_type import DDPFullyShardedPlugin\n"
                "plugin = DDPFullyShardedPlugin(cpu_offload=True)\n"
                "trainer = Trainer(gpus=8, plugins=[plugin])\n"
            ),
        ),
        untouched=(
            (
                "from pytorch_lightning.plugins import DDPPlugin\n"
                "trainer = Trainer(plugins=[DDPPlugin(find_unused_parameters=False)])\n"
            ),
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "trainer = Trainer(strategy=FSDPStrategy())\n"
            ),
        ),
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
            "`FSDPStrategy` (torch FSDP) with translated arguments: another sharding backend, "
            "with its own checkpoint format"
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
        warns=(r"^PyTorch Lightning's sharded implementation using FairScale has been deprecated",),
        cases=(
            Example(
                before=(
                    "from pytorch_lightning import Trainer\n"
                    "from pytorch_lightning.strategies import DDPFullyShardedStrategy\n"
                    "trainer = Trainer(strategy=DDPFullyShardedStrategy(), devices=4)\n"
                ),
                after=(
                    "from pytorch_lightning import Trainer\n"
                    "from pytorch_lightning.strategies import FSDPStrategy\n"
                    "trainer = Trainer(strategy=FSDPStrategy(), devices=4)\n"
                ),
            ),
            Example.reported_only(
                "from pytorch_lightning.strategies import DDPFullyShardedStrategy\n"
                "strategy = DDPFullyShardedStrategy(**fsdp_options)\n"
            ),
        ),
        untouched=(
            (
                "from pytorch_lightning.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(cpu_offload=True)\n"
            ),
            (
                "from pytorch_lightning.strategies import DDPShardedStrategy\n"
                "strategy = DDPShardedStrategy()\n"
            ),
            (
                "from pytorch_lightning.utilities.imports import _TORCH_GREATER_EQUAL_1_12\n"
                "if _TORCH_GREATER_EQUAL_1_12:\n"
                "    from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy as "
                "Sharded\n"
                "else:\n"
                "    from pytorch_lightning.strategies import DDPFullyShardedStrategy as Sharded\n"
            ),
        ),
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
        cases=(
            Example(
                before=(
                    "from pytorch_lightning.strategies.fully_sharded_native import (\n"
                    "    DDPFullyShardedNativeStrategy,  # torch FSDP\n"
                    ")\n"
                    "def is_sharded(trainer):\n"
                    "    return isinstance(trainer.strategy, DDPFullyShardedNativeStrategy)\n"
                ),
                after=(
                    "from pytorch_lightning.strategies import (\n"
                    "    FSDPStrategy,  # torch FSDP\n"
                    ")\n"
                    "def is_sharded(trainer):\n"
                    "    return isinstance(trainer.strategy, FSDPStrategy)\n"
                ),
            ),
            Example(
                before=(
                    "import pytorch_lightning as pl\n"
                    "strategy = pl.strategies.DDPFullyShardedNativeStrategy(cpu_offload=True)\n"
                ),
                after=(
                    "import pytorch_lightning as pl\n"
                    "strategy = pl.strategies.FSDPStrategy(cpu_offload=True)\n"
                ),
            ),
        ),
        untouched=(
            (
                "from compat.strategies import DDPFullyShardedNativeStrategy\n"
                "strategy = DDPFullyShardedNativeStrategy(cpu_offload=True)\n"
            ),
            (
                "class DDPFullyShardedNativeStrategy:\n"
                "    name = 'fsdp_native'\n"
                "strategy = DDPFullyShardedNativeStrategy()\n"
            ),
        ),
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
            "import that instead (Lightning's refuses the CPU runs compat's allowed)"
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
        cases=(
            Example(
                before=(
                    "from compat.strategies.pytorch_lightning import "
                    "DDPFullyShardedNativeStrategy\n"
                    "from pytorch_lightning import Trainer\n"
                    "trainer = Trainer(strategy=DDPFullyShardedNativeStrategy(cpu_offload=True))\n"
                ),
                after=(
                    "from pytorch_lightning.strategies import FSDPStrategy\n"
                    "from pytorch_lightning import Trainer\n"
                    "trainer = Trainer(strategy=FSDPStrategy(cpu_offload=True))\n"
                ),
            ),
        ),
        untouched=(
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(auto_wrap_policy={Block})\n"
            ),
            (
                "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy\n"
                "strategy = DDPFullyShardedNativeStrategy(cpu_offload=True)\n"
            ),
        ),
    ),
)
