"""FSDP1's legacy state-dict methods written on the current API, for a torch that lacks them.

Each function here does what the ``FullyShardedDataParallel`` method of the same name
did, using only what torch keeps: ``torch.distributed.checkpoint.state_dict``
(``get_model_state_dict``, ``get_optimizer_state_dict``, their ``set_`` forms and
``StateDictOptions``, torch >= 2.2). :mod:`compat.fsdp.state_dict` calls them where the
installed torch has dropped the method; they are public so that tests can run them on a
torch that still has the originals and compare.

Where the layouts differ: the legacy methods that hand back an optimizer state dict *to
load* (``shard_full_optim_state_dict``, ``scatter_full_optim_state_dict``,
``flatten_sharded_optim_state_dict``) are done here by loading into ``optim`` with
``set_optimizer_state_dict`` and returning ``optim.state_dict()``, which the usual
``optim.load_state_dict(...)`` that follows loads again unchanged: so ``optim`` is
required, and holds the loaded state already when they return.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
import weakref
from collections.abc import Iterator
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.nn as nn

from compat.checkpointing import clean_name
from compat.features import import_fsdp_module

_torch_fsdp = import_fsdp_module()
TorchFSDP = _torch_fsdp.FullyShardedDataParallel
StateDictType = _torch_fsdp.StateDictType
FullStateDictConfig = _torch_fsdp.FullStateDictConfig

# The settings a fallback state-dict type put on a module, and what it replaced.
_settings: weakref.WeakKeyDictionary[nn.Module, Settings] = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class Settings:
    """A module's state-dict type as the fallback keeps it (torch's ``StateDictSettings``)."""

    state_dict_type: Any
    state_dict_config: Any = None
    optim_state_dict_config: Any = None


def _dcp() -> types.ModuleType:
    try:
        from torch.distributed.checkpoint import state_dict
    except ImportError as exc:
        raise NotImplementedError(
            "this torch has neither FSDP's legacy state-dict methods nor "
            "torch.distributed.checkpoint.state_dict (torch >= 2.2) to stand in for them"
        ) from exc
    return state_dict


def runs_on_cpu(module: nn.Module) -> bool:
    """Whether every FSDP1 unit in ``module`` computes on the CPU (gloo ranks)."""
    units = TorchFSDP.fsdp_modules(module)
    devices = [getattr(unit, "compute_device", None) for unit in units]
    return bool(units) and all(d is not None and d.type == "cpu" for d in devices)


def map_tensors(value: Any, change: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``value`` with ``change`` applied to every tensor in it (dicts, lists, tuples walked).

    The containers are new: a state dict handed to torch's ``set_`` functions through
    ``map_tensors(state, lambda t: t)`` leaves the caller's own as it was.
    """
    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, dict):
        return {key: map_tensors(item, change) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(item, change) for item in value)
    return value


def _to_cpu(value: Any) -> Any:
    return map_tensors(value, torch.Tensor.cpu)


def _default_group_only(group: Any, method: str) -> None:
    if group is not None and group is not dist.group.WORLD:
        raise NotImplementedError(
            f"{method}(group=...) with a group other than the default one has no equivalent "
            "in torch.distributed.checkpoint.state_dict; call FSDP.optim_state_dict with "
            "group= instead"
        )


def _rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


# Model state dicts: state_dict_type / set_state_dict_type --------------------------------


def _model_options(settings: Settings) -> tuple[Any, bool, bool]:
    """The ``StateDictOptions`` for ``settings``, and whether to offload / keep rank 0 only."""
    full = settings.state_dict_type == StateDictType.FULL_STATE_DICT
    if not full and settings.state_dict_type != StateDictType.SHARDED_STATE_DICT:
        # Said first: no torch has an equivalent, so this torch's lacks are beside it.
        raise NotImplementedError(
            f"{settings.state_dict_type} has no equivalent in "
            "torch.distributed.checkpoint.state_dict: use SHARDED_STATE_DICT or FULL_STATE_DICT"
        )
    options_cls = _dcp().StateDictOptions
    config = settings.state_dict_config
    offload = bool(getattr(config, "offload_to_cpu", False))
    if full:
        rank0_only = bool(getattr(config, "rank0_only", False))
        return options_cls(full_state_dict=True), offload, rank0_only
    return options_cls(), offload, False


@contextlib.contextmanager
def _without_overrides(module: nn.Module) -> Iterator[None]:
    # torch's functions call module.state_dict() themselves: they must reach nn.Module's.
    saved = {name: module.__dict__.pop(name) for name in ("state_dict", "load_state_dict")}
    try:
        yield
    finally:
        module.__dict__.update(saved)


def _state_dict(module: nn.Module, *args: Any, **kwargs: Any) -> dict[str, Any]:
    if args or kwargs:
        raise TypeError(
            "under compat's state-dict type, state_dict() takes no arguments "
            "(torch.distributed.checkpoint.state_dict builds the whole dict)"
        )
    options, offload, rank0_only = _model_options(_settings[module])
    with _without_overrides(module):
        state = _dcp().get_model_state_dict(module, options=options)
    if rank0_only and _rank() != 0:  # what FSDP1's rank0_only hands the other ranks
        return {}
    return _to_cpu(state) if offload else state


def _load_state_dict(module: nn.Module, state_dict: dict[str, Any], strict: bool = True) -> Any:
    options, _, _ = _model_options(_settings[module])
    options = dataclasses.replace(options, strict=strict)
    with _without_overrides(module):
        return _dcp().set_model_state_dict(module, state_dict, options=options)


def set_state_dict_type(
    module: nn.Module,
    state_dict_type: Any,
    state_dict_config: Any = None,
    optim_state_dict_config: Any = None,
) -> Settings | None:
    """Make ``module.state_dict()`` / ``load_state_dict()`` answer in ``state_dict_type``.

    ``FULL_STATE_DICT`` (with ``FullStateDictConfig``'s ``offload_to_cpu`` and
    ``rank0_only``) and ``SHARDED_STATE_DICT`` are answered by
    ``get_model_state_dict`` / ``set_model_state_dict``; ``LOCAL_STATE_DICT`` has no
    equivalent and raises when the state dict is asked for. Only the module given
    answers so (torch's method set every FSDP unit under it); ``FSDP.optim_state_dict``
    does not follow it: use ``get_optimizer_state_dict``.

    Returns:
        The settings in effect before, or None if the module had none from here.
    """
    settings = Settings(state_dict_type, state_dict_config, optim_state_dict_config)
    _model_options(settings)  # an unsupported type or torch fails here, before any change
    previous = _settings.get(module)
    _settings[module] = settings
    module.__dict__["state_dict"] = types.MethodType(_state_dict, module)
    module.__dict__["load_state_dict"] = types.MethodType(_load_state_dict, module)
    return previous


def _restore(module: nn.Module, previous: Settings | None) -> None:
    if previous is not None:
        _settings[module] = previous
        return
    _settings.pop(module, None)
    module.__dict__.pop("state_dict", None)
    module.__dict__.pop("load_state_dict", None)


@contextlib.contextmanager
def state_dict_type(
    module: nn.Module,
    state_dict_type: Any,
    state_dict_config: Any = None,
    optim_state_dict_config: Any = None,
) -> Iterator[None]:
    """:func:`set_state_dict_type` for the ``with`` block only."""
    previous = _settings.get(module)
    set_state_dict_type(module, state_dict_type, state_dict_config, optim_state_dict_config)
    try:
        yield
    finally:
        _restore(module, previous)


# Optimizer state dicts ------------------------------------------------------------------


def full_optim_state_dict(
    model: nn.Module, optim: torch.optim.Optimizer, rank0_only: bool = True, group: Any = None
) -> dict[str, Any]:
    """The whole optimizer state, keyed by parameter name, on the CPU ({} off rank 0)."""
    _default_group_only(group, "full_optim_state_dict")
    dcp = _dcp()
    state = dcp.get_optimizer_state_dict(
        model, optim, options=dcp.StateDictOptions(full_state_dict=True)
    )
    if rank0_only and _rank() != 0:
        return {}
    return _to_cpu(state)


def sharded_optim_state_dict(
    model: nn.Module, optim: torch.optim.Optimizer, group: Any = None
) -> dict[str, Any]:
    """This rank's shards of the optimizer state, keyed by parameter name."""
    _default_group_only(group, "sharded_optim_state_dict")
    return _dcp().get_optimizer_state_dict(model, optim)


def _load_into(
    model: nn.Module, optim: torch.optim.Optimizer | None, state: dict[str, Any], **options: Any
) -> dict[str, Any]:
    if optim is None:
        raise TypeError(
            "on this torch the legacy method is done with set_optimizer_state_dict, which "
            "needs the optimizer: pass optim="
        )
    dcp = _dcp()
    dcp.set_optimizer_state_dict(model, optim, state, options=dcp.StateDictOptions(**options))
    return optim.state_dict()


def shard_full_optim_state_dict(
    full_optim_state_dict: dict[str, Any], model: nn.Module, optim: torch.optim.Optimizer
) -> dict[str, Any]:
    """Load a full optimizer state dict (on every rank) into ``optim``; its state dict."""
    return _load_into(model, optim, full_optim_state_dict, full_state_dict=True)


def scatter_full_optim_state_dict(
    full_optim_state_dict: dict[str, Any] | None,
    model: nn.Module,
    optim: torch.optim.Optimizer,
    group: Any = None,
) -> dict[str, Any]:
    """Load a full optimizer state dict given on rank 0 only into ``optim``; its state dict.

    Raises:
        NotImplementedError: On torch < 2.4 (no ``broadcast_from_rank0``).
    """
    _default_group_only(group, "scatter_full_optim_state_dict")
    fields = {f.name for f in dataclasses.fields(_dcp().StateDictOptions)}
    if "broadcast_from_rank0" not in fields:
        raise NotImplementedError(
            "scatter_full_optim_state_dict needs StateDictOptions(broadcast_from_rank0=...), "
            "torch >= 2.4"
        )
    state = (full_optim_state_dict or {}) if _rank() == 0 else {}
    return _load_into(model, optim, state, full_state_dict=True, broadcast_from_rank0=True)


def flatten_sharded_optim_state_dict(
    sharded_optim_state_dict: dict[str, Any], model: nn.Module, optim: torch.optim.Optimizer
) -> dict[str, Any]:
    """Load a sharded optimizer state dict into ``optim``; its state dict."""
    return _load_into(model, optim, sharded_optim_state_dict)


def _names(model: nn.Module) -> dict[int, str]:
    names = {}
    for name, param in model.named_parameters():
        # FSDP1's FlatParameter is a plain Parameter marked _is_flat_param since torch 2.1.
        if getattr(param, "_is_flat_param", False) or type(param).__name__ == "FlatParameter":
            raise NotImplementedError(
                "rekey_optim_state_dict on this torch takes a model without flattened "
                "FSDP parameters (a plain model, or FSDP with use_orig_params=True)"
            )
        names[id(param)] = clean_name(name)
    return names


def rekey_optim_state_dict(
    optim_state_dict: dict[str, Any],
    optim_state_key_type: Any,
    model: nn.Module,
    optim: torch.optim.Optimizer | None = None,
) -> dict[str, Any]:
    """Key an optimizer state dict by parameter name or by parameter id.

    Ids count the optimizer's parameters in its group order (``model.parameters()``
    order without ``optim``), as ``torch.optim`` numbers them; names leave out FSDP's
    wrapper levels.
    """
    names = _names(model)
    params = [p for g in optim.param_groups for p in g["params"]] if optim else model.parameters()
    id_to_name = {index: names[id(param)] for index, param in enumerate(params)}
    to_names = optim_state_key_type.name == "PARAM_NAME"
    mapping = id_to_name if to_names else {name: index for index, name in id_to_name.items()}

    def rekey(key: Any) -> Any:
        if isinstance(key, str) is to_names:  # already of the asked type
            return key
        return mapping[key]

    return {
        "state": {rekey(key): value for key, value in optim_state_dict["state"].items()},
        "param_groups": [
            {**group, "params": sorted(rekey(key) for key in group["params"])}
            for group in optim_state_dict["param_groups"]
        ],
    }


__all__ = [
    "Settings",
    "flatten_sharded_optim_state_dict",
    "full_optim_state_dict",
    "rekey_optim_state_dict",
    "runs_on_cpu",
    "scatter_full_optim_state_dict",
    "set_state_dict_type",
    "shard_full_optim_state_dict",
    "sharded_optim_state_dict",
    "state_dict_type",
]
