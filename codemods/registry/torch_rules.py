"""API changes of torch's own FSDP, wrap policies and activation checkpointing (FSDP1xx)."""

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

#: The policy callables whose numel parameter torch 2.0 renamed (and compat's mirrors).
POLICY_CALLABLES = tuple(
    f"{module}.{name}"
    for module in (WRAP, COMPAT_WRAP)
    for name in (
        "size_based_auto_wrap_policy",
        "transformer_auto_wrap_policy",
        "lambda_auto_wrap_policy",
        "always_wrap_policy",
        "_or_policy",
        "_module_wrap_policy",
    )
    if module == WRAP or not name.startswith("_")
)

RULES = (
    Rule(
        code="FSDP101",
        name="default-auto-wrap-policy",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(f"{WRAP}.default_auto_wrap_policy", f"{COMPAT_WRAP}.default_auto_wrap_policy"),
        new=f"{WRAP}.size_based_auto_wrap_policy",
        message="`default_auto_wrap_policy` was renamed `size_based_auto_wrap_policy`",
        why=(
            "torch 1.12 renamed the size-based policy and kept no alias, so the old import "
            "fails with ImportError on every torch since."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
                "policy = default_auto_wrap_policy\n"
            ),
            after=(
                "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "policy = size_based_auto_wrap_policy\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="1.12",
        removed="1.12",
        references=("https://github.com/pytorch/pytorch/pull/76858",),
    ),
    Rule(
        code="FSDP102",
        name="unwrapped-params",
        framework=Framework.TORCH,
        kind=ChangeKind.KEYWORD_RENAME,
        old=POLICY_CALLABLES,
        new=POLICY_CALLABLES[0],
        argument="unwrapped_params",
        new_argument="nonwrapped_numel",
        message="the policy argument `unwrapped_params` is now `nonwrapped_numel`",
        why=(
            "torch 2.0 renamed the third parameter of every auto-wrap policy callable and "
            "passes it by keyword, so a custom policy that names it `unwrapped_params` fails "
            "with TypeError inside FSDP's wrapping, and keyword callers of torch's policies break."
        ),
        example=Example(
            before=(
                "def policy(module, recurse, unwrapped_params):\n"
                "    return recurse or unwrapped_params >= 100_000\n"
            ),
            after=(
                "def policy(module, recurse, nonwrapped_numel):\n"
                "    return recurse or nonwrapped_numel >= 100_000\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        removed="2.0",
        references=("https://github.com/pytorch/pytorch/pull/88450",),
    ),
    Rule(
        code="FSDP103",
        name="transformer-policy-partial",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(f"{WRAP}.transformer_auto_wrap_policy", f"{COMPAT_WRAP}.transformer_auto_wrap_policy"),
        new=f"{WRAP}.ModuleWrapPolicy",
        argument="transformer_layer_cls",
        message=(
            "use `ModuleWrapPolicy(classes)` instead of "
            "`partial(transformer_auto_wrap_policy, transformer_layer_cls=classes)`"
        ),
        why=(
            "`ModuleWrapPolicy` is the supported way to wrap by module class since torch 2.0: "
            "FSDP runs it without the per-module callable recursion, and it also drives "
            "`apply_activation_checkpointing(auto_wrap_policy=...)`. It is a policy object, "
            "callable only since torch 2.2, so the fix applies only where the partial goes "
            "to `auto_wrap_policy=` of FSDP, `apply_activation_checkpointing` or Lightning's "
            "`FSDPStrategy` (directly or through a name used only there)."
        ),
        example=Example(
            before=(
                "import functools\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                "policy = functools.partial(transformer_auto_wrap_policy, "
                "transformer_layer_cls={Block})\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "policy = ModuleWrapPolicy({Block})\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        references=("https://github.com/pytorch/pytorch/pull/88450",),
    ),
    Rule(
        code="FSDP104",
        name="lambda-policy-partial",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(f"{WRAP}.lambda_auto_wrap_policy", f"{COMPAT_WRAP}.lambda_auto_wrap_policy"),
        new=f"{WRAP}.CustomPolicy",
        argument="lambda_fn",
        message=(
            "use `CustomPolicy(fn)` instead of `partial(lambda_auto_wrap_policy, lambda_fn=fn)`"
        ),
        why=(
            "`CustomPolicy` (torch 2.1) takes the same `module -> bool` function and can also "
            "return per-module FSDP arguments; it is the supported replacement for the "
            "callable-based lambda policy."
        ),
        example=Example(
            before=(
                "from functools import partial\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy\n"
                "model = FSDP(model, auto_wrap_policy=partial(lambda_auto_wrap_policy, "
                "lambda_fn=is_block))\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import CustomPolicy\n"
                "model = FSDP(model, auto_wrap_policy=CustomPolicy(is_block))\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
        references=("https://github.com/pytorch/pytorch/pull/104986",),
    ),
    Rule(
        code="FSDP105",
        name="fsdp-policy-base",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(f"{WRAP}._FSDPPolicy",),
        new=f"{WRAP}._Policy",
        message=(
            "the private policy base `_FSDPPolicy` is now `_Policy`; implement `_run_policy` "
            "instead of the `policy` property"
        ),
        why=(
            "torch 2.1 replaced the private base class and its protocol: a subclass must "
            "return the modules to wrap from `_run_policy(root_module, ignored_modules, "
            "root_kwargs)` rather than a callable from `policy`. Prefer `CustomPolicy`."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp.wrap import _FSDPPolicy\n"
                "class MyPolicy(_FSDPPolicy):\n"
                "    @property\n"
                "    def policy(self):\n"
                "        return my_callable\n"
            ),
            after=(
                "from torch.distributed.fsdp.wrap import CustomPolicy\n"
                "policy = CustomPolicy(my_lambda_fn)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.1",
        removed="2.1",
    ),
    Rule(
        code="FSDP106",
        name="min-num-params",
        framework=Framework.TORCH,
        kind=ChangeKind.KEYWORD_RENAME,
        old=("compat.fsdp.wrap.size_based_auto_wrap_policy",),
        new="compat.fsdp.wrap.size_based_auto_wrap_policy",
        argument="min_num_params",
        new_argument="min_nonwrapped_numel",
        message=(
            "compat's size-based policy spells its threshold `min_nonwrapped_numel`, "
            "which is what `min_num_params` means"
        ),
        why=(
            "The threshold counts parameters not yet wrapped by a nested FSDP unit, not all "
            "parameters; pytorch PR 88450 proposed the clearer name but torch never adopted "
            "it, so native torch keeps `min_num_params` and only compat's spelling is flagged."
        ),
        example=Example(
            before=(
                "from compat.fsdp.wrap import size_based_auto_wrap_policy\n"
                "policy = size_based_auto_wrap_policy(min_num_params=100_000)\n"
            ),
            after=(
                "from compat.fsdp.wrap import size_based_auto_wrap_policy\n"
                "policy = size_based_auto_wrap_policy(min_nonwrapped_numel=100_000)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        references=("https://github.com/pytorch/pytorch/pull/88450",),
    ),
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
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                "    checkpoint_wrapper,\n"
                ")\n"
                "wrapped = checkpoint_wrapper(block)\n"
            ),
            after=(
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                "    CheckpointImpl,\n"
                "    checkpoint_wrapper,\n"
                ")\n"
                "wrapped = checkpoint_wrapper(\n"
                "    block, checkpoint_impl=CheckpointImpl.NO_REENTRANT\n"
                ")\n"
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
)
