"""FSDP1 models and FSDP2 ports of our own writing, for the port checker's tests.

One tiny language model (:class:`Net`: an embedding, two blocks, a head, a RoPE-like
non-persistent table) and builders ``(rank, world_size) -> (model, optimizer)``: FSDP1
references, a clean FSDP2 port, and ports that each carry one run-time bug of
``FSDP2-PORTS.md`` section 8 (the names say which). The ranks import this module by
name, so everything here is module-level.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn

from compat.portcheck import rank_device

VOCAB, WIDTH, LENGTH = 11, 8, 6


def _rope_table(length: int, width: int) -> torch.Tensor:
    position = torch.arange(length, dtype=torch.float32)[:, None]
    frequency = torch.exp(-math.log(100.0) * torch.arange(width, dtype=torch.float32) / width)
    return torch.cos(position * frequency)


class Block(nn.Module):
    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.fc2 = nn.Linear(WIDTH, WIDTH)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.fc2(self.dropout(torch.relu(self.fc1(x))))
        if positions is not None:  # precision-sensitive: large fp32 positions
            x = x * torch.cos(positions * 1.7).to(x.dtype)
        return x


class Net(nn.Module):
    """Embedding, two blocks, a head; ``tied``: the head shares the embedding's weight;
    ``positions``: the root hands each block an fp32 position table it computes."""

    def __init__(self, tied: bool = False, positions: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList([Block(dropout), Block(dropout)])
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        if tied:
            self.head.weight = self.embed.weight
        self.positions = positions
        self.register_buffer("rope", _rope_table(LENGTH, WIDTH), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        h = h + self.rope[: tokens.shape[1]].to(h.dtype)
        positions = None
        if self.positions:
            positions = 100.0 + 0.37 * torch.arange(
                tokens.shape[1], device=h.device, dtype=torch.float32
            )
            positions = positions[None, :, None]
        for layer in self.layers:
            h = layer(h, positions) if positions is not None else layer(h)
        return self.head(h)


def batch(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens and next-token targets, different for each step and rank."""
    generator = torch.Generator().manual_seed(1000 * step + rank)
    tokens = torch.randint(0, VOCAB, (4, LENGTH + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def _adamw(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-2)


def _fsdp1(model: nn.Module, **kwargs: Any) -> nn.Module:
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return FullyShardedDataParallel(
        model, auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=rank_device(), **kwargs
    )


def _bf16_fsdp1() -> Any:
    from torch.distributed.fsdp import MixedPrecision

    return MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


def _bf16_fsdp2(**kwargs: Any) -> Any:
    from torch.distributed.fsdp import MixedPrecisionPolicy

    return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, **kwargs)


def _shard_layers(model: Net, **kwargs: Any) -> Net:
    from torch.distributed.fsdp import fully_shard

    for layer in model.layers:
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    return model


# ---- references (FSDP1) ----------------------------------------------------------


def fsdp1(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net().to(rank_device()))
    return model, _adamw(model)


def fsdp1_orig_params(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net().to(rank_device()), use_orig_params=True)
    return model, _adamw(model)


def fsdp1_dropout(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net(dropout=0.3).to(rank_device()))
    return model, _adamw(model)


def fsdp1_bf16(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net().to(rank_device()), mixed_precision=_bf16_fsdp1())
    return model, _adamw(model)


def fsdp1_tied(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net(tied=True).to(rank_device()))
    return model, _adamw(model)


def fsdp1_positions_bf16(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net(positions=True).to(rank_device()), mixed_precision=_bf16_fsdp1())
    return model, _adamw(model)


def _load_on_rank0(model: nn.Module, rank: int) -> None:
    # A rank-0 checkpoint load: only rank 0 has the pretrained values.
    if rank == 0:
        with torch.no_grad():
            for index, param in enumerate(model.parameters()):
                param.copy_(torch.linspace(-1, 1, param.numel()).view_as(param) * (index + 1) / 7)
            model.rope.mul_(0.5)  # a table the checkpoint's model computed its own way


def fsdp1_rank0_load(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """FSDP1 with ``sync_module_states``, written as its exact equivalent on CPU ranks
    (FSDP1 refuses to broadcast CPU tensors): a broadcast from rank 0, then the wrap."""
    model = Net().to(rank_device())
    _load_on_rank0(model, rank)
    for tensor in [*model.parameters(), *model.buffers()]:
        dist.broadcast(tensor.detach(), src=0)
    model = _fsdp1(model)
    return model, _adamw(model)


# ---- the clean ports (FSDP2) -------------------------------------------------------


def fsdp2(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """Units in FSDP1's order, the root last, the optimizer after sharding."""
    model = _shard_layers(Net().to(rank_device()))
    return model, _adamw(model)


def fsdp2_tied(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """Tied weights left together in the root, as FSDP1's policy left them."""
    model = _shard_layers(Net(tied=True).to(rank_device()))
    return model, _adamw(model)


def fsdp2_dropout_after_drawing(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """A port whose setup draws random numbers FSDP1's did not (a data order, say)."""
    model = _shard_layers(Net(dropout=0.3).to(rank_device()))
    torch.randperm(100)
    return model, _adamw(model)


def fsdp2_meta(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """Meta first, shard, materialise, load the full weights, recompute the table."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    reference = Net()  # the weights every rank loads (a checkpoint in a real script)
    with torch.device("meta"):
        model = Net()
    _shard_layers(model)
    model.to_empty(device=rank_device())
    state = {k: v.to(rank_device()) for k, v in reference.state_dict().items()}
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True))
    model.rope = _rope_table(LENGTH, WIDTH).to(rank_device())  # not in any state dict
    return model, _adamw(model)


# ---- ports with one bug each (FSDP2-PORTS.md section 8) ------------------------------


def children_left_on_meta(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """fairseq2's first port: per unit, materialise the unit's own tensors, then shard."""
    from torch.distributed.fsdp import fully_shard

    with torch.device("meta"):
        model = Net()
    for module in [*model.layers, model]:
        module.to_empty(device=rank_device(), recurse=False)
        fully_shard(module)
    return model, _adamw(model)


def root_without_unit_arguments(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """torchtune's first recipe: the units get the policy, a bare fully_shard(model)."""
    from torch.distributed.fsdp import fully_shard

    model = Net().to(rank_device())
    for layer in model.layers:
        fully_shard(layer, mp_policy=_bf16_fsdp2())
    fully_shard(model)
    return model, _adamw(model)


def unit_filter_matched_nothing(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """A name test written for another model's layout ('decoder.layers.<i>')."""
    from torch.distributed.fsdp import fully_shard

    model = Net().to(rank_device())
    for name, module in reversed(list(model.named_modules())):
        parts = name.split(".")
        if parts[:2] == ["decoder", "layers"] and len(parts) == 3:
            fully_shard(module)
    fully_shard(model)
    return model, _adamw(model)


@contextlib.contextmanager
def _uninitialised_as_nan() -> Iterator[None]:
    # What to_empty leaves is whatever memory held: torch's deterministic mode fills it
    # with NaN, so the test does not depend on what a freed block happened to contain.
    mode = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(mode)


def buffer_left_after_to_empty(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """Meta, shard, to_empty, load the full weights: the RoPE table is not in them."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    reference = Net()
    with torch.device("meta"):
        model = Net()
    _shard_layers(model)
    with _uninitialised_as_nan():
        model.to_empty(device=rank_device())
    state = {k: v.to(rank_device()) for k, v in reference.state_dict().items()}
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True))
    return model, _adamw(model)


def optimizer_before_sharding(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = Net().to(rank_device())
    optimizer = _adamw(model)
    return _shard_layers(model), optimizer


def tied_weights_split(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """The embedding made a unit of its own while the head (in the root) shares its weight."""
    from torch.distributed.fsdp import fully_shard

    model = Net(tied=True).to(rank_device())
    fully_shard(model.embed)
    model = _shard_layers(model)
    return model, _adamw(model)


def per_unit_input_casting(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """One MixedPrecisionPolicy for every unit: the blocks' fp32 positions become bf16."""
    model = _shard_layers(Net(positions=True).to(rank_device()), mp_policy=_bf16_fsdp2())
    return model, _adamw(model)


def missed_rank0_broadcast(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """Rank 0 loads, then fully_shard: nothing broadcasts what sync_module_states did."""
    model = Net().to(rank_device())
    _load_on_rank0(model, rank)
    model = _shard_layers(model)
    return model, _adamw(model)


def _grouped_adamw(model: nn.Module) -> torch.optim.Optimizer:
    # No weight decay on the Linear biases, found module by module: under FSDP1 with flat
    # parameters no module is a Linear holding a bias any more.
    decay, no_decay = [], []
    for module in model.modules():
        for name, param in module._parameters.items():
            if param is not None:
                biased = isinstance(module, nn.Linear) and name == "bias"
                (no_decay if biased else decay).append(param)
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1e-2)


def fsdp1_grouped(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    model = _fsdp1(Net().to(rank_device()))
    return model, _grouped_adamw(model)


def groups_per_module(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """The FSDP1 script's grouping code kept as it was: on FSDP2 it finds the biases."""
    model = _shard_layers(Net().to(rank_device()))
    return model, _grouped_adamw(model)


def fsdp2_bf16(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """The bf16 port as a careful maintainer writes it: FSDP1's root-only input casting."""
    from torch.distributed.fsdp import fully_shard

    model = Net().to(rank_device())
    for layer in model.layers:
        fully_shard(layer, mp_policy=_bf16_fsdp2(cast_forward_inputs=False))
    fully_shard(model, mp_policy=_bf16_fsdp2())
    return model, _adamw(model)


def smoothed_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """A loss of the script's own: cross-entropy with label smoothing."""
    tokens, targets = batch
    logits = model(tokens).float()
    return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), label_smoothing=0.1)


def _mesh_2d() -> Any:
    from torch.distributed.device_mesh import init_device_mesh

    shape = (2, dist.get_world_size() // 2)
    return init_device_mesh(rank_device().type, shape, mesh_dim_names=("replicate", "shard"))


def fsdp1_hybrid(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """FSDP1 HYBRID_SHARD on a 2-D mesh: replicas of 2 shard groups."""
    from torch.distributed.fsdp import ShardingStrategy

    model = _fsdp1(
        Net().to(rank_device()),
        sharding_strategy=ShardingStrategy.HYBRID_SHARD,
        device_mesh=_mesh_2d(),
    )
    return model, _adamw(model)


def fsdp2_hybrid(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """The port: the same units on the same 2-D mesh (FSDP2 reads 2-D as hybrid)."""
    model = _shard_layers(Net().to(rank_device()), mesh=_mesh_2d())
    return model, _adamw(model)


def hybrid_root_on_the_whole_world(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """The units on the 2-D mesh, the root on the default 1-D mesh over every rank."""
    from torch.distributed.fsdp import fully_shard

    model = Net().to(rank_device())
    mesh = _mesh_2d()
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model)
    return model, _adamw(model)


def fsdp1_shard_grad_op_checkpointed(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """SHARD_GRAD_OP, blocks checkpointed after wrapping (the Lightning order)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        apply_activation_checkpointing,
    )
    from torch.distributed.fsdp import ShardingStrategy

    model = _fsdp1(Net().to(rank_device()), sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)
    apply_activation_checkpointing(model, check_fn=lambda module: isinstance(module, Block))
    return model, _adamw(model)


def fsdp2_no_reshard_checkpointed(rank: int, world_size: int) -> tuple[nn.Module, Any]:
    """The port: checkpoint the blocks, then shard them with reshard_after_forward=False."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        apply_activation_checkpointing,
    )

    model = Net().to(rank_device())
    apply_activation_checkpointing(model, check_fn=lambda module: isinstance(module, Block))
    return _shard_layers(model, reshard_after_forward=False), _adamw(model)
