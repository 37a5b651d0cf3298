"""The arguments of Lightning's ``FSDPStrategy`` that changed in 2.1 (FSDP208, FSDP209)."""

from __future__ import annotations

from codemods.registry.lightning_rules import compat_paths
from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import fabric_paths, trainer_paths

#: Where ``FSDPStrategy`` lives, on both the Trainer and the Fabric side.
FSDP_STRATEGY = trainer_paths("strategies.FSDPStrategy", "strategies.fsdp.FSDPStrategy") + (
    fabric_paths("strategies.FSDPStrategy", "strategies.fsdp.FSDPStrategy")
)
#: compat's stand-ins for the removed strategies, which take the same old arguments.
COMPAT_STRATEGIES = compat_paths("DDPFullyShardedStrategy", "DDPFullyShardedNativeStrategy")

RULES = (
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
            "argument warns. A strategy registered with it "
            "(`StrategyRegistry.register(name, FSDPStrategy, activation_checkpointing=...)`) "
            "warns when a Trainer builds it by name, and is reported and fixed alike."
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
        warns=(r"^`FSDPStrategy\(activation_checkpointing=\{activation_checkpointing\}\)` is",),
        cases=(
            Example(
                before=(
                    "from lightning.fabric.strategies import FSDPStrategy\n"
                    "from my_model import Block\n"
                    "strategy = FSDPStrategy(activation_checkpointing=Block, cpu_offload=True)\n"
                ),
                after=(
                    "from lightning.fabric.strategies import FSDPStrategy\n"
                    "from my_model import Block\n"
                    "strategy = FSDPStrategy(activation_checkpointing_policy={Block}, "
                    "cpu_offload=True)\n"
                ),
            ),
            Example.reported_only(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(activation_checkpointing=checkpointed(config))\n"
            ),
        ),
        untouched=(
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(activation_checkpointing_policy={Block})\n"
            ),
            (
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, activation_checkpointing=Block)\n"
            ),
        ),
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
        cases=(
            Example(
                before=(
                    "import functools\n"
                    "from lightning.pytorch.strategies import FSDPStrategy\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    "strategy = FSDPStrategy(\n"
                    "    auto_wrap_policy=functools.partial(\n"
                    "        transformer_auto_wrap_policy,\n"
                    "        transformer_layer_cls={Block},  # one FSDP unit per block\n"
                    "    ),\n"
                    "    cpu_offload=False,\n"
                    ")\n"
                ),
                after=(
                    "from lightning.pytorch.strategies import FSDPStrategy\n"
                    "strategy = FSDPStrategy(\n"
                    "    auto_wrap_policy={Block},  # one FSDP unit per block\n"
                    "    cpu_offload=False,\n"
                    ")\n"
                ),
            ),
            Example.reported_only(
                "from functools import partial\n"
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                "strategy = FSDPStrategy(\n"
                "    auto_wrap_policy=partial(transformer_auto_wrap_policy, "
                "transformer_layer_cls=layers)\n"
                ")\n"
            ),
        ),
        untouched=(
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(auto_wrap_policy={Block})\n"
            ),
            (
                "from functools import partial\n"
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "strategy = FSDPStrategy(\n"
                "    auto_wrap_policy=partial(size_based_auto_wrap_policy, min_num_params=10**6)\n"
                ")\n"
            ),
        ),
    ),
)
