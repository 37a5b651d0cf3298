"""The compat shim's FSDP names and the legacy arguments it takes (FSDP109, 110, 112, 113)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import (
    CHECKPOINT_WRAPPER,
    COMPAT_FSDP_CLASSES,
    COMPAT_WRAP,
    TORCH_FSDP_CLASSES,
    TORCH_WRAP,
)

WRAP = TORCH_WRAP
COMPAT_FSDP = COMPAT_FSDP_CLASSES
#: compat.fsdp.wrap names that torch has under the same name, with the same meaning.
COMPAT_WRAP_NATIVE = tuple(
    f"{COMPAT_WRAP}.{name}"
    for name in (
        "ModuleWrapPolicy",
        "CustomPolicy",
        "always_wrap_policy",
        "enable_wrap",
        "wrap",
        "size_based_auto_wrap_policy",
    )
)

RULES = (
    Rule(
        code="FSDP109",
        name="fsdp-cpu-offload-bool",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=COMPAT_FSDP,
        new=TORCH_FSDP_CLASSES[0],
        argument="cpu_offload",
        message="pass `cpu_offload=CPUOffload(offload_params=True)`; torch's FSDP takes no bool",
        why=(
            "Lightning's and FairScale's FSDP took `cpu_offload=True`; torch's "
            "`FullyShardedDataParallel` takes a `CPUOffload` object and fails on a bool."
        ),
        example=Example(
            before=(
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, cpu_offload=True)\n"
            ),
            after=(
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp import CPUOffload\n"
                "\n"
                "model = FSDP(model, cpu_offload=CPUOffload(offload_params=True))\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="1.12",
        cases=(
            Example(
                before=(
                    "import compat.fsdp\n"
                    "model = compat.fsdp.FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    cpu_offload=False,  # fits in GPU memory\n"
                    ")\n"
                ),
                after=(
                    "import compat.fsdp\n"
                    "from torch.distributed.fsdp import CPUOffload\n"
                    "\n"
                    "model = compat.fsdp.FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    cpu_offload=CPUOffload(offload_params=False),  # fits in GPU memory\n"
                    ")\n"
                ),
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, cpu_offload=CPUOffload(offload_params=True))\n"
            ),
            (
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp import CPUOffload\n"
                "model = FSDP(model, cpu_offload=CPUOffload(offload_params=True))\n"
            ),
        ),
    ),
    Rule(
        code="FSDP110",
        name="fsdp-activation-checkpointing-argument",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=COMPAT_FSDP,
        new=f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing",
        argument="activation_checkpointing",
        message=(
            "torch's FSDP has no `activation_checkpointing`; call "
            "`apply_activation_checkpointing(model, auto_wrap_policy=ModuleWrapPolicy({Block}))` "
            "after wrapping"
        ),
        why=(
            "Lightning's FSDP strategies took the classes to checkpoint as an argument; with "
            "torch's FSDP you apply checkpointing to the wrapped model yourself, non-reentrant "
            "as Lightning did."
        ),
        example=Example(
            before=(
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, activation_checkpointing=Block)\n"
            ),
            after=(
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                "    apply_activation_checkpointing,\n"
                ")\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "model = FSDP(model)\n"
                "apply_activation_checkpointing(\n"
                "    model, auto_wrap_policy=ModuleWrapPolicy({Block})\n"
                ")\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.1",
        cases=(
            Example.reported_only(
                "import compat.fsdp as legacy_fsdp\n"
                "model = legacy_fsdp.FullyShardedDataParallel(\n"
                "    model,\n"
                "    activation_checkpointing=[Block, Head],  # both are large\n"
                ")\n"
            ),
        ),
        untouched=(
            (
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, auto_wrap_policy={Block})\n"
            ),
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                "strategy = FSDPStrategy(activation_checkpointing=Block)\n"
            ),
        ),
    ),
    Rule(
        code="FSDP112",
        name="compat-fsdp",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=COMPAT_FSDP,
        new=TORCH_FSDP_CLASSES[0],
        message=(
            "compat's `FullyShardedDataParallel` is torch's; import it from torch (on a host "
            "without an accelerator compat passed `device_id=torch.device('cpu')`, which "
            "torch's then needs from you)"
        ),
        why=(
            "compat's FSDP builds torch's `FullyShardedDataParallel` after translating "
            "legacy arguments; code that no longer passes them can use torch's class "
            "directly and drop the shim. A list or set of classes as `auto_wrap_policy` "
            "becomes a `ModuleWrapPolicy`; `activation_checkpointing=` (FSDP110) must go "
            "first. Unsafe: on a host without an accelerator compat passes "
            "`device_id=torch.device('cpu')`, which torch's FSDP then needs from you."
        ),
        example=Example(
            before=(
                "from compat.fsdp import FullyShardedDataParallel\n"
                "model = FullyShardedDataParallel(\n"
                "    model, auto_wrap_policy={Block}\n"
                ")\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel\n"
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "\n"
                "model = FullyShardedDataParallel(\n"
                "    model, auto_wrap_policy=ModuleWrapPolicy({Block})\n"
                ")\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.0",
        cases=(
            Example(
                before=(
                    "import compat.fsdp as legacy\n"
                    "model = legacy.FullyShardedDataParallel(model, auto_wrap_policy=[Block, "
                    "Head])\n"
                    "assert isinstance(model, legacy.FullyShardedDataParallel)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel\n"
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                    "\n"
                    "model = FullyShardedDataParallel(model, "
                    "auto_wrap_policy=ModuleWrapPolicy({Block, Head}))\n"
                    "assert isinstance(model, FullyShardedDataParallel)\n"
                ),
            ),
            Example.reported_only(
                "from compat.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, activation_checkpointing=Block)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model)\n"
            ),
            (
                "from compat.fsdp2 import fully_shard_by_policy\n"
                "model = fully_shard_by_policy(model, auto_wrap_policy={Block})\n"
            ),
        ),
    ),
    Rule(
        code="FSDP113",
        name="compat-fsdp-wrap",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=COMPAT_WRAP_NATIVE,
        new=WRAP,
        keeps_name=True,
        message="import this wrap policy or helper from `torch.distributed.fsdp.wrap`",
        why=(
            "Apart from the legacy spellings it translates, `compat.fsdp.wrap` re-exports "
            "torch's own policies and helpers; importing them from torch drops the shim. "
            "compat's `size_based_auto_wrap_policy(min_nonwrapped_numel=N)`, which returns "
            "a configured policy, becomes `partial(size_based_auto_wrap_policy, "
            "min_num_params=N)`."
        ),
        example=Example(
            before=(
                "from compat.fsdp.wrap import ModuleWrapPolicy, size_based_auto_wrap_policy\n"
                "policy = ModuleWrapPolicy({Block})\n"
                "size_policy = size_based_auto_wrap_policy(min_nonwrapped_numel=100_000)\n"
            ),
            after=(
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy, "
                "size_based_auto_wrap_policy\n"
                "from functools import partial\n"
                "\n"
                "policy = ModuleWrapPolicy({Block})\n"
                "size_policy = partial(size_based_auto_wrap_policy, min_num_params=100_000)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
        cases=(
            Example(
                before=(
                    "from compat.fsdp.wrap import CustomPolicy, always_wrap_policy as wrap_all\n"
                    "policy = CustomPolicy(is_block) if selective else wrap_all\n"
                ),
                after=(
                    "from torch.distributed.fsdp.wrap import CustomPolicy, always_wrap_policy as "
                    "wrap_all\n"
                    "policy = CustomPolicy(is_block) if selective else wrap_all\n"
                ),
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "policy = ModuleWrapPolicy({Block})\n"
            ),
            (
                "from compat.fsdp.wrap import transformer_auto_wrap_policy\n"
                "policy = transformer_auto_wrap_policy\n"
            ),
        ),
    ),
)
