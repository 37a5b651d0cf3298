"""FairScale FSDP code (2021-2022): imports, optional-dependency gates, wrapping, training.

``IMPORTS`` are the ways a file gets FairScale's names (pins for the import table, or a
head chunk that binds them); ``parts(rng, ctx)`` returns the rest of the file.
"""

from __future__ import annotations

import random

from tests.realistic.source import fill

# defect 7: FairScale's documented public path
PUBLIC_REEXPORTS = [
    "from fairscale.nn import FullyShardedDataParallel",
    "from fairscale.nn import auto_wrap",
    "from fairscale.nn import enable_wrap",
    "from fairscale.nn import wrap",
    "from fairscale.nn import checkpoint_wrapper",
    "from fairscale.nn import default_auto_wrap_policy",
]

SUBMODULES = [
    "from fairscale.nn.data_parallel import FullyShardedDataParallel",
    "from fairscale.nn.wrap import auto_wrap",
    "from fairscale.nn.wrap import enable_wrap",
    "from fairscale.nn.wrap import wrap",
    "from fairscale.nn.checkpoint import checkpoint_wrapper",
    "from fairscale.nn.wrap import default_auto_wrap_policy",
]

# defect 8: bound under a capability flag, None without FairScale
GATED = """
HAVE_FAIRSCALE = importlib.util.find_spec("fairscale") is not None
if HAVE_FAIRSCALE:
    from fairscale.nn.checkpoint import checkpoint_wrapper
    from fairscale.nn.data_parallel import FullyShardedDataParallel
    from fairscale.nn.wrap import auto_wrap, default_auto_wrap_policy, enable_wrap, wrap
else:  # FairScale is optional: plain DDP still works without it
    FullyShardedDataParallel = None
    auto_wrap = enable_wrap = wrap = checkpoint_wrapper = default_auto_wrap_policy = None
"""

GATED_LIGHTNING = """
if _FAIRSCALE_AVAILABLE:
    from fairscale.nn import (
        FullyShardedDataParallel,
        auto_wrap,
        checkpoint_wrapper,
        default_auto_wrap_policy,
        enable_wrap,
        wrap,
    )
else:
    FullyShardedDataParallel = auto_wrap = checkpoint_wrapper = None  # type: ignore
    default_auto_wrap_policy = enable_wrap = wrap = None  # type: ignore
"""

_POLICY = '''
def $policy(
    module: nn.Module,
    recurse: bool,
    unwrapped_params: int,
    module_is_root: bool = False,
    min_num_params: int = int($min_params),
) -> bool:
    """FairScale calls this with the count of parameters not yet wrapped."""
    if recurse:
        return not isinstance(module, (nn.MultiheadAttention,))
    if module_is_root:
        # the root is wrapped by the caller
        return False
    return unwrapped_params >= min_num_params
'''

_WRAP = '''
def $wrap(model: nn.Module, args: argparse.Namespace) -> nn.Module:
    """Wrap with FairScale's FSDP; big layers get their own unit through auto_wrap."""
    fsdp_config = dict(
        mixed_precision=args.precision == "fp16",
        flatten_parameters=True,
        reshard_after_forward=not args.zero2,
        move_grads_to_cpu=args.cpu_offload,
        move_params_to_cpu=args.cpu_offload,
        compute_dtype=torch.float16 if args.precision == "fp16" else torch.float32,
    )
    with enable_wrap(
        wrapper_cls=FullyShardedDataParallel, auto_wrap_policy=$policy_arg, **fsdp_config
    ):
        if args.checkpoint_activations:
            for index, layer in enumerate(model.blocks):
                model.blocks[index] = wrap(checkpoint_wrapper(layer, offload_to_cpu=False))
        model = auto_wrap(model)
        model = wrap(model)
    return model
'''

_DIRECT = '''
def $wrap_layers(layers: nn.ModuleList, fp16: bool = True) -> nn.ModuleList:
    """Shard each layer on its own; checkpointing inside the shard."""
    return nn.ModuleList(
        FullyShardedDataParallel(
            checkpoint_wrapper(layer),
            mixed_precision=fp16,
            flatten_parameters=True,
            reshard_after_forward=True,
        )
        for layer in layers
    )
'''

_TRAIN = """
def train(model: nn.Module, loader: DataLoader, args: argparse.Namespace) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for step, (inputs, targets) in enumerate(loader):
            inputs, targets = inputs.cuda(), targets.cuda()
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            # FairScale's FSDP knows how to clip sharded gradients
            model.clip_grad_norm_(args.clip)
            optimizer.step()
            optimizer.zero_grad()
            if step % args.log_every == 0 and dist.get_rank() == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.3f}")
        save(model, optimizer, args.output_dir, epoch)


def save(model: nn.Module, optimizer: torch.optim.Optimizer, output_dir: str, epoch: int) -> None:
    # state_dict() gathers the full weights on every rank: expensive for big models
    state = model.state_dict()
    optim_state = model.gather_full_optim_state_dict(optimizer)
    if dist.get_rank() == 0:
        os.makedirs(output_dir, exist_ok=True)
        torch.save({"model": state, "optimizer": optim_state}, f"{output_dir}/epoch{epoch}.pt")
    # each rank keeps its local shard too, for exact resumption
    shard = {"model": model.local_state_dict(), "meta": model.local_metadata_dict()}
    torch.save(shard, f"{output_dir}/epoch{epoch}-shard{dist.get_rank()}.pt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=$lr)
    parser.add_argument("--epochs", type=int, default=$epochs)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--log_every", type=int, default=20)
    parser.add_argument("--precision", default="fp16")
    parser.add_argument("--zero2", action="store_true", help="keep params after forward")
    parser.add_argument("--cpu_offload", action="store_true")
    parser.add_argument("--checkpoint_activations", action="store_true")
    parser.add_argument("--output_dir", default="checkpoints")
    args = parser.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
    model = $wrap($build(), args)
    loader = DataLoader($dataset, batch_size=32, shuffle=True)
    train(model, loader, args)


if __name__ == "__main__":
    main()
"""


def parts(rng: random.Random, ctx: dict) -> list[str]:
    """Policy, wrapping and a training script for a FairScale file."""
    values = dict(
        ctx,
        min_params=rng.choice(["1e6", "1e7", "1e8"]),
        lr=rng.choice(["1e-4", "3e-4"]),
        epochs=rng.choice([1, 2, 5]),
    )
    policy = ctx["policy"]
    if ctx.get("size_partial"):  # defect 9: FairScale's own size policy, in enable_wrap
        threshold = values["min_params"]
        policy_arg = f"functools.partial(default_auto_wrap_policy, min_num_params=int({threshold}))"
    else:
        policy_arg = policy
    chunks = []
    if not ctx.get("size_partial"):
        chunks.append(fill(_POLICY, **values))
    chunks.append(fill(_WRAP, policy_arg=policy_arg, **values))
    chunks.append(fill(_DIRECT, **values))
    chunks.append(fill(_TRAIN, **values))
    return chunks
