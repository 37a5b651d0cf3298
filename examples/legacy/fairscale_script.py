"""A FairScale-era training setup: FairScale's FSDP, its wrap helpers and checkpointing."""

import torch.nn as nn
from fairscale.nn import FullyShardedDataParallel as FSDP
from fairscale.nn.checkpoint import checkpoint_wrapper
from fairscale.nn.wrap import auto_wrap, enable_wrap, wrap


def build(blocks: list[nn.Module]) -> nn.Module:
    with enable_wrap(wrapper_cls=FSDP, flatten_parameters=True, mixed_precision=True):
        layers = [wrap(checkpoint_wrapper(block, offload_to_cpu=True)) for block in blocks]
        model = auto_wrap(nn.Sequential(*layers))
    return FSDP(model, reshard_after_forward=False, move_grads_to_cpu=False)
