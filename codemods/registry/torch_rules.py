"""API changes of torch's auto-wrap policy names and size arguments (FSDP101, 102, 106)."""

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
        cases=(
            Example(
                before=(
                    "import functools\n"
                    "import torch.distributed.fsdp.wrap as wrap_policies\n"
                    "policy = functools.partial(wrap_policies.default_auto_wrap_policy, "
                    "min_num_params=10**6)\n"
                ),
                after=(
                    "import functools\n"
                    "import torch.distributed.fsdp.wrap as wrap_policies\n"
                    "policy = functools.partial(wrap_policies.size_based_auto_wrap_policy, "
                    "min_num_params=10**6)\n"
                ),
            ),
            Example(
                before=(
                    "from torch.distributed.fsdp.wrap import default_auto_wrap_policy as by_size\n"
                    "policy = by_size\n"
                ),
                after=(
                    "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy as "
                    "by_size\n"
                    "policy = by_size\n"
                ),
            ),
        ),
        untouched=(
            (
                "def default_auto_wrap_policy(module, recurse, nonwrapped_numel):\n"
                "    return recurse or nonwrapped_numel >= 10**6\n"
                "policy = default_auto_wrap_policy\n"
            ),
            (
                "try:\n"
                "    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "except ImportError:\n"
                "    from torch.distributed.fsdp.wrap import default_auto_wrap_policy as "
                "size_based_auto_wrap_policy\n"
            ),
            (
                "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "# was default_auto_wrap_policy before torch 1.12\n"
                'NAME = "default_auto_wrap_policy"\n'
            ),
        ),
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
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "\n"
                "\n"
                "def policy(module, recurse, unwrapped_params):\n"
                "    return recurse or unwrapped_params >= 100_000\n"
                "\n"
                "\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "\n"
                "\n"
                "def policy(module, recurse, nonwrapped_numel):\n"
                "    return recurse or nonwrapped_numel >= 100_000\n"
                "\n"
                "\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        removed="2.0",
        references=("https://github.com/pytorch/pytorch/pull/88450",),
        cases=(
            Example(
                before=(
                    "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                    "wrap_here = size_based_auto_wrap_policy(layer, recurse=False, "
                    "unwrapped_params=numel)\n"
                ),
                after=(
                    "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                    "wrap_here = size_based_auto_wrap_policy(layer, recurse=False, "
                    "nonwrapped_numel=numel)\n"
                ),
            ),
            Example(
                before=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "model = FSDP(\n"
                    "    model,\n"
                    "    auto_wrap_policy=lambda module, recurse, unwrapped_params: "
                    "unwrapped_params > 10**6,\n"
                    ")\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "model = FSDP(\n"
                    "    model,\n"
                    "    auto_wrap_policy=lambda module, recurse, nonwrapped_numel: "
                    "nonwrapped_numel > 10**6,\n"
                    ")\n"
                ),
            ),
            # A module-level policy the file does not use: another module's to use (it
            # may pass `unwrapped_params=`, as FairScale's `auto_wrap` does).
            Example.reported_only(
                "def policy(module, recurse, unwrapped_params):\n"
                "    return recurse or unwrapped_params >= 100_000\n"
            ),
            Example(
                before=(
                    "def big_enough(module, recurse, unwrapped_params):\n"
                    "    return recurse or unwrapped_params > 10**6\n"
                    "POLICIES.register(big_enough)\n"
                ),
                after=(
                    "def big_enough(module, recurse, unwrapped_params):\n"
                    "    return recurse or unwrapped_params > 10**6\n"
                    "POLICIES.register(big_enough)\n"
                ),
            ),
        ),
        untouched=(
            (
                "def policy(module, recurse, nonwrapped_numel):\n"
                "    return recurse or nonwrapped_numel >= 100_000\n"
            ),
            (
                "from my_project.sharding import size_based_auto_wrap_policy\n"
                "wrap_here = size_based_auto_wrap_policy(layer, recurse=False, "
                "unwrapped_params=numel)\n"
            ),
            ("def count(unwrapped_params):\n    return sum(unwrapped_params)\n"),
        ),
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
        cases=(
            Example(
                before=(
                    "import compat.fsdp.wrap as compat_wrap\n"
                    "policy = compat_wrap.size_based_auto_wrap_policy(\n"
                    "    min_num_params=2_000_000,  # parameters not yet wrapped\n"
                    ")\n"
                ),
                after=(
                    "import compat.fsdp.wrap as compat_wrap\n"
                    "policy = compat_wrap.size_based_auto_wrap_policy(\n"
                    "    min_nonwrapped_numel=2_000_000,  # parameters not yet wrapped\n"
                    ")\n"
                ),
            ),
        ),
        untouched=(
            (
                "from functools import partial\n"
                "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "policy = partial(size_based_auto_wrap_policy, min_num_params=100_000)\n"
            ),
            (
                "from compat.fsdp.wrap import size_based_auto_wrap_policy\n"
                "policy = size_based_auto_wrap_policy(min_nonwrapped_numel=100_000)\n"
            ),
        ),
    ),
)
