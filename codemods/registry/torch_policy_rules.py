"""torch's policy callables replaced by policy objects and classes (FSDP103-FSDP105)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import COMPAT_WRAP, TORCH_WRAP

WRAP = TORCH_WRAP

RULES = (
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
            "`FSDPStrategy` (directly or through a name used only there), or, where the range "
            "starts at 2.2, is called with the policy's arguments. A policy the file passes on "
            "(a module-level name, a function's return value) is fixed only from 2.2, as an "
            "unsafe fix; one assigned to a name nothing reads is left for a human."
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
        unsafe_forms=(
            "a policy the file passes on to code it does not show (a module-level name, or "
            "returned by a function): from torch 2.2 `ModuleWrapPolicy` is called like the "
            "partial and taken by `auto_wrap_policy=`, but it is no longer a "
            "`functools.partial`"
        ),
        introduced="2.0",
        references=("https://github.com/pytorch/pytorch/pull/88450",),
        cases=(
            # Arguments aligned with the old call's `(` (LogicLLM, wenet): the class set
            # joins the new call's line, or, after a comment, aligns with its `(`.
            Example(
                before=(
                    "import functools\n"
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    "def shard(model):\n"
                    "    policy = functools.partial(transformer_auto_wrap_policy,\n"
                    "                               transformer_layer_cls={Block})\n"
                    "    return FSDP(model, auto_wrap_policy=policy)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                    "def shard(model):\n"
                    "    policy = ModuleWrapPolicy({Block})\n"
                    "    return FSDP(model, auto_wrap_policy=policy)\n"
                ),
            ),
            Example(
                before=(
                    "from functools import partial\n"
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    "policy = partial(transformer_auto_wrap_policy,  # decoder layers\n"
                    "                 transformer_layer_cls={Block})\n"
                    "model = FSDP(model, auto_wrap_policy=policy)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                    "policy = ModuleWrapPolicy(  # decoder layers\n"
                    "                          {Block})\n"
                    "model = FSDP(model, auto_wrap_policy=policy)\n"
                ),
            ),
            Example(
                before=(
                    "from functools import partial\n"
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                    "    apply_activation_checkpointing,\n"
                    ")\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    "apply_activation_checkpointing(\n"
                    "    model,\n"
                    "    auto_wrap_policy=partial(transformer_auto_wrap_policy, "
                    "transformer_layer_cls={Block}),\n"
                    ")\n"
                ),
                after=(
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                    "    apply_activation_checkpointing,\n"
                    ")\n"
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                    "apply_activation_checkpointing(\n"
                    "    model,\n"
                    "    auto_wrap_policy=ModuleWrapPolicy({Block}),\n"
                    ")\n"
                ),
            ),
            Example(
                before=(
                    "import functools\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    "def wraps(model):\n"
                    "    policy = functools.partial(transformer_auto_wrap_policy, "
                    "transformer_layer_cls={Block})\n"
                    "    return policy(model, True, 0)\n"
                ),
                # called with the policy's arguments: ModuleWrapPolicy answers that too
                after=(
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                    "def wraps(model):\n"
                    "    policy = ModuleWrapPolicy({Block})\n"
                    "    return policy(model, True, 0)\n"
                ),
            ),
            # A helper returning the policy to callers in other modules (the shape of a
            # fine-tuning recipe's policies package): they may call it or pass it on,
            # which ModuleWrapPolicy answers from torch 2.2, but it is no longer a
            # partial: unsafe.
            Example(
                before=(
                    "import functools\n"
                    "\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    "\n"
                    "from .layers import DecoderBlock\n"
                    "\n"
                    "\n"
                    "def decoder_wrap_policy():\n"
                    "    wrap_policy = functools.partial(\n"
                    "        transformer_auto_wrap_policy,\n"
                    "        transformer_layer_cls={\n"
                    "            DecoderBlock,\n"
                    "        },\n"
                    "    )\n"
                    "\n"
                    "    return wrap_policy\n"
                ),
                after=(
                    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                    "\n"
                    "from .layers import DecoderBlock\n"
                    "\n"
                    "\n"
                    "def decoder_wrap_policy():\n"
                    "    wrap_policy = ModuleWrapPolicy(\n"
                    "        {\n"
                    "            DecoderBlock,\n"
                    "        },\n"
                    "    )\n"
                    "\n"
                    "    return wrap_policy\n"
                ),
            ),
            # A policy left in a name nothing reads: reported, not rewritten.
            Example.reported_only(
                "import functools\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                "def shard(model, block_cls):\n"
                "    policy = functools.partial(transformer_auto_wrap_policy, "
                "transformer_layer_cls={block_cls})\n"
                "    return FSDP(model, device_id=0)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
            ),
            (
                "import functools\n"
                "from lightning.fabric.utilities.imports import _TORCH_GREATER_EQUAL_2_0\n"
                "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                "if _TORCH_GREATER_EQUAL_2_0:\n"
                "    policy = {Block}\n"
                "else:\n"
                "    policy = functools.partial(transformer_auto_wrap_policy, "
                "transformer_layer_cls={Block})\n"
            ),
            (
                "def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, "
                "transformer_layer_cls):\n"
                "    return recurse or isinstance(module, tuple(transformer_layer_cls))\n"
            ),
        ),
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
        cases=(
            Example(
                before=(
                    "import functools\n"
                    "import torch.distributed.fsdp.wrap as wrap\n"
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "policy = functools.partial(wrap.lambda_auto_wrap_policy, lambda_fn=is_block)\n"
                    "model = FSDP(model, auto_wrap_policy=policy)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "from torch.distributed.fsdp.wrap import CustomPolicy\n"
                    "\n"
                    "policy = CustomPolicy(is_block)\n"
                    "model = FSDP(model, auto_wrap_policy=policy)\n"
                ),
            ),
            Example(
                before=(
                    "from functools import partial\n"
                    "from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy\n"
                    "policy = partial(lambda_auto_wrap_policy, lambda_fn=is_block)\n"
                    "decide = policy(module=layer, recurse=False, nonwrapped_numel=0)\n"
                ),
                after=(
                    "from functools import partial\n"
                    "from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy\n"
                    "policy = partial(lambda_auto_wrap_policy, lambda_fn=is_block)\n"
                    "decide = policy(module=layer, recurse=False, nonwrapped_numel=0)\n"
                ),
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import CustomPolicy\n"
                "model = FSDP(model, auto_wrap_policy=CustomPolicy(is_block))\n"
            ),
            (
                "from functools import partial\n"
                "try:\n"
                "    from torch.distributed.fsdp.wrap import CustomPolicy\n"
                "    policy = CustomPolicy(is_block)\n"
                "except ImportError:\n"
                "    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy\n"
                "    policy = partial(lambda_auto_wrap_policy, lambda_fn=is_block)\n"
            ),
        ),
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
        cases=(
            Example.reported_only(
                "import torch.distributed.fsdp.wrap as fsdp_wrap\n"
                "class EveryBlock(fsdp_wrap._FSDPPolicy):\n"
                "    @property\n"
                "    def policy(self):\n"
                "        return wrap_every_block\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp.wrap import _Policy\n"
                "class EveryBlock(_Policy):\n"
                "    def _run_policy(self, root_module, ignored_modules, root_kwargs):\n"
                "        return {m: {} for m in root_module.modules() if isinstance(m, Block)}\n"
            ),
            (
                "try:\n"
                "    from torch.distributed.fsdp.wrap import _Policy as PolicyBase\n"
                "except ImportError:\n"
                "    from torch.distributed.fsdp.wrap import _FSDPPolicy as PolicyBase\n"
            ),
        ),
    ),
)
