"""What the port checker reads from a model, for FSDP1, FSDP2 and plain models alike.

Every function here runs on every rank with the same model; those that gather
(:func:`full_state`, :func:`grad_norm`) are collectives and must be called by all ranks.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn as nn

from compat.checkpointing import clean_name
from compat.fsdp2.availability import fsdp2_module
from compat.portcheck.launch import rank_device

FSDP1, FSDP2, PLAIN = "FSDP1", "FSDP2", "plain"


def _fsdp1_class() -> type:
    from torch.distributed.fsdp import FullyShardedDataParallel

    return FullyShardedDataParallel


def _fsdp2_class() -> type | None:
    try:
        return fsdp2_module().FSDPModule
    except ImportError:
        return None


def engine_of(model: nn.Module) -> str:
    """``FSDP1``, ``FSDP2`` or ``plain``: which engine shards ``model``.

    A model with units of both engines counts as FSDP1 (its FSDP1 units are the ones
    still to port).
    """
    fsdp1, fsdp2 = _fsdp1_class(), _fsdp2_class()
    if any(isinstance(m, fsdp1) for m in model.modules()):
        return FSDP1
    if fsdp2 is not None and any(isinstance(m, fsdp2) for m in model.modules()):
        return FSDP2
    return PLAIN


def units(model: nn.Module, engine: str) -> list[tuple[str, nn.Module]]:
    """The units as ``(clean name, module)``, in module order; the root is ``""``.

    For FSDP1 the module is the wrapped one (inside the wrapper): its forward sees what
    FSDP1 hands it, as the module of an FSDP2 unit does.
    """
    if engine == FSDP1:
        wrapper = _fsdp1_class()
        return [
            (clean_name(name), module._fsdp_wrapped_module)
            for name, module in model.named_modules()
            if isinstance(module, wrapper)
        ]
    if engine == FSDP2:
        unit_class = _fsdp2_class()
        return [(clean_name(n), m) for n, m in model.named_modules() if isinstance(m, unit_class)]
    return []


def _dtype(value: Any) -> str:
    return str(value).replace("torch.", "") if value is not None else "None"


def unit_settings(model: nn.Module, engine: str) -> dict[str, dict[str, str]]:
    """Each unit's sharding arguments as strings, by unit name.

    FSDP1: strategy, ``mixed_precision`` dtypes and input casting, CPU offload. FSDP2:
    mesh, ``mp_policy`` and ``offload_policy`` (read from the unit's FSDP state; a unit
    with no parameters of its own has no mesh or offload policy to read).
    """
    settings: dict[str, dict[str, str]] = {}
    if engine == FSDP1:
        wrapper = _fsdp1_class()
        roots = {id(m) for m in wrapper.fsdp_modules(model, root_only=True)}
        for name, module in model.named_modules():
            if not isinstance(module, wrapper):
                continue
            precision = module.mixed_precision
            # FSDP1 casts a root's inputs unless told not to, a nested unit's only if told to.
            cast = precision.cast_forward_inputs or (
                id(module) in roots and precision.cast_root_forward_inputs
            )
            settings[clean_name(name)] = {
                "strategy": module.sharding_strategy.name,
                "param_dtype": _dtype(precision.param_dtype),
                "reduce_dtype": _dtype(precision.reduce_dtype),
                "cast_forward_inputs": str(bool(cast)),
                "offload": str(bool(module.cpu_offload.offload_params)),
            }
    elif engine == FSDP2:
        for name, module in units(model, engine):
            state = module._get_fsdp_state()
            policy = state._mp_policy
            entry = {
                "param_dtype": _dtype(policy.param_dtype),
                "reduce_dtype": _dtype(policy.reduce_dtype),
                "output_dtype": _dtype(policy.output_dtype),
                "cast_forward_inputs": str(policy.cast_forward_inputs),
            }
            groups = getattr(state, "_fsdp_param_groups", None) or [
                g for g in [getattr(state, "_fsdp_param_group", None)] if g is not None
            ]
            if groups:
                group = groups[0]
                mesh = group.mesh_info.mesh
                entry["mesh"] = f"{mesh.device_type} {mesh.mesh.tolist()} {mesh.mesh_dim_names}"
                entry["mesh_shape"] = "x".join(str(n) for n in mesh.mesh.shape)
                entry["offload"] = type(group.offload_policy).__name__
                entry["reshard_after_forward"] = str(group.post_forward_mesh_info is not None)
            settings[name] = entry
    return settings


def describe(settings: dict[str, str]) -> str:
    """A unit's settings in a few words, for the unit table.

    Example:
        >>> describe({"strategy": "HYBRID_SHARD", "param_dtype": "None", "offload": "False"})
        'HYBRID_SHARD'
        >>> describe({"mesh_shape": "2x2", "param_dtype": "bfloat16",
        ...           "cast_forward_inputs": "False", "offload": "CPUOffloadPolicy"})
        'mesh 2x2, bfloat16 (cast inputs: False), offload'
    """
    parts = []
    if "strategy" in settings:
        parts.append(settings["strategy"])
    if "mesh_shape" in settings:
        parts.append(f"mesh {settings['mesh_shape']}")
    if settings.get("param_dtype", "None") != "None":
        parts.append(f"{settings['param_dtype']} (cast inputs: {settings['cast_forward_inputs']})")
    if settings.get("offload") not in (None, "False", "OffloadPolicy"):
        parts.append("offload")
    return ", ".join(parts) or "unit"


def every_name(model: nn.Module, kind: str) -> Iterator[tuple[str, torch.Tensor]]:
    """Each ``(name, tensor)`` of ``kind`` (``"parameters"``, ``"buffers"``), tied by every name.

    What ``named_parameters(remove_duplicate=False)`` gives from torch 2.0; torch 1.13's
    has no such argument.
    """
    for prefix, module in model.named_modules(remove_duplicate=False):
        for name, tensor in getattr(module, f"_{kind}").items():
            if tensor is not None:
                yield (f"{prefix}.{name}" if prefix else name), tensor


def parameter_names(model: nn.Module, engine: str) -> dict[int, list[str]]:
    """``id(parameter) -> its clean names`` for the model's parameters.

    FSDP1's flat parameters map to the names of the original parameters they hold.
    """
    if engine == FSDP1:
        from torch.distributed.fsdp._common_utils import _get_param_to_fqns

        return {
            id(p): [clean_name(n) for n in names] for p, names in _get_param_to_fqns(model).items()
        }
    names: dict[int, list[str]] = {}
    for name, param in every_name(model, "parameters"):
        names.setdefault(id(param), []).append(clean_name(name))
    return names


def tie_groups(model: nn.Module, engine: str) -> list[list[str]]:
    """Groups of parameter names that are one parameter (tied weights), sorted."""
    groups: list[list[str]] = []
    if engine == FSDP1:
        wrapper = _fsdp1_class()
        for name, module in model.named_modules():
            handle = getattr(module, "_handle", None) if isinstance(module, wrapper) else None
            if handle is None:
                continue
            prefix = clean_name(name)
            tied: dict[str, list[str]] = {}
            for info in handle.flat_param._shared_param_infos:
                owner = _join(prefix, info.prim_module_name, info.prim_param_name)
                tied.setdefault(owner, [owner]).append(
                    _join(prefix, info.module_name, info.param_name)
                )
            groups.extend(sorted(group) for group in tied.values())
    else:
        groups = [sorted(n) for n in parameter_names(model, engine).values() if len(n) > 1]
    return sorted(groups)


def _join(*parts: str) -> str:
    return clean_name(".".join(p for p in parts if p))


def meta_names(model: nn.Module) -> list[str]:
    """Names of the parameters and buffers still on the meta device."""
    found = []
    for kind in ("parameters", "buffers"):
        for name, tensor in every_name(model, kind):
            local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
            if local.is_meta:
                found.append(clean_name(name))
    return found


def buffers(model: nn.Module) -> tuple[dict[str, torch.Tensor], list[str]]:
    """This rank's buffers (CPU copies) by clean name, and the non-persistent ones' names."""
    values, non_persistent = {}, []
    for module_name, module in model.named_modules():
        for name, buffer in module.named_buffers(recurse=False):
            full = clean_name(_join(module_name, name))
            values[full] = buffer.detach().float().cpu().clone()
            if name in getattr(module, "_non_persistent_buffers_set", ()):
                non_persistent.append(full)
    return values, non_persistent


def state_dict_kinds(model: nn.Module) -> dict[str, str]:
    """``model.state_dict()`` as its user sees it: each clean key and its tensor kind."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = model.state_dict()
    return {clean_name(k): type(v).__name__ for k, v in state.items()}


def full_state(model: nn.Module, engine: str) -> dict[str, torch.Tensor]:
    """The full state dict as float CPU copies (a collective for sharded models).

    FSDP1 through its full state dict with ``offload_to_cpu=False`` (offloading crashes
    CPU ranks on torch 2.13); FSDP2 through ``DTensor.full_tensor()``.
    """
    if engine == FSDP1:
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType

        config = FullStateDictConfig(offload_to_cpu=False, rank0_only=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _fsdp1_class().state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
                state = model.state_dict()
    else:
        state = model.state_dict()
    return {clean_name(k): full_tensor(v).detach().float().cpu().clone() for k, v in state.items()}


def full_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's full value (a plain tensor as it is).

    A CPU-offloaded DTensor is moved to the rank's GPU first under NCCL, which cannot
    gather CPU tensors (the bug torchtune and verl fixed in their save and clip paths).
    """
    if not hasattr(tensor, "full_tensor"):
        return tensor
    device = rank_device()
    if tensor.device != device and device.type != "cpu":
        tensor = tensor.to(device)
    return tensor.full_tensor()


def fsdp1_root(model: nn.Module) -> nn.Module | None:
    """The FSDP1 root that holds every unit, or ``None``."""
    roots = _fsdp1_class().fsdp_modules(model, root_only=True)
    return roots[0] if len(roots) == 1 else None


def grad_norm(model: nn.Module, engine: str, max_norm: float | None) -> float:
    """The total gradient norm, clipping to ``max_norm`` where one is given.

    FSDP1 through the root's ``clip_grad_norm_`` (with ``inf``: a scale of exactly 1);
    FSDP2 through ``torch.nn.utils.clip_grad_norm_`` with ``max_norm``, else the full
    gradients; a plain model from its local gradients.
    """
    limit = math.inf if max_norm is None else max_norm
    if engine == FSDP1:
        root = fsdp1_root(model)
        if root is None:
            raise ValueError("the FSDP1 model has more than one root unit: no single gradient norm")
        return float(root.clip_grad_norm_(limit))
    params = [p for p in model.parameters() if p.grad is not None]
    if max_norm is not None:
        return float(full_tensor(torch.nn.utils.clip_grad_norm_(params, max_norm)))
    total = 0.0
    for param in params:
        total += float(full_tensor(param.grad).detach().double().pow(2).sum())
    return math.sqrt(total)


@contextlib.contextmanager
def gradient_sync(model: nn.Module, engine: str, sync: bool) -> Iterator[None]:
    """Accumulate without synchronising where ``sync`` is false, each engine's way.

    FSDP1: the root's ``no_sync()``; FSDP2: ``set_requires_gradient_sync(False)`` on
    each unit (restored after); a plain model: nothing.
    """
    if sync or engine == PLAIN:
        yield
        return
    if engine == FSDP1:
        root = fsdp1_root(model)
        if root is None:
            raise ValueError("the FSDP1 model has more than one root unit: no single no_sync()")
        with root.no_sync():
            yield
        return
    sharded = [module for _, module in units(model, engine)]
    for module in sharded:
        module.set_requires_gradient_sync(False, recurse=False)
    try:
        yield
    finally:
        for module in sharded:
            module.set_requires_gradient_sync(True, recurse=False)


__all__ = [
    "FSDP1",
    "FSDP2",
    "PLAIN",
    "buffers",
    "describe",
    "engine_of",
    "fsdp1_root",
    "full_state",
    "full_tensor",
    "grad_norm",
    "gradient_sync",
    "meta_names",
    "parameter_names",
    "state_dict_kinds",
    "tie_groups",
    "unit_settings",
    "units",
]
