"""FSDP1's legacy state-dict API, kept working through ``compat.fsdp.FSDP`` (FSDP115-FSDP117).

``compat.fsdp.FullyShardedDataParallel.state_dict_type(...)``, ``set_state_dict_type``,
``full_optim_state_dict``, ``sharded_optim_state_dict``, ``shard_full_optim_state_dict``,
``flatten_sharded_optim_state_dict``, ``scatter_full_optim_state_dict`` and
``rekey_optim_state_dict`` are these functions. Each warns with its rule (FSDP115 for the
state-dict type, FSDP116 for the five optimizer methods) at the user's line, then calls
torch's own method where the installed torch has it, or its stand-in written on
``torch.distributed.checkpoint.state_dict`` (:mod:`compat.fsdp.fallbacks`) where not.

Two things differ from calling torch directly:

- ``optim_input=`` is dropped with FSDP117's warning when ``optim=`` is given (torch says
  it changes nothing then); without ``optim`` it goes on to torch's method;
- on CPU ranks, a full state dict with ``FullStateDictConfig(offload_to_cpu=True)``
  makes FSDP1 fail while gathering (seen on torch 2.13: "setStorage: ... out of bounds
  for storage of size 0"); the parameters are on the CPU already, so compat asks for
  ``offload_to_cpu=False`` with the same ``rank0_only``, which gives the same dict.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn as nn

import compat.fsdp.fallbacks as fallbacks
from compat.deprecation import warn_deprecated
from compat.fsdp.fallbacks import FullStateDictConfig, StateDictType, TorchFSDP, runs_on_cpu


def torch_method(name: str) -> Callable[..., Any] | None:
    """The installed torch's ``FullyShardedDataParallel.<name>``, or None if it lacks it."""
    return getattr(TorchFSDP, name, None)


def cpu_safe_config(module: nn.Module, state_dict_type: Any, config: Any) -> Any:
    """``config`` without the CPU offload that breaks FSDP1's full state dict on CPU ranks.

    Example:
        >>> import torch.nn as nn
        >>> config = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
        >>> cpu_safe_config(nn.Linear(2, 2), StateDictType.FULL_STATE_DICT, config) is config
        True
    """
    if (
        state_dict_type == StateDictType.FULL_STATE_DICT
        and isinstance(config, FullStateDictConfig)
        and config.offload_to_cpu
        and runs_on_cpu(module)
    ):
        return FullStateDictConfig(offload_to_cpu=False, rank0_only=config.rank0_only)
    return config


def state_dict_type(
    module: nn.Module,
    state_dict_type: Any,
    state_dict_config: Any = None,
    optim_state_dict_config: Any = None,
) -> Any:
    """``FSDP.state_dict_type(...)``: a context manager, with FSDP115's warning."""
    warn_deprecated("FSDP115")
    config = cpu_safe_config(module, state_dict_type, state_dict_config)
    own = torch_method("state_dict_type") or fallbacks.state_dict_type
    return own(module, state_dict_type, config, optim_state_dict_config)


def set_state_dict_type(
    module: nn.Module,
    state_dict_type: Any,
    state_dict_config: Any = None,
    optim_state_dict_config: Any = None,
) -> Any:
    """``FSDP.set_state_dict_type(...)``, with FSDP115's warning; returns the old settings."""
    warn_deprecated("FSDP115")
    config = cpu_safe_config(module, state_dict_type, state_dict_config)
    own = torch_method("set_state_dict_type") or fallbacks.set_state_dict_type
    return own(module, state_dict_type, config, optim_state_dict_config)


def _optim_arguments(optim: Any, optim_input: Any, method: str) -> dict[str, Any]:
    """The ``optim``/``optim_input`` keywords to pass on (``optim_input`` dropped if ``optim``)."""
    if optim_input is None:
        return {"optim": optim}
    if optim is not None:
        warn_deprecated("FSDP117")
        return {"optim": optim}
    if torch_method(method) is None:
        raise TypeError(
            f"{method}(optim_input=...) needs torch's own method, which this torch lacks: "
            "pass the optimizer as optim= instead"
        )
    return {"optim": None, "optim_input": optim_input}


def full_optim_state_dict(
    model: nn.Module,
    optim: torch.optim.Optimizer,
    optim_input: Any = None,
    rank0_only: bool = True,
    group: Any = None,
) -> dict[str, Any]:
    """``FSDP.full_optim_state_dict(...)``, with FSDP116's warning."""
    warn_deprecated("FSDP116")
    if optim_input is not None:
        warn_deprecated("FSDP117")  # optim is required here: optim_input changes nothing
    own = torch_method("full_optim_state_dict")
    if own is None:
        return fallbacks.full_optim_state_dict(model, optim, rank0_only=rank0_only, group=group)
    return own(model, optim, rank0_only=rank0_only, group=group)


def sharded_optim_state_dict(
    model: nn.Module, optim: torch.optim.Optimizer, group: Any = None
) -> dict[str, Any]:
    """``FSDP.sharded_optim_state_dict(...)``, with FSDP116's warning."""
    warn_deprecated("FSDP116")
    own = torch_method("sharded_optim_state_dict") or fallbacks.sharded_optim_state_dict
    return own(model, optim, group=group)


def shard_full_optim_state_dict(
    full_optim_state_dict: dict[str, Any],
    model: nn.Module,
    optim_input: Any = None,
    optim: torch.optim.Optimizer | None = None,
) -> dict[str, Any]:
    """``FSDP.shard_full_optim_state_dict(...)``, with FSDP116's warning."""
    warn_deprecated("FSDP116")
    arguments = _optim_arguments(optim, optim_input, "shard_full_optim_state_dict")
    own = torch_method("shard_full_optim_state_dict")
    if own is None:
        return fallbacks.shard_full_optim_state_dict(full_optim_state_dict, model, optim)
    return own(full_optim_state_dict, model, **arguments)


def flatten_sharded_optim_state_dict(
    sharded_optim_state_dict: dict[str, Any], model: nn.Module, optim: torch.optim.Optimizer
) -> dict[str, Any]:
    """``FSDP.flatten_sharded_optim_state_dict(...)``, with FSDP116's warning."""
    warn_deprecated("FSDP116")
    own = (
        torch_method("flatten_sharded_optim_state_dict")
        or fallbacks.flatten_sharded_optim_state_dict
    )
    return own(sharded_optim_state_dict, model, optim)


def scatter_full_optim_state_dict(
    full_optim_state_dict: dict[str, Any] | None,
    model: nn.Module,
    optim_input: Any = None,
    optim: torch.optim.Optimizer | None = None,
    group: Any = None,
) -> dict[str, Any]:
    """``FSDP.scatter_full_optim_state_dict(...)``, with FSDP116's warning."""
    warn_deprecated("FSDP116")
    arguments = _optim_arguments(optim, optim_input, "scatter_full_optim_state_dict")
    own = torch_method("scatter_full_optim_state_dict")
    if own is None:
        return fallbacks.scatter_full_optim_state_dict(
            full_optim_state_dict, model, optim, group=group
        )
    return own(full_optim_state_dict, model, group=group, **arguments)


def rekey_optim_state_dict(
    optim_state_dict: dict[str, Any],
    optim_state_key_type: Any,
    model: nn.Module,
    optim_input: Any = None,
    optim: torch.optim.Optimizer | None = None,
) -> dict[str, Any]:
    """``FSDP.rekey_optim_state_dict(...)``; warns only for ``optim_input=`` (FSDP117).

    torch does not deprecate the method itself, only its ``optim_input`` argument.
    """
    arguments = _optim_arguments(optim, optim_input, "rekey_optim_state_dict")
    own = torch_method("rekey_optim_state_dict")
    if own is None:
        return fallbacks.rekey_optim_state_dict(
            optim_state_dict, optim_state_key_type, model, optim=optim
        )
    return own(optim_state_dict, optim_state_key_type, model, **arguments)


#: The class attributes ``compat.fsdp.FullyShardedDataParallel`` takes from here.
LEGACY_METHODS = {
    function.__name__: function
    for function in (
        state_dict_type,
        set_state_dict_type,
        full_optim_state_dict,
        sharded_optim_state_dict,
        shard_full_optim_state_dict,
        flatten_sharded_optim_state_dict,
        scatter_full_optim_state_dict,
        rekey_optim_state_dict,
    )
}

__all__ = [
    "LEGACY_METHODS",
    "cpu_safe_config",
    "flatten_sharded_optim_state_dict",
    "full_optim_state_dict",
    "rekey_optim_state_dict",
    "scatter_full_optim_state_dict",
    "set_state_dict_type",
    "shard_full_optim_state_dict",
    "sharded_optim_state_dict",
    "state_dict_type",
    "torch_method",
]
