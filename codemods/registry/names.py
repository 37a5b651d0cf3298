"""The names and argument tables that the registry, the codemods and ``compat`` share.

Module paths, Lightning's package roots and the legacy constructors' argument lists
live here once: the rules are written with them, the fixes translate with them and
``compat`` binds calls against them. Plain data; this module imports nothing.

Example:
    >>> TORCH_WRAP
    'torch.distributed.fsdp.wrap'
    >>> trainer_paths("Trainer")
    ('lightning.pytorch.Trainer', 'pytorch_lightning.Trainer')
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

# torch ---------------------------------------------------------------------------------

TORCH_FSDP = "torch.distributed.fsdp"
TORCH_WRAP = f"{TORCH_FSDP}.wrap"
TORCH_FSDP_CLASSES = (
    f"{TORCH_FSDP}.FullyShardedDataParallel",
    f"{TORCH_FSDP}.fully_sharded_data_parallel.FullyShardedDataParallel",
)
CHECKPOINT_WRAPPER = "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
COMPOSABLE_FSDP = "torch.distributed._composable.fsdp"
DCP = "torch.distributed.checkpoint"

# compat --------------------------------------------------------------------------------

COMPAT_WRAP = "compat.fsdp.wrap"
COMPAT_FSDP_CLASSES = ("compat.fsdp.FullyShardedDataParallel", "compat.fsdp.FSDP")
COMPAT_FAIRSCALE = "compat.fairscale"

# Lightning -----------------------------------------------------------------------------

#: The unified package, whose top level re-exports ``Trainer``, ``Fabric`` and
#: ``LightningModule`` (``import lightning as L; L.Trainer(...)``).
LIGHTNING = "lightning"
#: The Trainer side's package roots: the unified package first, then the standalone one.
TRAINER_ROOTS = ("lightning.pytorch", "pytorch_lightning")
#: The Fabric side's package roots.
FABRIC_ROOTS = ("lightning.fabric", "lightning_fabric")
#: Every import root a Lightning name can have (``lightning`` covers both unified sides).
LIGHTNING_PACKAGES = ("lightning", "pytorch_lightning", "lightning_fabric", "lightning_lite")
#: Lightning Lite's packages (Lightning 1.8): the standalone one and the unified one's.
#: Lightning 1.9 renamed both Fabric (``lightning_fabric``, ``lightning.fabric``).
LITE_ROOTS = ("lightning_lite", "lightning.lite")
#: What ``lightning.fabric`` (2.x) has no counterpart for under the same path, of the
#: public names of lightning_lite 1.8.6: the ``LightningLite`` class (now ``Fabric``,
#: launched differently), modules that went away, then names gone from modules that
#: stayed (FairScale's and the spawn strategies, the ``native`` precision and enums).
LITE_NAMES_NOT_IN_FABRIC = (
    "LightningLite",
    "lite",
    "plugins.precision.native_amp",
    "strategies.ddp_spawn",
    "strategies.fairscale",
    "strategies.launchers.base",
    "accelerators.call_register_accelerators",
    "accelerators.tpu.TPU_CHECK_TIMEOUT",
    "plugins.NativeMixedPrecision",
    "plugins.precision.NativeMixedPrecision",
    "strategies.DDPShardedStrategy",
    "strategies.DDPSpawnShardedStrategy",
    "strategies.DDPSpawnStrategy",
    "utilities.AMPType",
    "utilities.enums.AMPType",
    "utilities.enums.PrecisionType",
    "utilities.types.ReduceLROnPlateau",
)
#: compat's strategy modules by flavour, and where that flavour's own classes live.
COMPAT_STRATEGY_FLAVOURS = (
    ("compat.strategies.fabric.", "lightning.fabric."),
    ("compat.strategies.pytorch_lightning.", "pytorch_lightning."),
)


#: Where Lightning's strategy classes live (both sides), and compat's stand-ins for them.
_STRATEGY_HOMES = tuple(f"{root}." for root in (*TRAINER_ROOTS, *FABRIC_ROOTS)) + (
    "compat.strategies.",
)


def lightning_strategy(qualified: str) -> bool:
    """Whether ``qualified`` names a Lightning strategy class (or compat's stand-in).

    A module's subclass of one that keeps its constructor is called as one (both
    detectors' subclass aliases).

    Example:
        >>> lightning_strategy("lightning.pytorch.strategies.FSDPStrategy")
        True
        >>> lightning_strategy("torch.distributed.fsdp.FullyShardedDataParallel")
        False
    """
    return qualified.startswith(_STRATEGY_HOMES) and qualified.endswith("Strategy")


def trainer_paths(*suffixes: str) -> tuple[str, ...]:
    """Qualify ``suffixes`` under every Trainer-side root.

    Example:
        >>> trainer_paths("strategies.FSDPStrategy")[1]
        'pytorch_lightning.strategies.FSDPStrategy'
    """
    return tuple(f"{root}.{suffix}" for suffix in suffixes for root in TRAINER_ROOTS)


def fabric_paths(*suffixes: str) -> tuple[str, ...]:
    """Qualify ``suffixes`` under every Fabric-side root."""
    return tuple(f"{root}.{suffix}" for suffix in suffixes for root in FABRIC_ROOTS)


def lite_paths(*suffixes: str) -> tuple[str, ...]:
    """Qualify ``suffixes`` under both of Lightning Lite's roots.

    Example:
        >>> lite_paths("LightningLite")
        ('lightning_lite.LightningLite', 'lightning.lite.LightningLite')
    """
    return tuple(f"{root}.{suffix}" for suffix in suffixes for root in LITE_ROOTS)


# FairScale -----------------------------------------------------------------------------

#: FairScale 0.4.13's public paths: ``fairscale.nn`` re-exports its FSDP, its wrapping
#: functions and ``checkpoint_wrapper`` (the documented way to import them).
FAIRSCALE_NN = "fairscale.nn"
FAIRSCALE_WRAP = f"{FAIRSCALE_NN}.wrap"
FAIRSCALE_CHECKPOINT = f"{FAIRSCALE_NN}.checkpoint"
#: The names FairScale's FSDP class is imported under.
FAIRSCALE_FSDP_CLASSES = (
    f"{FAIRSCALE_NN}.FullyShardedDataParallel",
    f"{FAIRSCALE_NN}.data_parallel.FullyShardedDataParallel",
    f"{FAIRSCALE_NN}.data_parallel.fully_sharded_data_parallel.FullyShardedDataParallel",
)
#: Names that are a module and, re-exported by its parent package, a function of the
#: same name: ``fairscale.nn.wrap`` is a subpackage and ``fairscale.nn``'s ``wrap()``;
#: ``fairscale.nn.wrap.auto_wrap`` a module and the subpackage's ``auto_wrap()``. A name
#: inside one of them, or a plain ``import`` of one, is the module, never the function.
MODULES_NAMED_LIKE_FUNCTIONS = (FAIRSCALE_WRAP, f"{FAIRSCALE_WRAP}.auto_wrap")

#: FairScale 0.4.13's ``FullyShardedDataParallel`` arguments after ``module``, in order,
#: with their defaults (fairscale/nn/data_parallel/fully_sharded_data_parallel.py).
FAIRSCALE_FSDP_ARGUMENTS: dict[str, Any] = {
    "process_group": None,
    "process_group_reduce_scatter": None,
    "reshard_after_forward": True,
    "disable_reshard_on_root": True,
    "mixed_precision": False,
    "fp32_reduce_scatter": False,
    "flatten_parameters": True,
    "move_params_to_cpu": False,
    "compute_dtype": None,
    "buffer_dtype": None,
    "move_grads_to_cpu": None,
    "bucket_cap_mb": 25,
    "compute_device": None,
    "no_broadcast_optim_state": False,
    "state_dict_device": None,
    "clear_autocast_cache": False,
    "force_input_to_fp32": False,
    "verbose": False,
    "cpu_offload": False,
    "state_dict_on_rank_0_only": False,
    "gradient_predivide_factor": None,
    "allow_reset_parameters": False,
}
#: FairScale FSDP arguments that only mean something with ``mixed_precision=True``.
FAIRSCALE_PRECISION_DETAILS = ("compute_dtype", "buffer_dtype", "fp32_reduce_scatter")
#: FairScale FSDP arguments that ask for parameter offloading to the CPU.
FAIRSCALE_OFFLOAD = ("move_params_to_cpu", "cpu_offload")
#: FairScale's ``enable_wrap`` / ``auto_wrap`` pass this keyword to policies (torch < 2.0 too).
LEGACY_NUMEL_KEYWORD = "unwrapped_params"

# Lightning's FairScale-era strategy ------------------------------------------------------

#: Lightning 1.9.5's ``DDPFullyShardedStrategy.__init__`` after ``self``, in order.
DDP_FULLY_SHARDED_ARGUMENTS: dict[str, Any] = {
    "accelerator": None,
    "cpu_offload": False,
    "flatten_parameters": True,
    "reshard_after_forward": True,
    "move_grads_to_cpu": None,
    "fp32_reduce_scatter": None,
    "compute_dtype": None,
    "bucket_cap_mb": 25,
    "min_num_params": 100_000_000,
    "state_dict_to_cpu": True,
    "parallel_devices": None,
    "cluster_environment": None,
    "checkpoint_io": None,
    "precision_plugin": None,
    "process_group_backend": None,
}
#: Lightning 1.9.5's ``DDPFullyShardedNativeStrategy.__init__`` after ``self`` (then kwargs).
DDP_FULLY_SHARDED_NATIVE_ARGUMENTS: dict[str, Any] = {
    "accelerator": None,
    "parallel_devices": None,
    "cluster_environment": None,
    "checkpoint_io": None,
    "precision_plugin": None,
    "process_group_backend": None,
    "cpu_offload": None,
    "backward_prefetch": None,
    "mixed_precision": None,
    "activation_checkpointing": None,
}
#: ``DDPFullyShardedStrategy`` arguments with no ``FSDPStrategy`` meaning. Only
#: ``flatten_parameters=True`` can be dropped safely: torch's FSDP1 always flattens.
FAIRSCALE_ONLY_STRATEGY_ARGUMENTS = (
    "flatten_parameters",
    "move_grads_to_cpu",
    "fp32_reduce_scatter",
    "compute_dtype",
    "bucket_cap_mb",
    "state_dict_to_cpu",
)
