"""A helper of our own writing for code of both generations (verl's ``fsdp_version``)."""

from torch.distributed.fsdp import FSDPModule
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def fsdp_version(model):
    """1 for an FSDP1 model, 2 for an FSDP2 one, 0 otherwise."""
    if isinstance(model, FSDP):
        return 1
    return 2 if isinstance(model, FSDPModule) else 0
