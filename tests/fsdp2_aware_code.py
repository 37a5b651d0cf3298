"""Checkpoint code of our own writing for both FSDP generations (a dispatch helper's shape).

It knows FSDP2 only through a helper (``fsdp_version``), and takes its FSDP2 branch for
an ``FSDPModule``, where ``state_dict()`` gives each rank's shards.
"""

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType

from tests.fsdp2_versions import fsdp_version


def save(model):
    """Each rank's shards: FSDP2's ``state_dict()``, FSDP1's sharded type."""
    if fsdp_version(model) == 2:
        return model.state_dict()
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        return model.state_dict()
