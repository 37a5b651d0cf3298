"""FSDP1 checkpoint code as FSDP401 converts it beside a bridged call (a companion).

Its ``isinstance(model, FSDP)`` became ``FSDPModule``'s; what follows still counts on
FSDP1's ``state_dict()``: a full state dict.
"""

from torch.distributed.fsdp import FSDPModule


def save(model):
    """The full state dict (FSDP1's default type)."""
    assert isinstance(model, FSDPModule)
    return model.state_dict()
