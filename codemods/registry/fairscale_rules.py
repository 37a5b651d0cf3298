"""FairScale FSDP names and their torch equivalents (FSDP3xx).

FairScale is archived; its FSDP was upstreamed into torch (1.11) with different
arguments. Versions on these rules are torch releases, the owner of the new spelling.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import FAIRSCALE_CHECKPOINT, FAIRSCALE_NN, FAIRSCALE_WRAP

_FSDP = f"{FAIRSCALE_NN}.data_parallel"
_WRAP = FAIRSCALE_WRAP
_CHECKPOINT = FAIRSCALE_CHECKPOINT
#: ``fairscale.nn`` re-exports every name below (FairScale's documented import path).
_NN = FAIRSCALE_NN
#: compat's stand-in for FairScale's API: the same names, on torch FSDP.
_COMPAT = "compat.fairscale"

RULES = (
    Rule(
        code="FSDP301",
        name="fairscale-fsdp",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=(
            "fairscale.nn.FullyShardedDataParallel",
            f"{_FSDP}.FullyShardedDataParallel",
            f"{_FSDP}.fully_sharded_data_parallel.FullyShardedDataParallel",
            f"{_COMPAT}.FullyShardedDataParallel",
        ),
        new="torch.distributed.fsdp.FullyShardedDataParallel",
        message="FairScale's `FullyShardedDataParallel` is archived; use torch's",
        why=(
            "FairScale is no longer maintained and does not follow new torch releases. "
            "torch's FSDP takes different arguments (`reshard_after_forward` becomes "
            "`sharding_strategy`, `mixed_precision=True` becomes a `MixedPrecision` object, "
            "`move_params_to_cpu` becomes `cpu_offload=CPUOffload(...)`), and some FairScale "
            "arguments have no torch meaning, so each call needs review."
        ),
        example=Example(
            before=(
                "from fairscale.nn import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, reshard_after_forward=False)\n"
            ),
            after=(
                "from torch.distributed.fsdp import ShardingStrategy, "
                "FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.11",
    ),
    Rule(
        code="FSDP302",
        name="fairscale-enable-wrap",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=(
            f"{_NN}.enable_wrap",
            f"{_WRAP}.enable_wrap",
            f"{_WRAP}.auto_wrap.enable_wrap",
            f"{_COMPAT}.enable_wrap",
        ),
        new="torch.distributed.fsdp.wrap.enable_wrap",
        message="use torch's `enable_wrap(wrapper_cls=FullyShardedDataParallel, ...)`",
        why=(
            "torch's `enable_wrap` requires `wrapper_cls` by keyword and has no "
            "`auto_wrap_policy` (nothing in torch consumes it inside the context). FairScale's "
            "`wrap` only sees FairScale's context and torch's only torch's, so the fix moves "
            "`enable_wrap` and `wrap` together, FairScale FSDP arguments translated, and not "
            "at all in a file that calls `auto_wrap`, which would silently stop wrapping."
        ),
        example=Example(
            before=(
                "from fairscale.nn.wrap import enable_wrap\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "with enable_wrap(wrapper_cls=FSDP, cpu_offload=CPUOffload(offload_params=True)):\n"
                "    model = build_model()  # calls wrap() on each block\n"
            ),
            after=(
                "from torch.distributed.fsdp.wrap import enable_wrap\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "with enable_wrap(wrapper_cls=FSDP, cpu_offload=CPUOffload(offload_params=True)):\n"
                "    model = build_model()  # calls wrap() on each block\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.11",
    ),
    Rule(
        code="FSDP303",
        name="fairscale-wrap",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(
            f"{_NN}.wrap",
            f"{_WRAP}.wrap",
            f"{_WRAP}.auto_wrap.wrap",
            f"{_COMPAT}.wrap",
        ),
        new="torch.distributed.fsdp.wrap.wrap",
        message="use torch's `wrap` inside torch's `enable_wrap`",
        why="torch's `wrap` reads the configuration of torch's `enable_wrap` context.",
        example=Example(
            before="from fairscale.nn.wrap import wrap\nblock = wrap(block)\n",
            after="from torch.distributed.fsdp.wrap import wrap\nblock = wrap(block)\n",
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.11",
    ),
    Rule(
        code="FSDP304",
        name="fairscale-auto-wrap",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.REMOVAL,
        old=(
            f"{_NN}.auto_wrap",
            f"{_WRAP}.auto_wrap",
            f"{_WRAP}.auto_wrap.auto_wrap",
            f"{_COMPAT}.auto_wrap",
        ),
        new=None,
        message=(
            "torch has no `auto_wrap`: pass `auto_wrap_policy=` to `FullyShardedDataParallel` "
            "instead"
        ),
        why=(
            "torch dropped the recursive `auto_wrap()` call; the root FSDP constructor applies "
            "an auto-wrap policy to the submodules itself."
        ),
        example=Example(
            before=(
                "from fairscale.nn.wrap import auto_wrap, enable_wrap\n"
                "with enable_wrap(wrapper_cls=FSDP, auto_wrap_policy=policy):\n"
                "    model = auto_wrap(model)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="1.11",
    ),
    Rule(
        code="FSDP305",
        name="fairscale-default-auto-wrap-policy",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(
            f"{_NN}.default_auto_wrap_policy",
            f"{_WRAP}.default_auto_wrap_policy",
            f"{_WRAP}.auto_wrap.default_auto_wrap_policy",
            f"{_COMPAT}.default_auto_wrap_policy",
        ),
        new="torch.distributed.fsdp.wrap.size_based_auto_wrap_policy",
        message="use torch's `size_based_auto_wrap_policy` (same `min_num_params` threshold)",
        why=(
            "FairScale's size policy became torch's `size_based_auto_wrap_policy`; torch's "
            "version takes no `module_is_root` argument."
        ),
        example=Example(
            before="from fairscale.nn.wrap import default_auto_wrap_policy\n",
            after="from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n",
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.12",
    ),
    Rule(
        code="FSDP306",
        name="fairscale-checkpoint-wrapper",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=(
            f"{_NN}.checkpoint_wrapper",
            f"{_CHECKPOINT}.checkpoint_wrapper",
            f"{_CHECKPOINT}.checkpoint_activations.checkpoint_wrapper",
            f"{_COMPAT}.checkpoint_wrapper",
        ),
        new="torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper",
        message=(
            "use torch's `checkpoint_wrapper` (and `offload_wrapper` for `offload_to_cpu=True`)"
        ),
        why=(
            "FairScale's wrapper is reentrant-style and takes `offload_to_cpu`; torch's takes "
            "`checkpoint_impl` and offloads through a separate `offload_wrapper`. The fix "
            "asks for non-reentrant checkpointing, as compat runs it and torch recommends; "
            "`offload_to_cpu=True` is left for a human."
        ),
        example=Example(
            before=(
                "from fairscale.nn.checkpoint import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block)\n"
            ),
            after=(
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                "CheckpointImpl, checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.12",
    ),
)
