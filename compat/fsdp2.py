"""Apply an FSDP1 configuration (auto-wrap policy and arguments) with FSDP2's ``fully_shard``.

FSDP2 has no ``auto_wrap_policy``: one calls ``fully_shard`` on each submodule that
should be its own unit, children before parents, then on the root.
:func:`fully_shard_by_policy` does that for any policy form ``compat`` accepts, picking the
same modules FSDP1's recursive wrapping would, and translates the FSDP1 arguments:

================================================  ===========================================
FSDP1                                             FSDP2
================================================  ===========================================
``process_group`` / ``device_mesh``               ``mesh``
``sharding_strategy=FULL_SHARD``                  ``reshard_after_forward=True``
``sharding_strategy=SHARD_GRAD_OP``               ``reshard_after_forward=False``
``sharding_strategy=HYBRID_SHARD``                2-D mesh (replicate, shard), ``True``
``sharding_strategy=_HYBRID_SHARD_ZERO2``         2-D mesh (replicate, shard), ``False``
``cpu_offload=CPUOffload(offload_params=True)``   ``offload_policy=CPUOffloadPolicy()``
``mixed_precision=MixedPrecision(...)``           ``mp_policy=MixedPrecisionPolicy(...)``
``ignored_modules``                               ``ignored_params`` (torch >= 2.7)
================================================  ===========================================

``backward_prefetch``, ``forward_prefetch``, ``sync_module_states``, ``use_orig_params``,
``limit_all_gathers``, ``device_id`` and ``param_init_fn`` have no FSDP2 meaning: each
warns by name (FSDP401).

The parameters of ``ignored_modules`` stay plain tensors beside the sharded DTensors: an
optimizer over all of them fails in a foreach step (the default on CUDA), so give them an
optimizer or parameter group of their own, or pass ``foreach=False``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import types
from typing import Any

import torch
import torch.nn as nn

from compat.deprecation import warn_deprecated
from compat.features import current, import_fsdp_module
from compat.policies import normalize_policy, select_modules

_NO_FSDP2_MEANING = (
    "backward_prefetch",
    "forward_prefetch",
    "sync_module_states",
    "use_orig_params",
    "limit_all_gathers",
    "device_id",
    "param_init_fn",
)


def fsdp2_module() -> types.ModuleType:
    """The module holding ``fully_shard`` on this torch.

    Raises:
        ImportError: On torch without FSDP2 (before 2.4), saying so.
    """
    name = current().fsdp2_module
    if name is None:
        raise ImportError(
            f"FSDP2 (fully_shard) needs torch >= 2.4; installed torch {current().torch}. "
            "Use compat.fsdp.FullyShardedDataParallel (FSDP1) on this torch."
        )
    return importlib.import_module(name)


def _device_type() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _hybrid_mesh(process_group: Any) -> Any:
    from torch.distributed.device_mesh import init_device_mesh

    world = torch.distributed.get_world_size(process_group)
    # FSDP1 shards within a node and replicates across nodes.
    local = int(os.environ.get("LOCAL_WORLD_SIZE", torch.cuda.device_count() or world))
    if world % local:
        raise ValueError(f"HYBRID_SHARD needs the world size ({world}) to be a multiple of {local}")
    return init_device_mesh(
        _device_type(), (world // local, local), mesh_dim_names=("replicate", "shard")
    )


def translate_fsdp1_arguments(**fsdp1_kwargs: Any) -> dict[str, Any]:
    """FSDP1 ``FullyShardedDataParallel`` keyword arguments to ``fully_shard`` arguments.

    Raises:
        TypeError: For an argument FSDP1 does not take (``auto_wrap_policy`` belongs to
            :func:`fully_shard_by_policy`).
        NotImplementedError: For ``ignored_modules`` on torch < 2.7.
    """
    fsdp1 = import_fsdp_module()
    known = set(inspect.signature(fsdp1.FullyShardedDataParallel.__init__).parameters) - {
        "self",
        "module",
        "auto_wrap_policy",
    }
    unknown = sorted(set(fsdp1_kwargs) - known)
    if unknown:
        raise TypeError(
            f"fully_shard_by_policy() got an unexpected keyword argument {unknown[0]!r}"
        )
    fsdp2 = fsdp2_module()
    out: dict[str, Any] = {}
    process_group = fsdp1_kwargs.get("process_group")
    if fsdp1_kwargs.get("device_mesh") is not None:
        out["mesh"] = fsdp1_kwargs["device_mesh"]
    elif process_group is not None:
        from torch.distributed.device_mesh import DeviceMesh

        out["mesh"] = DeviceMesh.from_group(process_group, _device_type())
    strategy = fsdp1_kwargs.get("sharding_strategy")
    name = getattr(strategy, "name", strategy) or "FULL_SHARD"
    if name in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2") and "mesh" not in out:
        out["mesh"] = _hybrid_mesh(process_group)
    if name not in ("FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
        raise ValueError(f"sharding_strategy {name} has no FSDP2 equivalent")
    out["reshard_after_forward"] = name in ("FULL_SHARD", "HYBRID_SHARD")
    offload = fsdp1_kwargs.get("cpu_offload")
    if offload is True or getattr(offload, "offload_params", False):
        out["offload_policy"] = fsdp2.CPUOffloadPolicy()
    precision = fsdp1_kwargs.get("mixed_precision")
    if precision is not None:
        out["mp_policy"] = fsdp2.MixedPrecisionPolicy(
            param_dtype=precision.param_dtype,
            reduce_dtype=precision.reduce_dtype,
            cast_forward_inputs=precision.cast_forward_inputs,
        )
        if precision.buffer_dtype is not None:
            _no_meaning("mixed_precision.buffer_dtype", "FSDP2 leaves buffers alone")
    if fsdp1_kwargs.get("ignored_modules"):
        if "ignored_params" not in inspect.signature(fsdp2.fully_shard).parameters:
            raise NotImplementedError(
                f"ignored_modules needs fully_shard(ignored_params=) (torch >= 2.7); "
                f"installed torch {current().torch}"
            )
        out["ignored_params"] = {
            p for module in fsdp1_kwargs["ignored_modules"] for p in module.parameters()
        }
    for argument in _NO_FSDP2_MEANING:
        if argument in fsdp1_kwargs:
            _no_meaning(argument, "dropped")
    return out


def _no_meaning(argument: str, why: str) -> None:
    warn_deprecated("FSDP401", detail=f"`{argument}`: no FSDP2 meaning ({why}).")


def fully_shard_by_policy(model: nn.Module, policy: Any = None, **fsdp1_kwargs: Any) -> nn.Module:
    """Shard ``model`` with FSDP2 as FSDP1 would have wrapped it.

    Args:
        model: The model to shard, in place.
        policy: An FSDP1 auto-wrap policy in any form :func:`compat.policies.normalize_policy`
            accepts (classes, ``ModuleWrapPolicy``, size-based with its threshold,
            ``CustomPolicy``, a policy callable); ``None`` shards the root only.
        **fsdp1_kwargs: FSDP1 ``FullyShardedDataParallel`` arguments, translated as the
            module docstring's table says.

    Returns:
        ``model``, now an FSDP2 module, with the selected submodules FSDP2 units.

    Raises:
        ImportError: On torch without FSDP2 (before 2.4).
        ValueError: If ``model`` or one of its submodules is already an FSDP2 unit
            (torch allows ``fully_shard`` once per module).

    Example:
        >>> import torch.distributed as dist
        >>> import torch.nn as nn
        >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> _ = fully_shard_by_policy(model, nn.Linear, sharding_strategy="SHARD_GRAD_OP")
        >>> fsdp2_unit_names(model)
        ['', '0', '2']
        >>> dist.destroy_process_group()
    """
    fully_shard = fsdp2_module().fully_shard
    sharded = fsdp2_unit_names(model)
    if sharded:
        listed = ", ".join(repr(name or "(the root)") for name in sharded)
        raise ValueError(
            f"fully_shard_by_policy: already FSDP2 units: {listed}; shard a model once"
        )
    ignored = list(fsdp1_kwargs.get("ignored_modules") or ())  # read twice: not a generator
    if ignored:
        fsdp1_kwargs["ignored_modules"] = ignored
    arguments = translate_fsdp1_arguments(**fsdp1_kwargs)
    # Children before parents; FSDP1 wraps nothing inside an ignored module.
    names = select_modules(model, normalize_policy(policy), ignored=ignored)
    for name in names:
        fully_shard(model.get_submodule(name), **arguments)
    fully_shard(model, **arguments)
    return model


def fsdp2_unit_names(model: nn.Module) -> list[str]:
    """Qualified names of the modules that are FSDP2 units (``""`` for the root)."""
    module_class = fsdp2_module().FSDPModule
    return [name for name, module in model.named_modules() if isinstance(module, module_class)]
