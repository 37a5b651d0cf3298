"""torch's FSDP module, checkpointing and the compat shim's FSDP names (FSDP107-FSDP114)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import (
    CHECKPOINT_WRAPPER,
    COMPAT_FSDP_CLASSES,
    COMPAT_WRAP,
    COMPOSABLE_FSDP,
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
        code="FSDP107",
        name="composable-fsdp-import",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(COMPOSABLE_FSDP,),
        new="torch.distributed.fsdp",
        message=(
            "import FSDP2 (`fully_shard`, `MixedPrecisionPolicy`, ...) from "
            "`torch.distributed.fsdp`, not the private `torch.distributed._composable.fsdp`"
        ),
        why=(
            "FSDP2 arrived under the private `_composable` package in torch 2.4 and became "
            "public in torch 2.6; the private path is kept only as a backward-compatibility "
            "alias and is not a stable API."
        ),
        example=Example(
            before="from torch.distributed._composable.fsdp import fully_shard\n",
            after="from torch.distributed.fsdp import fully_shard\n",
        ),
        fix=FixSafety.SAFE,
        introduced="2.6",
    ),
    Rule(
        code="FSDP108",
        name="checkpoint-wrapper-implicit-impl",
        framework=Framework.TORCH,
        kind=ChangeKind.DEFAULT_CHANGE,
        old=(f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper",),
        new=f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper",
        argument="checkpoint_impl",
        message=(
            "`checkpoint_wrapper` without `checkpoint_impl` is reentrant before torch 2.2 and "
            "non-reentrant since; pass `checkpoint_impl=CheckpointImpl.NO_REENTRANT`"
        ),
        why=(
            "torch 2.2 changed the default from reentrant to non-reentrant checkpointing, "
            "which changes what the wrapped module supports (keyword inputs, inputs without "
            "grad, nested checkpoints); stating the implementation makes the code behave the "
            "same on every torch."
        ),
        example=Example(
            before=(
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "wrapped = checkpoint_wrapper(block)\n"
            ),
            after=(
                f"from {CHECKPOINT_WRAPPER} import CheckpointImpl, checkpoint_wrapper\n"
                "wrapped = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.2",
    ),
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
    ),
    Rule(
        code="FSDP111",
        name="fsdp1-to-fsdp2",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(TORCH_FSDP_CLASSES[0], *COMPAT_FSDP),
        new="torch.distributed.fsdp.fully_shard",
        message=(
            "FSDP2 replaces `FullyShardedDataParallel`: call `fully_shard` on each unit, "
            "then the root (`compat.fsdp2.fully_shard_by_policy` applies an FSDP1 configuration)"
        ),
        why=(
            "FSDP2 (`fully_shard`, torch 2.4; public in 2.6) shards per parameter with DTensor, "
            "composes with tensor parallelism and is where FSDP development continues. It has no "
            "`auto_wrap_policy`, and `backward_prefetch`, `sync_module_states`, `use_orig_params`, "
            "`limit_all_gathers`, `device_id` and `param_init_fn` have no FSDP2 meaning. Opt-in: "
            "torch has not deprecated FSDP1."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
            ),
            after=(
                "from torch.distributed.fsdp import fully_shard\n"
                "for module in model.modules():\n"
                "    if isinstance(module, Block):\n"
                "        fully_shard(module)\n"
                "fully_shard(model)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.4",
        opt_in=True,
    ),
    Rule(
        code="FSDP112",
        name="compat-fsdp",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=COMPAT_FSDP,
        new=TORCH_FSDP_CLASSES[0],
        message="compat's `FullyShardedDataParallel` is torch's; import it from torch",
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
    ),
    Rule(
        code="FSDP114",
        name="fsdp-auto-wrap-policy-keyword",
        framework=Framework.TORCH,
        kind=ChangeKind.KEYWORD_RENAME,
        old=TORCH_FSDP_CLASSES,
        new=TORCH_FSDP_CLASSES[0],
        argument="fsdp_auto_wrap_policy",
        new_argument="auto_wrap_policy",
        message="`FullyShardedDataParallel(fsdp_auto_wrap_policy=...)` is now `auto_wrap_policy=`",
        why=(
            "torch 1.11, the first release with FSDP, named the policy argument "
            "`fsdp_auto_wrap_policy`; torch 1.12 renamed it `auto_wrap_policy` with no "
            "deprecation period, so the old keyword raises TypeError. Only keywords are "
            "renamed: 1.12 also inserted `sharding_strategy` before `cpu_offload`, so "
            "arguments passed by position after `process_group` need a human."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, fsdp_auto_wrap_policy=policy)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="1.12",
        removed="1.12",
        references=(
            "https://pytorch.org/docs/1.11/fsdp.html",
            "https://pytorch.org/docs/1.12/fsdp.html",
        ),
    ),
)
