"""FSDP1's methods on the bridged root: state dicts by type, clipping, ``no_sync``.

:func:`keep_fsdp1_methods` mixes :class:`FSDP1Methods` into the class of the root the
bridge made, as ``fully_shard`` itself swaps classes; the state-dict settings they answer
by are set by :class:`compat.fsdp2.fsdp1_api.FSDP1Api` (see its table).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.distributed.fsdp as torch_fsdp
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType

from compat.fsdp.fallbacks import map_tensors
from compat.fsdp2.differences import (
    BridgeDifferenceWarning,
    accumulates_otherwise,
    accumulation_message,
)
from compat.fsdp2.identity import fsdp2_aware_caller
from compat.fsdp2.local_state import load_local_state_dict, local_state_dict
from compat.fsdp2.nesting import PRECISION_ATTRIBUTE

#: Where a bridged root keeps its state-dict settings and the rank in FSDP1's group.
SETTINGS_ATTRIBUTE, _RANK = "_fsdp1_state_dict_settings", "_fsdp1_group_rank"

#: FSDP1's default model and optimizer configs per type, by name in torch.distributed.fsdp.
#: ``StateDictSettings`` and the optimizer configs came in torch 2.1: they are read when
#: the bridge runs (torch >= 2.6), so compat.fsdp2 still imports, and says what it needs
#: (:func:`compat.fsdp2.availability.require_bridge`), on older torch.
_DEFAULT_CONFIGS: dict[str, tuple[str, str]] = {
    "FULL_STATE_DICT": ("FullStateDictConfig", "FullOptimStateDictConfig"),
    "SHARDED_STATE_DICT": ("ShardedStateDictConfig", "ShardedOptimStateDictConfig"),
    "LOCAL_STATE_DICT": ("LocalStateDictConfig", "LocalOptimStateDictConfig"),
}

#: Where a bridged root keeps FSDP1's flat-parameter alignment (``use_orig_params``).
_ALIGNED = "_fsdp1_aligned_dtype"
#: Whether a bridged root has said how its ``no_sync()`` accumulates.
_WARNED = "_fsdp1_accumulation_said"


def settings_of_type(
    state_dict_type: Any, model_config: Any, optim_config: Any
) -> torch_fsdp.StateDictSettings:
    """FSDP1's settings for a type, with FSDP1's default configs where none is given."""
    name = state_dict_type.name if isinstance(state_dict_type, StateDictType) else None
    if name not in _DEFAULT_CONFIGS:
        raise NotImplementedError(f"unknown state-dict type {state_dict_type!r}")
    model_class, optim_class = (getattr(torch_fsdp, config) for config in _DEFAULT_CONFIGS[name])
    return torch_fsdp.StateDictSettings(
        state_dict_type,
        model_config if model_config is not None else model_class(),
        optim_config if optim_config is not None else optim_class(),
    )


def same(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor itself (``map_tensors(state, same)`` copies the containers only)."""
    return tensor


def own_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A plain tensor copied (torch hands out the optimizer's live ``step``), shards as is."""
    return tensor if hasattr(tensor, "to_local") else tensor.detach().clone()


def parameter_copies(module: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """A tensor map that copies what shares memory with ``module``'s parameters.

    FSDP1's full state dict holds copies of the parameters (it clones them as it
    gathers). Where there is nothing to gather (one rank), torch's functions hand out
    the parameter's own memory, which the next optimizer step changes.
    """

    def memory(tensor: torch.Tensor) -> int:
        local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
        return local.untyped_storage().data_ptr()

    live = {memory(p) for p in module.parameters()}

    def copy_if_live(tensor: torch.Tensor) -> torch.Tensor:
        if hasattr(tensor, "to_local") or memory(tensor) not in live:
            return tensor
        return tensor.detach().clone()

    return copy_if_live


class FSDP1Methods:
    """FSDP1's methods on a bridged root (mixed into its class by the bridge).

    Only the root gets them, as FSDP1's code calls them on the model it wrapped; the
    units inside keep FSDP2's own.
    """

    def _fsdp1_settings(self) -> torch_fsdp.StateDictSettings:
        settings = getattr(self, SETTINGS_ATTRIBUTE, None)
        return settings or settings_of_type(StateDictType.FULL_STATE_DICT, None, None)

    def _fsdp1_keeps(self) -> bool:
        """Whether this rank keeps a ``rank0_only`` state dict: rank 0 of FSDP1's group."""
        return getattr(self, _RANK, 0) == 0

    def _fsdp1_state(self, get: Callable[[Any], dict], optim: bool) -> dict:
        """A state dict of the model's type, by ``get(options)`` from torch's functions."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions

        settings = self._fsdp1_settings()
        config = settings.optim_state_dict_config if optim else settings.state_dict_config
        if settings.state_dict_type == StateDictType.LOCAL_STATE_DICT and not optim:
            # (FSDP1's optimizer state of a local type is its sharded one, as below.)
            state = local_state_dict(self, getattr(self, _ALIGNED, None))  # type: ignore[arg-type]
            return map_tensors(state, torch.Tensor.cpu) if config.offload_to_cpu else state
        full = settings.state_dict_type == StateDictType.FULL_STATE_DICT
        rank0_only = full and getattr(config, "rank0_only", False)
        state = get(StateDictOptions(full_state_dict=full))
        if rank0_only and not self._fsdp1_keeps():
            return {}
        if optim:  # FSDP1's optimizer state is a copy: it does not move on with training
            state = map_tensors(state, own_copy)
        elif full:
            state = map_tensors(state, parameter_copies(self))  # type: ignore[arg-type]
        return map_tensors(state, torch.Tensor.cpu) if config.offload_to_cpu else state

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """FSDP1's ``state_dict()`` for FSDP1 code, FSDP2's for code that knows FSDP2.

        FSDP1's is of the type set on the model (full by default); a parent module's
        ``state_dict()`` (a ``prefix`` and a ``destination``) gets it under its prefix,
        as from FSDP1's hooks (:mod:`compat.fsdp2.identity` says who is who).
        """
        if fsdp2_aware_caller():
            return super().state_dict(*args, **kwargs)  # type: ignore[misc]
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        state = self._fsdp1_state(
            lambda options: get_model_state_dict(self, options=options), False
        )
        destination = kwargs.get("destination", args[0] if args else None)
        prefix = kwargs.get("prefix", args[1] if len(args) > 1 else "")
        if destination is None and not prefix:
            return state
        destination = {} if destination is None else destination
        for key, value in state.items():
            destination[prefix + key] = value
        return destination

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """FSDP1's ``load_state_dict`` for FSDP1 code (the type set on the model)."""
        if assign or fsdp2_aware_caller():
            return super().load_state_dict(state_dict, strict=strict, assign=assign)  # type: ignore[misc]
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        kind = self._fsdp1_settings().state_dict_type
        if kind == StateDictType.LOCAL_STATE_DICT:
            aligned = getattr(self, _ALIGNED, None)
            return load_local_state_dict(self, state_dict, aligned)  # type: ignore[arg-type]
        full = kind == StateDictType.FULL_STATE_DICT
        options = StateDictOptions(full_state_dict=full, strict=strict)
        # torch's function changes the dict it is given; FSDP1's leaves it as it was.
        return set_model_state_dict(self, map_tensors(state_dict, same), options=options)  # type: ignore[arg-type]

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> torch.Tensor:
        """FSDP1's ``clip_grad_norm_``: over every gradient of the model, across ranks."""
        params = [p for p in self.parameters() if p.grad is not None]  # type: ignore[attr-defined]
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
        return norm.full_tensor() if hasattr(norm, "full_tensor") else norm

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """FSDP1's ``no_sync()``: gradients accumulate unreduced for the block.

        With bf16 parameters and fp32 reduction FSDP2 accumulates them in fp32, FSDP1 in
        bf16: said once per model (:class:`BridgeDifferenceWarning`).
        """
        precision = getattr(self, PRECISION_ATTRIBUTE, None)
        if accumulates_otherwise(precision) and not getattr(self, _WARNED, False):
            object.__setattr__(self, _WARNED, True)
            warnings.warn(accumulation_message(precision), BridgeDifferenceWarning, stacklevel=3)
        self.set_requires_gradient_sync(False)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            self.set_requires_gradient_sync(True)  # type: ignore[attr-defined]


def keep_fsdp1_methods(
    root: nn.Module, group_rank: int, aligned: torch.dtype | None = None
) -> None:
    """Give a bridged ``root`` FSDP1's methods (:class:`FSDP1Methods`).

    Its class becomes a subclass of FSDP2's, as ``fully_shard`` itself does (only this
    instance's class: nothing of torch's changes). It gets no ``module``: the bridge
    shards in place, so there is nothing wrapped, and a ``module`` that gave the model
    back would send a recursive unwrap (``while hasattr(m, "module")``) round forever.

    Args:
        root: The root FSDP2 unit the bridge made.
        group_rank: This rank's rank in FSDP1's group (the ``rank0_only`` test).
        aligned: With ``use_orig_params=True``, the dtype FSDP1 aligns its flat
            parameters for (the compute dtype); None: no alignment (its default).
    """
    cls = type(root)
    if not isinstance(root, FSDP1Methods):  # a unit bridged before keeps its class
        root.__class__ = type(f"FSDP1Bridged{cls.__name__}", (FSDP1Methods, cls), {})
        root.register_load_state_dict_pre_hook(_rows_of_full_tensors)
    object.__setattr__(root, _RANK, group_rank)
    object.__setattr__(root, _ALIGNED, aligned)


def _rows_of_full_tensors(
    module: nn.Module, state_dict: dict[str, Any], prefix: str, *args: Any
) -> None:
    """A parent's ``load_state_dict`` with full tensors: each rank takes its rows.

    FSDP1's hooks load a full state dict given to a parent module; FSDP2's parameters
    (DTensors) take only DTensors. Each full tensor under ``prefix`` of a DTensor
    parameter's shape becomes this rank's rows of it (no communication); anything else
    is left for ``load_state_dict`` to judge.
    """
    from torch.distributed.tensor import DTensor, distribute_tensor

    for name, param in module.named_parameters():
        key = prefix + name
        value = state_dict.get(key)
        if not isinstance(param, DTensor) or not isinstance(value, torch.Tensor):
            continue
        if isinstance(value, DTensor) or value.shape != param.shape:
            continue
        state_dict[key] = distribute_tensor(
            value.detach().to(param.device), param.device_mesh, param.placements, src_data_rank=None
        )


def flat_alignment(
    module: nn.Module, use_orig_params: bool, mixed_precision: Any
) -> torch.dtype | None:
    """The dtype FSDP1 aligns ``module``'s flat parameters for, or None (no alignment).

    With ``use_orig_params=True`` FSDP1 starts each parameter on a 16-byte boundary of
    the compute dtype: the precision's ``param_dtype``, else the parameters' own.
    """
    if not use_orig_params:
        return None
    own = next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)
    return getattr(mixed_precision, "param_dtype", None) or own


def bridged_roots(module: nn.Module) -> list[FSDP1Methods]:
    """The bridged roots among ``module`` and its descendants."""
    return [m for m in module.modules() if isinstance(m, FSDP1Methods)]


def holds_fsdp1(module: nn.Module) -> bool:
    """Whether ``module`` is, or holds, a real FSDP1 unit."""
    return any(isinstance(m, FullyShardedDataParallel) for m in module.modules())


def fsdp1_answers(module: nn.Module) -> bool:
    """Whether FSDP1's own class call takes ``module``: an FSDP1 model, or no bridged one."""
    return holds_fsdp1(module) or not bridged_roots(module)


def roots_for(module: nn.Module, call: str) -> list[FSDP1Methods]:
    """The bridged roots :class:`FSDP1Api`'s ``call`` acts on; TypeError where none is."""
    roots = bridged_roots(module)
    if not roots:
        raise TypeError(
            f"FSDP1Api.{call} needs a model sharded by compat.fsdp2.fully_shard_like_fsdp1 "
            "(or an FSDP1 model); for a model fully_shard-ed by hand use "
            "torch.distributed.checkpoint.state_dict's functions"
        )
    return roots


def group_rank(group: Any) -> int:
    """This rank's rank in ``group`` (``None``: the default group), 0 without one."""
    if not dist.is_available() or not dist.is_initialized():
        return 0
    return dist.get_rank(group) if group is not None else dist.get_rank()
