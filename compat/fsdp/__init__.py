"""Drop-in ``FullyShardedDataParallel`` that accepts the legacy arguments.

``compat.fsdp.FullyShardedDataParallel(...)`` (also ``compat.fsdp.FSDP``) builds and
returns a real ``torch.distributed.fsdp.FullyShardedDataParallel``: ``isinstance`` holds
both ways, and class attributes (``FSDP.state_dict_type``, ``FSDP.summon_full_params``,
...) are torch's. On the way in it translates:

- ``auto_wrap_policy``: any form :func:`compat.policies.normalize_policy` accepts
  (module classes, policy objects, callables in either numel spelling);
- ``cpu_offload=True`` / ``False`` (FSDP109) to ``CPUOffload(offload_params=...)``;
- ``activation_checkpointing=Block`` or ``[Block, ...]`` (FSDP110), applied after
  wrapping with non-reentrant checkpointing;
- ``device_id``: on a host without an accelerator, ``torch.device("cpu")`` so FSDP1 runs
  with gloo (torch >= 2.2).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn as nn

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


def translate_fsdp_arguments(module: nn.Module, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Bind FSDP1 arguments and translate the legacy ones; return torch's keyword set.

    Raises:
        TypeError: For an argument torch's FSDP does not take (with torch's wording), or
            a legacy value of the wrong type.
    """
    bound = _SIGNATURE.bind(None, module, *args, **kwargs)  # TypeError like torch's own
    arguments = dict(bound.arguments)
    arguments.pop(next(iter(_SIGNATURE.parameters)))  # self
    arguments.update(arguments.pop("kwargs", {}))
    cpu_offload = arguments.get("cpu_offload")
    if isinstance(cpu_offload, bool):
        warn_deprecated("FSDP109")
        arguments["cpu_offload"] = CPUOffload(offload_params=cpu_offload)
    if arguments.get("auto_wrap_policy") is not None:
        arguments["auto_wrap_policy"] = normalize_policy(arguments["auto_wrap_policy"])
    if arguments.get("device_id") is None and current().fsdp1_on_cpu and not has_accelerator():
        arguments["device_id"] = torch.device("cpu")
    return arguments


class _TorchFSDPFacade(type):
    """Makes the compat name build, and stand for, torch's class."""

    def __call__(
        cls, module: nn.Module, *args: Any, activation_checkpointing: Any = None, **kwargs
    ):
        classes = None
        if activation_checkpointing is not None:
            warn_deprecated("FSDP110")
            classes = module_classes(activation_checkpointing, "activation_checkpointing")
        sharded = TorchFSDP(**translate_fsdp_arguments(module, *args, **kwargs))
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


FSDP = FullyShardedDataParallel

__all__ = ["FSDP", "FullyShardedDataParallel", "has_accelerator", "translate_fsdp_arguments"]
