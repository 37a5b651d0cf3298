"""API changes of torch's auto-wrap policies (FSDP101-FSDP106)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import COMPAT_WRAP, TORCH_WRAP

WRAP = TORCH_WRAP
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
        in_definitions=True,
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
)
