"""torch's FSDP modules and checkpointing (FSDP107, FSDP108, FSDP114, FSDP133).

FSDP133's literal ``offload_to_cpu=False`` is FSDP139, in
:mod:`codemods.registry.torch_activation_checkpointing_rules`.

FSDP111 (FSDP1 to FSDP2) is now FSDP401, in :mod:`codemods.registry.to_fsdp2_rules`.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import (
    CHECKPOINT_WRAPPER,
    COMPAT_FSDP_CLASSES,
    COMPOSABLE_FSDP,
    TORCH_FSDP_CLASSES,
)

COMPAT_FSDP = COMPAT_FSDP_CLASSES

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
        flat=True,  # torch.distributed.fsdp has no `fully_shard` submodule: the names move
        cases=(
            Example(
                before="from torch.distributed._composable.fsdp.fully_shard import fully_shard\n",
                after="from torch.distributed.fsdp import fully_shard\n",
            ),
            Example(
                before=(
                    "import torch.distributed._composable.fsdp.fully_shard as fs\n"
                    "fs.fully_shard(model)\n"
                ),
                after="import torch.distributed.fsdp as fs\nfs.fully_shard(model)\n",
            ),
            Example(
                before=(
                    "import torch.distributed._composable.fsdp as fsdp2\n"
                    "fsdp2.fully_shard(model, mp_policy=fsdp2.MixedPrecisionPolicy())\n"
                ),
                after=(
                    "import torch.distributed.fsdp as fsdp2\n"
                    "fsdp2.fully_shard(model, mp_policy=fsdp2.MixedPrecisionPolicy())\n"
                ),
            ),
            Example(
                before=(
                    "from torch.distributed._composable.fsdp import MixedPrecisionPolicy, "
                    "fully_shard\n"
                    "fully_shard(model, "
                    "mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))\n"
                ),
                after=(
                    "from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n"
                    "fully_shard(model, "
                    "mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))\n"
                ),
            ),
        ),
        untouched=(
            ("from torch.distributed.fsdp import fully_shard\nfully_shard(model)\n"),
            ("from torch.distributed._composable import checkpoint\ncheckpoint(block)\n"),
            (
                "try:\n"
                "    from torch.distributed.fsdp import fully_shard\n"
                "except ImportError:\n"
                "    from torch.distributed._composable.fsdp import fully_shard\n"
            ),
        ),
    ),
    Rule(
        code="FSDP108",
        name="checkpoint-wrapper-implicit-impl",
        framework=Framework.TORCH,
        kind=ChangeKind.DEFAULT_CHANGE,
        old=(
            f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper",
            # which wraps with `checkpoint_wrapper`'s default unless told otherwise
            f"{CHECKPOINT_WRAPPER}.apply_activation_checkpointing",
        ),
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
        cases=(
            Example(
                before=(
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                    "checkpoint_wrapper\n"
                    "wrapped = checkpoint_wrapper(\n"
                    "    block,  # one transformer layer\n"
                    ")\n"
                ),
                after=(
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                    "CheckpointImpl, checkpoint_wrapper\n"
                    "wrapped = checkpoint_wrapper(\n"
                    "    block,  # one transformer layer\n"
                    "    checkpoint_impl=CheckpointImpl.NO_REENTRANT,\n"
                    ")\n"
                ),
            ),
            Example(
                before=(
                    "from functools import partial\n"
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                    "checkpoint_wrapper\n"
                    "wrapper = partial(checkpoint_wrapper, checkpoint_fn=my_checkpoint)\n"
                ),
                after=(
                    "from functools import partial\n"
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                    "CheckpointImpl, checkpoint_wrapper\n"
                    "wrapper = partial(checkpoint_wrapper, checkpoint_fn=my_checkpoint, "
                    "checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
                ),
            ),
            # `apply_activation_checkpointing` with its default wrapper (or torch's
            # `checkpoint_wrapper` itself): reported, for a human to pass a partial.
            Example.reported_only(
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                "    apply_activation_checkpointing,\n"
                ")\n"
                "apply_activation_checkpointing(model, check_fn=is_block)\n"
            ),
            # Imported inside a function: CheckpointImpl joins that import.
            Example(
                before=(
                    "def wrap(block):\n"
                    "    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper "
                    "import (\n"
                    "        checkpoint_wrapper,\n"
                    "    )\n"
                    "    return checkpoint_wrapper(block)\n"
                ),
                after=(
                    "def wrap(block):\n"
                    "    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper "
                    "import (\n"
                    "        CheckpointImpl, checkpoint_wrapper,\n"
                    "    )\n"
                    "    return checkpoint_wrapper(block, "
                    "checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
                ),
            ),
        ),
        untouched=(
            (
                "from functools import partial\n"
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                "CheckpointImpl, checkpoint_wrapper\n"
                "wrapper = partial(checkpoint_wrapper, "
                "checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
            ),
            (
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                "CheckpointImpl, checkpoint_wrapper\n"
                "wrapped = checkpoint_wrapper(block, CheckpointImpl.NO_REENTRANT)\n"
            ),
            (
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                "checkpoint_wrapper\n"
                "wrapped = checkpoint_wrapper(block, **wrapper_options)\n"
            ),
            (
                "from fairscale.nn.checkpoint import checkpoint_wrapper\n"
                "wrapped = checkpoint_wrapper(block)\n"
            ),
            (
                # torch 2.0 removed the keyword (FSDP133); 1.13 ignored the implementation
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                "checkpoint_wrapper\n"
                "wrapped = checkpoint_wrapper(block, offload_to_cpu=True)\n"
            ),
        ),
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
        untouched=(
            "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
            "model = FSDP(model, auto_wrap_policy=policy)\n",
            "def FSDP(module, fsdp_auto_wrap_policy=None):\n"
            "    return module\n"
            "model = FSDP(model, fsdp_auto_wrap_policy=policy)\n",
        ),
    ),
    Rule(
        code="FSDP133",
        name="checkpoint-wrapper-offload-to-cpu",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper",),
        new=f"{CHECKPOINT_WRAPPER}.offload_wrapper",
        argument="offload_to_cpu",
        message=(
            "`checkpoint_wrapper(offload_to_cpu=...)` was removed in torch 2.0 (the keyword now "
            "reaches the module's forward: TypeError); for `True` use `offload_wrapper(module)`, "
            "torch 1.13's meaning of the flag: activations kept on the CPU, nothing recomputed, "
            "`checkpoint_impl` dropped with it (1.11 and 1.12 also recomputed the module); "
            "for `False` drop the keyword"
        ),
        why=(
            "torch 1.11 gave `checkpoint_wrapper` an `offload_to_cpu` flag; torch 2.0 removed "
            "it (pytorch PR 85459) for a separate `offload_wrapper`, with no deprecation. "
            "Since then the wrapper hands unknown keywords to its checkpoint function, which "
            "passes them to the wrapped module, so the call still builds and the first "
            "forward raises `TypeError: forward() got an unexpected keyword argument "
            "'offload_to_cpu'` (`offload_to_cpu=False` too). The fix writes "
            "`offload_wrapper(module)` for `offload_to_cpu=True`, what torch 1.13 ran for the "
            "flag (activations saved on CPU, nothing recomputed, `checkpoint_impl` ignored); "
            "on torch 1.11 and 1.12 the flag also checkpointed the module (reentrant), so "
            "code written for those releases that wants both writes "
            "`offload_wrapper(checkpoint_wrapper(module))`. `checkpoint_impl` beside the flag "
            "is dropped too (1.13 ignored it). Other arguments, or a value that is not a "
            "literal, are left for a human. A literal `offload_to_cpu=False` is FSDP139: "
            "dropping it runs on every torch."
        ),
        example=Example(
            before=(
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=True)\n"
            ),
            after=(
                f"from {CHECKPOINT_WRAPPER} import offload_wrapper\n"
                "block = offload_wrapper(block)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.0",
        removed="2.0",
        references=(
            "https://github.com/pytorch/pytorch/pull/70165",
            "https://github.com/pytorch/pytorch/pull/84907",
            "https://github.com/pytorch/pytorch/pull/85459",
        ),
        cases=(
            Example(
                before=(
                    "import functools\n"
                    f"from {CHECKPOINT_WRAPPER} import (\n"
                    "    CheckpointImpl,\n"
                    "    apply_activation_checkpointing,\n"
                    "    checkpoint_wrapper,\n"
                    ")\n"
                    "wrapper_fn = functools.partial(\n"
                    "    checkpoint_wrapper,\n"
                    "    offload_to_cpu=True,\n"
                    "    checkpoint_impl=CheckpointImpl.NO_REENTRANT,\n"
                    ")\n"
                    "apply_activation_checkpointing(model, checkpoint_wrapper_fn=wrapper_fn)\n"
                ),
                after=(
                    f"from {CHECKPOINT_WRAPPER} import (\n"
                    "    offload_wrapper,\n"
                    "    apply_activation_checkpointing,\n"
                    ")\n"
                    "wrapper_fn = offload_wrapper\n"
                    "apply_activation_checkpointing(model, checkpoint_wrapper_fn=wrapper_fn)\n"
                ),
            ),
            Example.reported_only(
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "def wrap(block, offload):\n"
                "    return checkpoint_wrapper(block, offload_to_cpu=offload)\n"
            ),
            Example.reported_only(
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(\n"
                "    block, offload_to_cpu=True, checkpoint_fn=my_checkpoint\n"
                ")\n"
            ),
            Example.reported_only(
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "from my_project.memory import offload_wrapper\n"
                "block = offload_wrapper(checkpoint_wrapper(block, offload_to_cpu=True))\n"
            ),
        ),
        untouched=(
            (f"from {CHECKPOINT_WRAPPER} import offload_wrapper\nblock = offload_wrapper(block)\n"),
            (  # FSDP139's
                f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=False)\n"
            ),
            (
                "from fairscale.nn.checkpoint import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=True)\n"
            ),
            (
                "from torch.distributed.fsdp import FullStateDictConfig\n"
                "config = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
            ),
            (
                "def checkpoint_wrapper(module, offload_to_cpu=False):\n"
                "    return module\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=True)\n"
            ),
        ),
    ),
)
