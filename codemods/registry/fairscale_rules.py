"""FairScale FSDP names and their torch equivalents (FSDP3xx).

FairScale is archived; its FSDP was upstreamed into torch (1.11) with different
arguments. Versions on these rules are torch releases, the owner of the new spelling.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import (
    FAIRSCALE_CHECKPOINT,
    FAIRSCALE_FSDP_CLASSES,
    FAIRSCALE_NN,
    FAIRSCALE_WRAP,
)

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
        old=(*FAIRSCALE_FSDP_CLASSES, f"{_COMPAT}.FullyShardedDataParallel"),
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
        cases=(
            Example(
                before=(
                    "import torch\n"
                    "from fairscale.nn.data_parallel import FullyShardedDataParallel\n"
                    "model = FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    mixed_precision=True,  # fp16 compute\n"
                    "    move_params_to_cpu=True,\n"
                    ")\n"
                ),
                after=(
                    "import torch\n"
                    "from torch.distributed.fsdp import CPUOffload, MixedPrecision, "
                    "FullyShardedDataParallel\n"
                    "model = FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    mixed_precision=MixedPrecision(param_dtype=torch.float16, "
                    "reduce_dtype=torch.float16, buffer_dtype=torch.float16),  # fp16 compute\n"
                    "    cpu_offload=CPUOffload(offload_params=True),\n"
                    ")\n"
                ),
            ),
            Example.reported_only(
                "from fairscale.nn import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, bucket_cap_mb=50, verbose=True)\n"
            ),
            # FairScale as an optional dependency (no other implementation): current code,
            # reported; the name is rebound, so its rename is left for a human
            Example.reported_only(
                "try:\n"
                "    from fairscale.nn import FullyShardedDataParallel\n"
                "except ImportError:\n"
                "    FullyShardedDataParallel = None\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import fully_shard\n"
                "fully_shard(model, reshard_after_forward=False)\n"
            ),
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp import ShardingStrategy\n"
                "model = FSDP(model, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)\n"
            ),
            (
                # a fallback between two real implementations: left alone
                "try:\n"
                "    from fairscale.nn import FullyShardedDataParallel\n"
                "except ImportError:\n"
                "    from torch.distributed.fsdp import FullyShardedDataParallel\n"
            ),
        ),
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
        cases=(
            Example(
                before=(
                    "import fairscale.nn.wrap as fairscale_wrap\n"
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "with fairscale_wrap.enable_wrap(wrapper_cls=FSDP, limit_all_gathers=True):\n"
                    "    model = build_model()\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                    "from torch.distributed.fsdp.wrap import enable_wrap\n"
                    "\n"
                    "with enable_wrap(wrapper_cls=FSDP, limit_all_gathers=True):\n"
                    "    model = build_model()\n"
                ),
            ),
            Example.reported_only(
                "from fairscale.nn.wrap import auto_wrap, enable_wrap\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "with enable_wrap(wrapper_cls=FSDP):\n"
                "    model = auto_wrap(build_model())\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import enable_wrap, wrap\n"
                "with enable_wrap(wrapper_cls=FSDP):\n"
                "    model = wrap(build_model())\n"
            ),
        ),
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
        why=(
            "torch's `wrap` reads the configuration of torch's `enable_wrap` context and, "
            "outside one, returns the module unwrapped, silently. So the swap is made only "
            "where the file itself enters torch's `enable_wrap` around the call, in the "
            "same function (or FairScale's, rewritten to torch's in the same run); a `wrap` "
            "whose context is entered elsewhere, such as FairScale's in another module, is "
            "reported and keeps FairScale's."
        ),
        example=Example(
            before=(
                "from fairscale.nn.wrap import wrap\n"
                "from torch.distributed.fsdp.wrap import enable_wrap\n"
                "with enable_wrap(wrapper_cls=FSDP):\n"
                "    block = wrap(block)\n"
            ),
            after=(
                "from torch.distributed.fsdp.wrap import wrap\n"
                "from torch.distributed.fsdp.wrap import enable_wrap\n"
                "with enable_wrap(wrapper_cls=FSDP):\n"
                "    block = wrap(block)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.11",
        cases=(
            Example(
                before=(
                    "from fairscale.nn.wrap import wrap as shard\n"
                    "from torch.distributed.fsdp.wrap import enable_wrap\n"
                    "def build(blocks):\n"
                    "    with enable_wrap(wrapper_cls=FSDP):\n"
                    "        return [shard(block) for block in blocks]\n"
                ),
                after=(
                    "from torch.distributed.fsdp.wrap import wrap as shard\n"
                    "from torch.distributed.fsdp.wrap import enable_wrap\n"
                    "def build(blocks):\n"
                    "    with enable_wrap(wrapper_cls=FSDP):\n"
                    "        return [shard(block) for block in blocks]\n"
                ),
            ),
            # The context is entered elsewhere (FairScale's, perhaps): torch's `wrap`
            # would return the block unwrapped.
            Example.reported_only("from fairscale.nn.wrap import wrap\nblock = wrap(block)\n"),
            Example.reported_only(
                "from fairscale.nn.wrap import wrap\n"
                "from torch.distributed.fsdp.wrap import enable_wrap\n"
                "with enable_wrap(wrapper_cls=FSDP):\n"
                "    def shard(block):\n"
                "        return wrap(block)\n"
            ),
            # FairScale as an optional dependency: without it the helper gives up and
            # returns the block as it is (no other implementation), so it is reported
            Example.reported_only(
                "def maybe_wrap(block, **kwargs):\n"
                "    try:\n"
                "        from fairscale.nn import wrap\n"
                "        return wrap(block, **kwargs)\n"
                "    except ImportError:\n"
                "        return block\n"
            ),
        ),
        untouched=(
            ("from torch.distributed.fsdp.wrap import wrap\nblock = wrap(block)\n"),
            ("import textwrap\ntext = textwrap.wrap(text, width=80)\n"),
        ),
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
        cases=(
            Example.reported_only(
                "import fairscale.nn.wrap as fairscale_wrap\n"
                "with fairscale_wrap.enable_wrap(wrapper_cls=FSDP, auto_wrap_policy=policy):\n"
                "    model = fairscale_wrap.auto_wrap(model)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, auto_wrap_policy=policy)\n"
            ),
            ("def auto_wrap(model):\n    return model\nmodel = auto_wrap(model)\n"),
        ),
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
            before=(
                "from fairscale.nn.wrap import default_auto_wrap_policy\n"
                "policy = default_auto_wrap_policy\n"
            ),
            after=(
                "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                "policy = size_based_auto_wrap_policy\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.12",
        cases=(
            Example(
                before=(
                    "import functools\n"
                    "from fairscale.nn.wrap import default_auto_wrap_policy\n"
                    "policy = functools.partial(default_auto_wrap_policy, min_num_params=10**7)\n"
                ),
                after=(
                    "import functools\n"
                    "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
                    "policy = functools.partial(size_based_auto_wrap_policy, "
                    "min_num_params=10**7)\n"
                ),
            ),
            # torch's policy takes no `module_is_root`: the file's rename is withheld
            Example.reported_only(
                "import functools\n"
                "from fairscale.nn.wrap import default_auto_wrap_policy\n"
                "policy = functools.partial(\n"
                "    default_auto_wrap_policy, module_is_root=True, min_num_params=10**7\n"
                ")\n"
            ),
            Example.reported_only(
                "from fairscale.nn.wrap import default_auto_wrap_policy\n"
                "def policy(module, recurse, numel, is_root):\n"
                "    return default_auto_wrap_policy(module, recurse, numel, is_root)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
                "policy = default_auto_wrap_policy\n"
            ),
            (
                "from fairscale.nn.wrap import config_auto_wrap_policy\n"
                "policy = config_auto_wrap_policy\n"
            ),
        ),
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
            "use torch's `checkpoint_wrapper` (and `offload_wrapper` for `offload_to_cpu=True`); "
            "its fix checkpoints without reentry, and wraps where FairScale patched: names "
            "from a parent's `named_parameters()` gain `._checkpoint_wrapped_module.`"
        ),
        why=(
            "FairScale's wrapper is reentrant-style and takes `offload_to_cpu`; torch's takes "
            "`checkpoint_impl` and offloads through a separate `offload_wrapper`. The fix "
            "asks for non-reentrant checkpointing, as compat runs it and torch recommends; "
            "`offload_to_cpu=True` is left for a human. FairScale's wrapper patches the "
            "module in place; torch's wraps it, so seen from a parent `named_parameters()` "
            "names gain `._checkpoint_wrapped_module.` (`layers.0._checkpoint_wrapped_module"
            ".weight`), while state-dict keys stay as they were (the wrapper strips the "
            "prefix): code that picks parameters by their full name needs a look. The fix "
            "needs torch 1.13: on 1.12 the wrapped module's keyword arguments "
            "(`self.attn(x, need_weights=False)`) reach `torch.utils.checkpoint`, which "
            "refuses them in either mode until 1.13, where FairScale's took them."
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
        introduced="1.13",  # keyword inputs through the non-reentrant form: 1.13 on
        cases=(
            Example.reported_only(
                "from fairscale.nn.checkpoint import checkpoint_wrapper\n"
                "block = checkpoint_wrapper(block, offload_to_cpu=True)\n"
            ),
            Example(
                before=(
                    "from fairscale.nn.checkpoint.checkpoint_activations import checkpoint_wrapper "
                    "as ckpt\n"
                    "layers = [ckpt(layer) for layer in layers]\n"
                ),
                after=(
                    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import "
                    "CheckpointImpl, checkpoint_wrapper as ckpt\n"
                    "layers = [ckpt(layer, checkpoint_impl=CheckpointImpl.NO_REENTRANT) for layer "
                    "in layers]\n"
                ),
            ),
        ),
        untouched=(
            (
                "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                "    CheckpointImpl,\n"
                "    checkpoint_wrapper,\n"
                ")\n"
                "block = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
            ),
            ("from fairscale.nn.checkpoint import is_checkpointing\nactive = is_checkpointing()\n"),
        ),
    ),
)
