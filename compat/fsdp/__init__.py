"""Drop-in ``FullyShardedDataParallel`` that accepts the legacy arguments.

``compat.fsdp.FullyShardedDataParallel(...)`` (also ``compat.fsdp.FSDP``) builds and
returns a real ``torch.distributed.fsdp.FullyShardedDataParallel``: ``isinstance`` holds
both ways, and class attributes (``FSDP.summon_full_params``, ``FSDP.optim_state_dict``,
...) are torch's, except the legacy state-dict methods (``FSDP.state_dict_type``,
``FSDP.full_optim_state_dict`` and their siblings), which warn and keep working where
torch drops them (:mod:`compat.fsdp.state_dict`). On the way in it translates:

- ``auto_wrap_policy``: any form :func:`compat.policies.normalize_policy` accepts
  (module classes, policy objects, callables in either numel spelling);
- ``cpu_offload=True`` / ``False`` (FSDP109) to ``CPUOffload(offload_params=...)``;
- ``activation_checkpointing=Block`` or ``[Block, ...]`` (FSDP110), applied after
  wrapping with non-reentrant checkpointing;
- ``device_id``: on a host without an accelerator, ``torch.device("cpu")`` so FSDP1 runs
  with gloo (torch >= 2.2);
- every keyword the registry renames on ``FullyShardedDataParallel`` (a keyword-rename
  rule naming torch's or compat's class), with the rule's warning.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn as nn

import codemods.registry
import compat.fsdp.state_dict as _state_dict
from codemods.registry import ChangeKind, Rule
from codemods.registry.names import COMPAT_FSDP_CLASSES, TORCH_FSDP_CLASSES
from compat.checkpointing import checkpoint_modules
from compat.deprecation import warn_deprecated
from compat.features import current, import_fsdp_module
from compat.fsdp import wrap  # noqa: F401 - compat.fsdp.wrap is part of this package's API
from compat.policies import module_classes, normalize_policy

_torch_fsdp = import_fsdp_module()
CPUOffload = _torch_fsdp.CPUOffload
TorchFSDP = _torch_fsdp.FullyShardedDataParallel
_SIGNATURE = inspect.signature(TorchFSDP.__init__)


def has_accelerator() -> bool:
    """Whether this host has a device FSDP would use by default (CUDA or another)."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        return bool(accelerator.is_available())
    return torch.cuda.is_available()


def keyword_renames() -> list[Rule]:
    """The registry's keyword renames on torch's or compat's ``FullyShardedDataParallel``."""
    classes = {*TORCH_FSDP_CLASSES, *COMPAT_FSDP_CLASSES}
    return [
        rule
        for rule in codemods.registry.REGISTRY
        if rule.kind is ChangeKind.KEYWORD_RENAME
        and rule.argument
        and rule.new_argument
        and classes.intersection(rule.old)
    ]


def _rename_keywords(kwargs: dict[str, Any]) -> dict[str, Any]:
    renamed = dict(kwargs)
    for rule in keyword_renames():
        # A torch that still takes the old spelling (ignored_parameters on 2.0) is served as is.
        if rule.argument not in renamed or rule.argument in _SIGNATURE.parameters:
            continue
        if rule.new_argument in renamed:
            raise TypeError(
                f"got both {rule.new_argument}= and its old spelling {rule.argument}=; "
                f"pass only {rule.new_argument}"
            )
        warn_deprecated(rule.code)
        renamed[rule.new_argument] = renamed.pop(rule.argument)
    return renamed


class ArgumentBindingError(TypeError):
    """The call does not fit torch's ``FullyShardedDataParallel`` signature."""


def _bind(module: nn.Module, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        bound = _SIGNATURE.bind(None, module, *args, **kwargs)
    except TypeError as exc:  # worded like torch's own
        raise ArgumentBindingError(str(exc)) from None
    arguments = dict(bound.arguments)
    arguments.pop(next(iter(_SIGNATURE.parameters)))  # self
    arguments.update(arguments.pop("kwargs", {}))
    return arguments


def translate_fsdp_arguments(module: nn.Module, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Bind FSDP1 arguments and translate the legacy ones; return torch's keyword set.

    Raises:
        TypeError: For an argument torch's FSDP does not take (with torch's wording), or
            a legacy value of the wrong type.
    """
    arguments = _bind(module, args, _rename_keywords(kwargs))
    cpu_offload = arguments.get("cpu_offload")
    if isinstance(cpu_offload, bool):
        warn_deprecated("FSDP109")
        arguments["cpu_offload"] = CPUOffload(offload_params=cpu_offload)
    if arguments.get("auto_wrap_policy") is not None:
        arguments["auto_wrap_policy"] = normalize_policy(arguments["auto_wrap_policy"])
    if arguments.get("device_id") is None and current().fsdp1_on_cpu and not has_accelerator():
        arguments["device_id"] = torch.device("cpu")
    return arguments


def legacy_fsdp_call(
    module: nn.Module, args: tuple, kwargs: dict[str, Any]
) -> tuple[dict[str, Any], frozenset[type[nn.Module]] | None] | None:
    """What a legacy FSDP call means to torch, or None for a call in the current API.

    Returns:
        None when torch's ``FullyShardedDataParallel`` takes the call as it is; else its
        translated keyword arguments and the module classes ``activation_checkpointing=``
        asks to checkpoint after wrapping (None if it does not).

    Raises:
        TypeError: As :func:`translate_fsdp_arguments`.
    """
    kwargs = dict(kwargs)
    legacy = "activation_checkpointing" in kwargs
    activation_checkpointing = kwargs.pop("activation_checkpointing", None)
    classes = None
    if activation_checkpointing is not None:
        warn_deprecated("FSDP110")
        classes = module_classes(activation_checkpointing, "activation_checkpointing")
    translated = translate_fsdp_arguments(module, *args, **kwargs)
    if not legacy:
        try:
            plain = _bind(module, args, kwargs)
        except ArgumentBindingError:  # a renamed keyword, which torch's signature lacks
            return translated, classes
        # Translation hands back the very objects it was given where nothing is legacy.
        if plain.keys() == translated.keys() and all(translated[k] is plain[k] for k in plain):
            return None
    return translated, classes


class _TorchFSDPFacade(type):
    """Makes the compat name build, and stand for, torch's class."""

    def __call__(cls, module: nn.Module, *args: Any, **kwargs: Any):
        legacy = legacy_fsdp_call(module, args, kwargs)
        if legacy is None:
            return TorchFSDP(module, *args, **kwargs)
        arguments, classes = legacy
        sharded = TorchFSDP(**arguments)
        if classes is not None:
            checkpoint_modules(sharded, classes)
        return sharded

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, TorchFSDP)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, TorchFSDP)

    def __getattr__(cls, name: str) -> Any:
        return getattr(TorchFSDP, name)


class FullyShardedDataParallel(metaclass=_TorchFSDPFacade):
    """torch's ``FullyShardedDataParallel``, built from legacy arguments as well.

    Example:
        >>> import torch.nn as nn
        >>> from compat.fsdp import FSDP
        >>> from torch.distributed.fsdp import FullyShardedDataParallel as TorchFSDP
        >>> issubclass(TorchFSDP, FSDP)
        True
    """

    # The legacy state-dict API: warns, and outlives torch's own (compat.fsdp.state_dict).
    state_dict_type = staticmethod(_state_dict.state_dict_type)
    set_state_dict_type = staticmethod(_state_dict.set_state_dict_type)
    full_optim_state_dict = staticmethod(_state_dict.full_optim_state_dict)
    sharded_optim_state_dict = staticmethod(_state_dict.sharded_optim_state_dict)
    shard_full_optim_state_dict = staticmethod(_state_dict.shard_full_optim_state_dict)
    flatten_sharded_optim_state_dict = staticmethod(_state_dict.flatten_sharded_optim_state_dict)
    scatter_full_optim_state_dict = staticmethod(_state_dict.scatter_full_optim_state_dict)
    rekey_optim_state_dict = staticmethod(_state_dict.rekey_optim_state_dict)


FSDP = FullyShardedDataParallel

#: The rules whose legacy arguments the translation takes (besides the keyword renames).
LEGACY_ARGUMENT_CODES = ("FSDP102", "FSDP109", "FSDP110")

__all__ = [
    "LEGACY_ARGUMENT_CODES",
    "ArgumentBindingError",
    "FSDP",
    "FullyShardedDataParallel",
    "has_accelerator",
    "keyword_renames",
    "legacy_fsdp_call",
    "translate_fsdp_arguments",
]
