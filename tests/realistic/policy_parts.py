"""Policy modules: the wrap and checkpointing policies other modules import.

``wrapping(ctx)`` holds module-level policies consumed elsewhere (issue 15's defect 18),
a size policy returned by a factory, a policy class on torch 2.0's private base
(FSDP105) and a custom policy no code in the file calls. ``checkpointing(ctx)`` and
``precision()`` are the other two modules of a ``policies/`` package.
"""

from __future__ import annotations

from tests.realistic.source import fill

WRAPPING = '''
# Imported by the training scripts: one FSDP unit per transformer block.
block_policy = partial(transformer_auto_wrap_policy, transformer_layer_cls={$Block})

# Blocks of both towers, for the multimodal runs.
multimodal_policy = partial(
    transformer_auto_wrap_policy,
    transformer_layer_cls={
        $Block,  # text decoder
        $Other,  # second tower
    },
)


def get_size_policy(min_num_params: int = int(1e8)) -> Callable:
    """Size-based wrapping for models without a repeated block."""
    return partial(default_auto_wrap_policy, min_num_params=min_num_params)


def get_policy(name: str, min_num_params: int = int(1e8)) -> Callable:
    """The policy the config names: ``block``, ``multimodal`` or ``size``."""
    if name == "block":
        return block_policy
    if name == "multimodal":
        return multimodal_policy
    if name == "size":
        return get_size_policy(min_num_params)
    raise ValueError(f"unknown wrapping policy {name!r}")


def leaf_size_policy(
    module: nn.Module,
    recurse: bool,
    unwrapped_params: int,
    min_num_params: int = int(1e7),
    exclude: Tuple[Type[nn.Module], ...] = (nn.Embedding,),
) -> bool:
    """Like the size policy, but never wraps the classes in ``exclude`` on their own."""
    if recurse:
        return not isinstance(module, exclude)
    return unwrapped_params >= min_num_params and not isinstance(module, exclude)


class BlockPolicy(_FSDPPolicy):
    """A policy object (torch 2.0): wrap ``$Block`` and keep a list of what was wrapped."""

    def __init__(self, block_cls: Type[nn.Module] = $Block) -> None:
        self._block_cls = block_cls
        self._policy = partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})

    @property
    def policy(self) -> Callable:
        return self._policy
'''

CHECKPOINTING = '''
non_reentrant_wrapper = partial(
    checkpoint_wrapper,
    offload_to_cpu=False,
    checkpoint_impl=CheckpointImpl.NO_REENTRANT,
)


def is_checkpointed_layer(submodule: nn.Module) -> bool:
    return isinstance(submodule, ($Block, $Other))


def apply_checkpointing(model: nn.Module, every: int = 1) -> None:
    """Checkpoint every ``every``-th block (1: all of them)."""
    seen = {"count": 0}

    def check_fn(submodule: nn.Module) -> bool:
        if not is_checkpointed_layer(submodule):
            return False
        seen["count"] += 1
        return (seen["count"] - 1) % every == 0

    apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=non_reentrant_wrapper, check_fn=check_fn
    )


def reentrant_checkpointing(model: nn.Module) -> None:
    """The torch 1.12 default: reentrant checkpointing (needs inputs that require grad)."""
    for name, child in list(model.named_children()):
        if is_checkpointed_layer(child):
            setattr(model, name, checkpoint_wrapper(child))
        else:
            reentrant_checkpointing(child)
'''

PRECISION = '''
fp16_policy = MixedPrecision(
    param_dtype=torch.float16,
    reduce_dtype=torch.float16,  # gradient communication
    buffer_dtype=torch.float16,
)

bf16_policy = MixedPrecision(
    param_dtype=torch.bfloat16,
    reduce_dtype=torch.bfloat16,
    buffer_dtype=torch.bfloat16,
)

# parameters in bf16, but gradients reduced in fp32 for stability
bf16_fp32_reduce = MixedPrecision(
    param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16
)

fp32_policy = MixedPrecision(
    param_dtype=torch.float32, reduce_dtype=torch.float32, buffer_dtype=torch.float32
)


def bf16_ready() -> bool:
    """bf16 needs CUDA >= 11, an Ampere GPU and NCCL >= 2.10."""
    return (
        torch.version.cuda is not None
        and torch.cuda.is_available()
        and torch.cuda.is_bf16_supported()
        and dist.is_nccl_available()
        and torch.cuda.nccl.version() >= (2, 10)
    )


def get_policy(precision: str) -> Optional[MixedPrecision]:
    table = {"fp16": fp16_policy, "bf16": bf16_policy, "bf16-fp32": bf16_fp32_reduce}
    if precision == "fp32":
        return None
    if precision.startswith("bf16") and not bf16_ready():
        raise RuntimeError("bf16 is not supported on this machine")
    return table[precision]
'''

STATE_DICTS = '''
def full_state_dict(model: nn.Module, rank0_only: bool = True) -> Dict[str, torch.Tensor]:
    """The unsharded state dict (on CPU; empty on other ranks with ``rank0_only``)."""
    config = FullStateDictConfig(offload_to_cpu=True, rank0_only=rank0_only)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
        return model.state_dict()


def load_full_state_dict(model: nn.Module, state: Dict[str, torch.Tensor]) -> None:
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        model.load_state_dict(state)


def local_state_dict(model: nn.Module) -> Dict[str, Any]:
    """This rank's flat shards (torch 1.12's LOCAL_STATE_DICT)."""
    with FSDP.state_dict_type(
        model, StateDictType.LOCAL_STATE_DICT, LocalStateDictConfig(offload_to_cpu=True)
    ):
        return model.state_dict()


def unwrap(model: nn.Module) -> nn.Module:
    while isinstance(model, (FSDP, DDP)):
        model = model.module
    return model


def sharding_strategy(name: str) -> ShardingStrategy:
    """``--sharding_strategy`` to the enum (ZeRO-3, ZeRO-2 or plain DDP)."""
    try:
        return ShardingStrategy[name.upper()]
    except KeyError:
        choices = ", ".join(s.name for s in ShardingStrategy)
        raise ValueError(f"unknown sharding strategy {name!r}; choose one of {choices}")
'''


def wrapping(ctx: dict) -> str:
    """The policies module (``Block`` and ``Other``: two layer classes)."""
    return fill(WRAPPING, **ctx)


def checkpointing(ctx: dict) -> str:
    """The activation-checkpointing policies module."""
    return fill(CHECKPOINTING, **ctx)
