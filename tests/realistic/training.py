"""A training script's ordinary parts: arguments, process group, loops, checkpoints.

The FSDP wrapping itself comes from ``tests.realistic.torch_shapes``; these parts call it
as ``$wrap(model, args)`` and save with ``$FSDP.state_dict_type`` (torch 1.12 style).
"""

from __future__ import annotations

import random

from tests.realistic.source import fill

_ARGUMENTS = [
    ('"--model_name"', "str", '"base"', "preset of the model config"),
    ('"--data_path"', "str", '"data/train.bin"', "tokenised training data"),
    ('"--val_data_path"', "str", '"data/val.bin"', None),
    ('"--output_dir"', "str", '"checkpoints"', "where checkpoints and logs go"),
    ('"--batch_size"', "int", "8", "per device"),
    ('"--val_batch_size"', "int", "16", None),
    ('"--gradient_accumulation_steps"', "int", "4", None),
    ('"--lr"', "float", "3e-4", "peak learning rate"),
    ('"--min_lr"', "float", "3e-5", None),
    ('"--weight_decay"', "float", "0.1", None),
    ('"--beta1"', "float", "0.9", None),
    ('"--beta2"', "float", "0.95", None),
    ('"--grad_clip"', "float", "1.0", "0 disables clipping"),
    ('"--warmup_steps"', "int", "2000", None),
    ('"--max_steps"', "int", "600000", None),
    ('"--epochs"', "int", "3", None),
    ('"--eval_interval"', "int", "1000", None),
    ('"--eval_iters"', "int", "200", None),
    ('"--log_interval"', "int", "10", None),
    ('"--save_interval"', "int", "5000", None),
    ('"--seed"', "int", "1337", None),
    ('"--num_workers"', "int", "4", None),
    ('"--block_size"', "int", "2048", None),
    ('"--min_num_params"', "int", "100_000_000", "size-based wrapping threshold"),
    ('"--sharding_strategy"', "str", '"FULL_SHARD"', "FULL_SHARD, SHARD_GRAD_OP or NO_SHARD"),
    ('"--precision"', "str", '"bf16"', "fp32, fp16 or bf16"),
    ('"--resume_from"', "str", "None", "checkpoint to resume from"),
    ('"--run_name"', "str", "None", None),
    ('"--wandb_project"', "str", "None", None),
    ('"--dropout"', "float", "0.0", None),
    ('"--label_smoothing"', "float", "0.0", None),
    ('"--max_grad_norm"', "float", "1.0", None),
    ('"--profile_steps"', "int", "0", "profile this many steps, then exit"),
]

_FLAGS = [
    ('"--cpu_offload"', "offload parameters to CPU"),
    ('"--activation_checkpointing"', "recompute activations of each block in backward"),
    ('"--limit_all_gathers"', "rate-limit all-gathers (less memory, a little slower)"),
    ('"--forward_prefetch"', None),
    ('"--use_orig_params"', "needed for torch.compile and per-parameter optimizer options"),
    ('"--compile"', "wrap the model with torch.compile"),
    ('"--sync_module_states"', "broadcast rank 0's weights at wrap time"),
    ('"--low_cpu_fsdp"', "build the model on the meta device on ranks other than 0"),
    ('"--dry_run"', None),
]


def parse_args(rng: random.Random, description: str) -> str:
    """``parse_args()`` with a seeded selection of options (and always the ones used)."""
    always = {'"--batch_size"', '"--lr"', '"--epochs"', '"--output_dir"', '"--seed"'}
    always |= {'"--min_num_params"', '"--gradient_accumulation_steps"', '"--grad_clip"'}
    always |= {'"--precision"', '"--weight_decay"', '"--block_size"', '"--log_interval"'}
    chosen = [a for a in _ARGUMENTS if a[0] in always or rng.random() < 0.6]
    flags = [f for f in _FLAGS if f[0] in {'"--cpu_offload"', '"--activation_checkpointing"'}]
    flags += [f for f in _FLAGS if f not in flags and rng.random() < 0.5]
    lines = [
        "def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:",
        f'    parser = argparse.ArgumentParser(description="{description}")',
    ]
    for flag, kind, default, note in chosen:
        help_text = f', help="{note}"' if note else ""
        call = f"    parser.add_argument({flag}, type={kind}, default={default}{help_text})"
        if len(call) > 99:
            call = (
                f"    parser.add_argument(\n        {flag},\n        type={kind},\n"
                f'        default={default},\n        help="{note}",\n    )'
            )
        lines.append(call)
    for flag, note in flags:
        help_text = f', help="{note}"' if note else ""
        call = f'    parser.add_argument({flag}, action="store_true"{help_text})'
        if len(call) > 99:
            call = f'    parser.add_argument(\n        {flag},\n        action="store_true",\n'
            call += f'        help="{note}",\n    )'
        lines.append(call)
    lines.append("    return parser.parse_args(argv)")
    return "\n".join(lines)


_SETUP = '''
def setup(backend: str = "nccl") -> Tuple[int, int, int]:
    """Join the process group torchrun set up; return (rank, local rank, world size)."""
    dist.init_process_group(backend, timeout=timedelta(minutes=$timeout))
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = dist.get_world_size()
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    return rank, local_rank, world_size


def cleanup() -> None:
    dist.barrier()
    dist.destroy_process_group()
'''

_PRECISION = '''
def mixed_precision_policy(name: str) -> Optional[MixedPrecision]:
    """The FSDP mixed-precision settings for ``--precision``."""
    if name == "bf16":
        # bf16 needs Ampere or newer and NCCL >= 2.10
        if not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()):
            raise RuntimeError("bf16 was asked for but this GPU does not support it")
        return MixedPrecision(
            param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16
        )
    if name == "fp16":
        return MixedPrecision(
            param_dtype=torch.float16, reduce_dtype=torch.float16, buffer_dtype=torch.float16
        )
    if name == "fp32":
        return None
    raise ValueError(f"unknown precision {name!r}")
'''

_TRAIN = """
def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    epoch: int,
    args: argparse.Namespace,
    rank: int,
    scaler: Optional[ShardedGradScaler] = None,
) -> float:
    model.train()
    total = torch.zeros(2, device=torch.cuda.current_device())
    if isinstance(loader.sampler, DistributedSampler):
        loader.sampler.set_epoch(epoch)
    start = time.perf_counter()
    for step, batch in enumerate(loader):
        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}
        _, loss = model(batch["input_ids"], batch["labels"])
        loss = loss / args.gradient_accumulation_steps
        if scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        total[0] += loss.detach().float()
        total[1] += 1
        if (step + 1) % args.gradient_accumulation_steps != 0:
            continue
        if args.grad_clip > 0:
            if scaler is not None:
                scaler.unscale_(optimizer)
            # FSDP shards the gradients: its own clip_grad_norm_ reduces across ranks
            model.clip_grad_norm_(args.grad_clip)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if rank == 0 and step % args.log_interval == 0:
            elapsed = time.perf_counter() - start
            lr = scheduler.get_last_lr()[0]
            print(f"epoch {epoch} step {step}: loss {loss.item():.4f} lr {lr:.2e} {elapsed:.1f}s")
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return (total[0] / total[1]).item()


@torch.no_grad()
def evaluate(model: nn.Module, loader: DataLoader, max_batches: int = $eval_batches) -> float:
    model.eval()
    losses = torch.zeros(2, device=torch.cuda.current_device())
    for index, batch in enumerate(loader):
        if index >= max_batches:
            break
        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}
        _, loss = model(batch["input_ids"], batch["labels"])
        losses[0] += loss.float()
        losses[1] += 1
    dist.all_reduce(losses, op=dist.ReduceOp.SUM)
    model.train()
    return (losses[0] / losses[1]).item()
"""

_SAVE = '''
def save_checkpoint(
    model: $FSDP,
    optimizer: torch.optim.Optimizer,
    epoch: int,
    output_dir: str,
    rank: int,
) -> None:
    """Gather a full state dict on rank 0 (offloaded to CPU) and save it there."""
    save_policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with $FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, save_policy):
        model_state = model.state_dict()
    # the optimizer state is sharded too; gather it the torch 1.12 way
    optim_state = $FSDP.full_optim_state_dict(model, optimizer)
    if rank == 0:
        os.makedirs(output_dir, exist_ok=True)
        path = os.path.join(output_dir, f"epoch_{epoch:03d}.pt")
        torch.save({"model": model_state, "optimizer": optim_state, "epoch": epoch}, path)
        print(f"saved {path}")
    dist.barrier()


def load_checkpoint(model: $FSDP, optimizer: torch.optim.Optimizer, path: str) -> int:
    """Load a full checkpoint into a wrapped model; return the epoch to resume at."""
    checkpoint = torch.load(path, map_location="cpu")
    load_policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=False)
    with $FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, load_policy):
        model.load_state_dict(checkpoint["model"])
    sharded = $FSDP.scatter_full_optim_state_dict(checkpoint["optimizer"], model)
    optimizer.load_state_dict(sharded)
    return int(checkpoint["epoch"]) + 1
'''

_SHARDED_SAVE = '''
def save_sharded(model: $FSDP, output_dir: str, rank: int) -> str:
    """Each rank writes its own shard: fast, but only loadable with the same world size."""
    path = os.path.join(output_dir, f"shard_rank{rank:05d}.pt")
    with $FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        torch.save(model.state_dict(), path)
    return path


def load_sharded(model: $FSDP, output_dir: str, rank: int) -> None:
    path = os.path.join(output_dir, f"shard_rank{rank:05d}.pt")
    with $FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        model.load_state_dict(torch.load(path))
'''

_MAIN = """
def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    rank, local_rank, world_size = setup()
    torch.manual_seed(args.seed + rank)
    model = $build_model(args)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"model has {params / 1e6:.1f}M parameters before sharding")
    model = $wrap(model, args)
    $loader_lines
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=$gamma)
    scaler = ShardedGradScaler() if args.precision == "fp16" else None
    best = float("inf")
    for epoch in range(1, args.epochs + 1):
        loss = train_one_epoch(model, loader, optimizer, scheduler, epoch, args, rank, scaler)
        val_loss = evaluate(model, val_loader)
        if rank == 0:
            print(f"epoch {epoch}: train {loss:.4f} val {val_loss:.4f} ({world_size} ranks)")
        if val_loss < best:
            best = val_loss
            save_checkpoint(model, optimizer, epoch, args.output_dir, rank)
    torch.cuda.synchronize(local_rank)
    cleanup()


if __name__ == "__main__":
    main()
"""

_LOADERS = (
    "dataset = $dataset\n"
    "    sampler = DistributedSampler(dataset, rank=rank, num_replicas=world_size, shuffle=True)\n"
    "    loader = DataLoader(\n"
    "        dataset, batch_size=args.batch_size, sampler=sampler, num_workers=2, pin_memory=True\n"
    "    )\n"
    "    val_loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=2)"
)


def parts(rng: random.Random, FSDP: str, wrap: str, build_model: str, dataset: str) -> list[str]:
    """Setup, precision, loops, checkpointing and ``main`` of one script."""
    values = dict(
        FSDP=FSDP,
        wrap=wrap,
        build_model=build_model,
        timeout=rng.choice([10, 30, 60]),
        eval_batches=rng.choice([50, 100, 200]),
        gamma=rng.choice([0.7, 0.85, 0.95]),
        loader_lines=fill(_LOADERS, dataset=dataset),
    )
    chunks = [fill(_SETUP, **values), fill(_PRECISION, **values), fill(_TRAIN, **values)]
    chunks.append(fill(_SAVE, **values))
    if rng.random() < 0.5:
        chunks.append(fill(_SHARDED_SAVE, **values))
    chunks.append(fill(_MAIN, **values))
    return chunks


def precision_chunk() -> str:
    """``mixed_precision_policy(name)`` alone (for modules that wrap but do not train)."""
    return fill(_PRECISION)
