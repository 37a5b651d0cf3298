"""Torch FSDP shapes of the 1.11-2.0 era: wrap functions, policies, gates, fallbacks.

Each ``WRAPS`` entry returns the chunks of one way a script wraps its model, defining
``$wrap(model, args)``; the names it uses come from ``ctx``: ``FSDP`` (the file's name for
the class), ``Block`` (the layer class), ``wrap``, ``partial`` (``partial`` or
``functools.partial``). Head chunks (import fallbacks, gates) come back separately.
"""

from __future__ import annotations

from tests.realistic.source import fill

_FSDP_CALL = """
    model = $FSDP(
        model,
        $policy_kw=$policy,
        sharding_strategy=getattr(ShardingStrategy, args.sharding_strategy),
        cpu_offload=CPUOffload(offload_params=True) if args.cpu_offload else None,
        mixed_precision=mixed_precision_policy(args.precision),
        backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
        device_id=torch.cuda.current_device(),$extra
    )"""


def _call(ctx: dict, policy: str, kw: str = "auto_wrap_policy", extra: str = "") -> str:
    return fill(_FSDP_CALL, FSDP=ctx["FSDP"], policy=policy, policy_kw=kw, extra=extra)


def size_partial(ctx: dict) -> tuple[list[str], list[str]]:
    """FSDP101: ``partial(default_auto_wrap_policy, min_num_params=...)``."""
    text = f'''
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    """Shard every submodule with more than ``--min_num_params`` parameters."""
    policy = {ctx["partial"]}(default_auto_wrap_policy, min_num_params=args.min_num_params)
{_call(ctx, "policy")}
    return model
'''
    return [text], []


def custom_policy(ctx: dict) -> tuple[list[str], list[str]]:
    """FSDP102: a size policy written against torch 1.12's ``unwrapped_params``."""
    name = ctx.get("policy_name", "size_and_type_policy")
    text = f'''
def {name}(
    module: nn.Module,
    recurse: bool,
    unwrapped_params: int,
    min_num_params: int = int(1e8),
) -> bool:
    """Wrap big modules, but never an embedding on its own (its gradients are sparse)."""
    if recurse:
        # keep walking down: the decision is made at the leaves
        return True
    if isinstance(module, nn.Embedding):
        return False
    return unwrapped_params >= min_num_params


def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    policy = {ctx["partial"]}({name}, min_num_params=args.min_num_params)
{_call(ctx, "policy")}
    return model
'''
    return [text], []


def lambda_policy(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 13: a lambda policy with ``unwrapped_params`` at the call."""
    policy = (
        "lambda module, recurse, unwrapped_params: recurse\n"
        "        or unwrapped_params >= args.min_num_params"
    )
    text = f"""
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
{_call(ctx, policy)}
    return model
"""
    return [text], []


def transformer_local(ctx: dict) -> tuple[list[str], list[str]]:
    """FSDP103 in a function: the partial is consumed by FSDP right below."""
    text = f'''
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    """One FSDP unit per transformer block, plus the root for the rest."""
    auto_wrap_policy = {ctx["partial"]}(
        transformer_auto_wrap_policy,
        transformer_layer_cls={{{ctx["Block"]}}},
    )
{_call(ctx, "auto_wrap_policy", extra=chr(10) + "        limit_all_gathers=True,")}
    return model
'''
    return [text], []


def transformer_conditional(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 18: module-level partials reaching FSDP through ``a if big else b``."""
    block, partial = ctx["Block"], ctx["partial"]
    text = f"""
# one unit per block; for small models the blocks and the embedding together
block_policy = {partial}(transformer_auto_wrap_policy, transformer_layer_cls={{{block}}})
coarse_policy = {partial}(
    transformer_auto_wrap_policy, transformer_layer_cls={{{block}, nn.Embedding}}
)


def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    big = sum(p.numel() for p in model.parameters()) > args.min_num_params
{_call(ctx, "block_policy if big else coarse_policy")}
    return model
"""
    return [text], []


def lambda_partial(ctx: dict) -> tuple[list[str], list[str]]:
    """FSDP104: ``partial(lambda_auto_wrap_policy, lambda_fn=...)``."""
    text = f"""
def is_block(module: nn.Module) -> bool:
    return isinstance(module, {ctx["Block"]})


def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    policy = {ctx["partial"]}(lambda_auto_wrap_policy, lambda_fn=is_block)
{_call(ctx, "policy")}
    return model
"""
    return [text], []


def or_policy(ctx: dict) -> tuple[list[str], list[str]]:
    """``_or_policy`` over a lambda policy (trainable leaves) and a transformer policy."""
    partial = ctx["partial"]
    text = f'''
def trainable_leaf(module: nn.Module) -> bool:
    """Leaves with a trainable weight get their own unit (adapters, new heads)."""
    if list(module.children()):
        return False
    weight = getattr(module, "weight", None)
    return weight is not None and weight.requires_grad


def combined_policy(layer_classes: Set[Type[nn.Module]]):
    leaf_policy = {partial}(lambda_auto_wrap_policy, lambda_fn=trainable_leaf)
    layer_policy = {partial}(transformer_auto_wrap_policy, transformer_layer_cls=layer_classes)
    return {partial}(_or_policy, policies=[leaf_policy, layer_policy])


def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    policy = combined_policy({{{ctx["Block"]}}})
{_call(ctx, "policy", extra=chr(10) + "        use_orig_params=True,")}
    return model
'''
    return [text], []


def version_gate(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 4: the torch < 2.0 branch keeps ``unwrapped_params`` on purpose."""
    head = """
if version.parse(torch.__version__) >= version.parse("2.0.0"):

    def min_size_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8)):
        return recurse or nonwrapped_numel >= min_num_params

else:
    # torch 1.12 and 1.13 pass the count under its old name
    def min_size_policy(module, recurse, unwrapped_params, min_num_params=int(1e8)):
        return recurse or unwrapped_params >= min_num_params
"""
    text = f"""
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    policy = {ctx["partial"]}(min_size_policy, min_num_params=args.min_num_params)
{_call(ctx, "policy")}
    return model
"""
    return [text], [head]


def flag_gate(ctx: dict) -> tuple[list[str], list[str]]:
    """A Lightning-style flag chooses between the 2.0 class and the 1.x partial."""
    head = """
try:
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
except ImportError:  # torch < 2.0
    ModuleWrapPolicy = None
"""
    text = f"""
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    if _TORCH_GREATER_EQUAL_2_0:
        policy = ModuleWrapPolicy({{{ctx["Block"]}}})
    else:
        policy = {ctx["partial"]}(
            transformer_auto_wrap_policy, transformer_layer_cls={{{ctx["Block"]}}}
        )
{_call(ctx, "policy")}
    return model
"""
    return [text], [head]


def import_fallback(ctx: dict) -> tuple[list[str], list[str]]:
    """``try: new name / except ImportError: old name as new name``."""
    head = """
try:
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy
except ImportError:  # torch 1.11
    from torch.distributed.fsdp.wrap import (
        default_auto_wrap_policy as size_based_auto_wrap_policy,
    )
"""
    text = f"""
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    policy = {ctx["partial"]}(size_based_auto_wrap_policy, min_num_params=args.min_num_params)
{_call(ctx, "policy")}
    return model
"""
    return [text], [head]


def torch_111(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 15: torch 1.11's ``fsdp_auto_wrap_policy=`` keyword."""
    text = f"""
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    # written for torch 1.11: the keyword was renamed auto_wrap_policy in 1.12
    policy = {ctx["partial"]}(default_auto_wrap_policy, min_num_params=args.min_num_params)
    return {ctx["FSDP"]}(
        model,
        fsdp_auto_wrap_policy=policy,
        cpu_offload=CPUOffload(offload_params=args.cpu_offload),
    )
"""
    return [text], []


def manual_wrap(ctx: dict) -> tuple[list[str], list[str]]:
    """torch's ``enable_wrap``/``wrap`` with ``checkpoint_wrapper`` (FSDP108) per block."""
    text = f'''
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    """Wrap block by block by hand (the auto-wrapper missed our shared embedding)."""
    fsdp_kwargs = dict(
        mixed_precision=mixed_precision_policy(args.precision),
        device_id=torch.cuda.current_device(),
    )
    with enable_wrap(wrapper_cls={ctx["FSDP"]}, **fsdp_kwargs):
        for index, block in enumerate(model.blocks):
            if args.activation_checkpointing:
                block = checkpoint_wrapper(block)
            model.blocks[index] = wrap(block)
        model = wrap(model)
    return model
'''
    return [text], []


def checkpointing(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 5: a ``checkpoint_wrapper`` partial that already names the implementation."""
    text = f'''
non_reentrant_wrapper = {ctx["partial"]}(
    checkpoint_wrapper,
    checkpoint_impl=CheckpointImpl.NO_REENTRANT,
)


def apply_fsdp_checkpointing(model: nn.Module) -> None:
    """Recompute each block's activations in backward (after wrapping with FSDP)."""
    check_fn = lambda submodule: isinstance(submodule, {ctx["Block"]})  # noqa: E731
    apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=non_reentrant_wrapper, check_fn=check_fn
    )
'''
    return [text], []


def offload_checkpointing(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 6: ``checkpoint_wrapper(block, offload_to_cpu=True)`` (torch 1.12)."""
    text = f'''
def checkpoint_blocks(model: nn.Module, offload: bool = False) -> int:
    """Wrap each block for activation checkpointing; return how many were wrapped."""
    count = 0
    for name, child in model.named_children():
        if isinstance(child, {ctx["Block"]}):
            if offload:
                setattr(model, name, checkpoint_wrapper(child, offload_to_cpu=True))
            else:
                setattr(model, name, checkpoint_wrapper(child))
            count += 1
        else:
            count += checkpoint_blocks(child, offload)
    return count
'''
    return [text], []


def policy_name(ctx: dict) -> tuple[list[str], list[str]]:
    """Defect 1: the old name read as an attribute and inside an f-string."""
    text = '''
def describe_policy(policy) -> str:
    """A readable name for an auto-wrap policy (for the run's log)."""
    target = getattr(policy, "func", policy)
    if target is default_auto_wrap_policy:
        return f"{default_auto_wrap_policy.__name__}(min_num_params={policy.keywords})"
    return getattr(target, "__name__", repr(target))
'''
    return [text], []


def module_alias(ctx: dict) -> tuple[list[str], list[str]]:
    """The old name reached through a module alias."""
    text = f"""
def {ctx["wrap"]}(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    policy = {ctx["partial"]}(
        fsdp_wrap.default_auto_wrap_policy, min_num_params=args.min_num_params
    )
{_call(ctx, "policy")}
    return model
"""
    return [text], []


def fsdp2(ctx: dict) -> tuple[list[str], list[str]]:
    """FSDP107: FSDP2 imported from the private ``_composable`` path (torch 2.4-2.5)."""
    text = f'''
def shard_with_fsdp2(model: nn.Module, reshard_after_forward: bool = True) -> nn.Module:
    """The per-parameter sharding of torch 2.4+: each block, then the root."""
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for module in model.modules():
        if isinstance(module, {ctx["Block"]}):
            fully_shard(module, mp_policy=mp_policy, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mp_policy=mp_policy)
    return model
'''
    return [text], []


WRAPS = {
    "size_partial": size_partial,
    "custom_policy": custom_policy,
    "lambda_policy": lambda_policy,
    "transformer_local": transformer_local,
    "transformer_conditional": transformer_conditional,
    "lambda_partial": lambda_partial,
    "or_policy": or_policy,
    "version_gate": version_gate,
    "flag_gate": flag_gate,
    "import_fallback": import_fallback,
    "torch_111": torch_111,
    "manual_wrap": manual_wrap,
    "module_alias": module_alias,
}
"""Ways a script wraps its model; each defines ``ctx["wrap"]``."""

EXTRAS = {
    "checkpointing": checkpointing,
    "offload_checkpointing": offload_checkpointing,
    "policy_name": policy_name,
    "fsdp2": fsdp2,
}
"""Further FSDP chunks a file may carry beside its wrap function."""
