"""When the APIs a file may use first appeared: the data behind evidence floors.

A file that uses ``torch.distributed._composable.fsdp`` runs on torch 2.4 or later, one
that imports ``ModuleWrapPolicy`` on 2.0 or later: the newest of these releases among a
file's own (ungated) uses is its *evidence floor* (:mod:`codemods.screen.evidence`), the floor of
its range where its project declares none. Each entry is a fully qualified name, or a
module whose every name counts; the release is of the name's framework. Only names whose
first release is certain are listed (each from the API history in the design notes, the
registry's own ``introduced`` fields, or torch's and Lightning's sources); a name that is
not listed evidences nothing beyond :data:`BASELINE`.
"""

from __future__ import annotations

#: The oldest release a file evidences when it uses nothing listed below: a file using
#: only long-standing APIs (``torch.utils.checkpoint``, ``pytorch_lightning.Trainer``) may
#: run on any 1.x release (a real project ran its checkpointing tests on torch 1.9).
BASELINE: dict[str, str] = {"torch": "1.0", "lightning": "1.0"}

#: Qualified name or module -> (framework, first release).
APPEARED: dict[str, tuple[str, str]] = {
    # torch FSDP1 itself, then its policies (design notes' API history)
    "torch.distributed.fsdp": ("torch", "1.11"),
    "torch.distributed.fsdp.wrap.size_based_auto_wrap_policy": ("torch", "1.12"),
    "torch.distributed.fsdp.MixedPrecision": ("torch", "1.12"),
    "torch.distributed.fsdp.ShardingStrategy": ("torch", "1.12"),
    # where 1.12 defined both (the package re-exports them; 2.0 moved them to `api`, and
    # this module imports them from there)
    "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision": ("torch", "1.12"),
    "torch.distributed.fsdp.fully_sharded_data_parallel.ShardingStrategy": ("torch", "1.12"),
    "torch.distributed.fsdp.wrap.ModuleWrapPolicy": ("torch", "2.0"),
    "torch.distributed.fsdp.wrap.CustomPolicy": ("torch", "2.1"),
    "torch.distributed.fsdp.wrap._Policy": ("torch", "2.1"),
    # activation checkpointing's wrappers (FSDP138: the helper's 1.12 name, then its own)
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper": ("torch", "1.11"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
    ".apply_activation_checkpointing_wrapper": ("torch", "1.12"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing": (
        "torch",
        "1.13",
    ),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.offload_wrapper": ("torch", "2.0"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.OffloadWrapper": ("torch", "2.0"),
    "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.ActivationWrapper": (
        "torch",
        "2.0",
    ),
    # FSDP1's composable prototype (torch 2.0 to 2.5; FSDP134)
    "torch.distributed._composable.fully_shard": ("torch", "2.0"),
    # FSDP2: its first, private home, then its public one
    "torch.distributed._composable.fsdp": ("torch", "2.4"),
    "torch.distributed.fsdp.fully_shard": ("torch", "2.6"),
    "torch.distributed.fsdp.FSDPModule": ("torch", "2.6"),
    "torch.distributed.fsdp.MixedPrecisionPolicy": ("torch", "2.6"),
    "torch.distributed.fsdp.CPUOffloadPolicy": ("torch", "2.6"),
    "torch.distributed.fsdp.OffloadPolicy": ("torch", "2.6"),
    # DTensor and device meshes
    "torch.distributed._tensor": ("torch", "2.0"),
    "torch.distributed.device_mesh": ("torch", "2.2"),
    "torch.distributed.tensor.DTensor": ("torch", "2.5"),
    "torch.distributed.tensor.distribute_tensor": ("torch", "2.5"),
    "torch.distributed.tensor.Shard": ("torch", "2.5"),
    "torch.distributed.tensor.Replicate": ("torch", "2.5"),
    # distributed checkpoint (torch 1.13 had it as `torch.distributed._shard.checkpoint`),
    # then its state-dict API
    "torch.distributed.checkpoint": ("torch", "2.0"),
    "torch.distributed.checkpoint.state_dict": ("torch", "2.2"),
    # FSDP1's optimizer state-dict API of torch 2.0 (wheels of 1.13.1 and 2.0.1 read): the
    # methods, and the configs (2.0 has them in `fsdp.api`; the package may export them
    # only later, so for an import from the package 2.0 is a sure lower bound)
    "torch.distributed.fsdp.FullyShardedDataParallel.optim_state_dict": ("torch", "2.0"),
    "torch.distributed.fsdp.FullyShardedDataParallel.optim_state_dict_to_load": ("torch", "2.0"),
    # and the state-dict type's setter and getter, and the package's export of the sharded
    # config (1.13.1 had the class only in `fully_sharded_data_parallel`)
    "torch.distributed.fsdp.FullyShardedDataParallel.set_state_dict_type": ("torch", "2.0"),
    "torch.distributed.fsdp.FullyShardedDataParallel.get_state_dict_type": ("torch", "2.0"),
    "torch.distributed.fsdp.ShardedStateDictConfig": ("torch", "2.0"),
    "torch.distributed.fsdp.api.OptimStateDictConfig": ("torch", "2.0"),
    "torch.distributed.fsdp.api.FullOptimStateDictConfig": ("torch", "2.0"),
    "torch.distributed.fsdp.api.ShardedOptimStateDictConfig": ("torch", "2.0"),
    "torch.distributed.fsdp.OptimStateDictConfig": ("torch", "2.0"),
    "torch.distributed.fsdp.FullOptimStateDictConfig": ("torch", "2.0"),
    "torch.distributed.fsdp.ShardedOptimStateDictConfig": ("torch", "2.0"),
    # Lightning's FSDP strategies (design notes' API history)
    "pytorch_lightning.strategies.DDPFullyShardedStrategy": ("lightning", "1.6"),
    "pytorch_lightning.strategies.DDPFullyShardedNativeStrategy": ("lightning", "1.7"),
    "lightning.pytorch.strategies.DDPFullyShardedNativeStrategy": ("lightning", "1.7"),
    "pytorch_lightning.strategies.FSDPStrategy": ("lightning", "2.0"),
    "lightning.pytorch.strategies.FSDPStrategy": ("lightning", "2.0"),
    # Lightning's strategies package (1.6) and what it gained later
    "pytorch_lightning.strategies.DDPShardedStrategy": ("lightning", "1.6"),
    "pytorch_lightning.strategies.ColossalAIStrategy": ("lightning", "1.8"),
    "lightning.pytorch": (
        "lightning",
        "1.8",
    ),  # the `lightning` package's first release (wheel read)
    "lightning_lite": ("lightning", "1.8"),
    "lightning.lite": ("lightning", "1.8"),
    "lightning.fabric": ("lightning", "1.9"),
    "lightning_fabric": ("lightning", "1.9"),
}

#: The top-level packages of each framework: a use of any of them is a use of it.
PACKAGES: dict[str, str] = {
    "torch": "torch",
    "lightning": "lightning",
    "pytorch_lightning": "lightning",
    "lightning_fabric": "lightning",
    "lightning_lite": "lightning",
    "fairscale": "torch",  # FairScale rules are dated by torch's releases
}
