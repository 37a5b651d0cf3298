"""A custom FSDP auto-wrap policy written for torch 1.12/1.13 (`unwrapped_params`),
combined with the renamed default policy.
"""

import functools

import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import default_auto_wrap_policy, lambda_auto_wrap_policy


def embedding_or_large(module: nn.Module, recurse: bool, unwrapped_params: int) -> bool:
    """Wrap embeddings on their own, and anything else above 10M parameters."""
    if recurse:
        return True
    return isinstance(module, nn.Embedding) or unwrapped_params >= 10_000_000


size_policy = functools.partial(default_auto_wrap_policy, min_num_params=int(1e7))
embedding_policy = functools.partial(
    lambda_auto_wrap_policy, lambda_fn=lambda m: isinstance(m, nn.Embedding)
)


def shard(model: nn.Module) -> FSDP:
    return FSDP(model, auto_wrap_policy=embedding_or_large)


def shard_embeddings_only(model: nn.Module) -> FSDP:
    return FSDP(model, auto_wrap_policy=embedding_policy)
