"""Activation checkpointing applied by module class, on plain, FSDP1 and FSDP2 models.

Always non-reentrant (torch's default only since 2.2), never wrapping a module twice.
"""

from __future__ import annotations

import functools
from typing import Any

import torch.nn as nn

from compat.policies import module_classes

# Wrapper attributes that FSDP1 and checkpoint_wrapper insert into qualified names.
_WRAPPER_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.")


def clean_name(name: str) -> str:
    """A module's qualified name with FSDP1 and checkpoint wrapper levels removed.

    Example:
        >>> clean_name("blocks.0._fsdp_wrapped_module._checkpoint_wrapped_module.fc")
        'blocks.0.fc'
        >>> clean_name("_fsdp_wrapped_module")
        ''
    """
    name = name + "."
    for prefix in _WRAPPER_PREFIXES:
        name = name.replace(prefix, "")
    return name[:-1]


def checkpointed_names(model: nn.Module) -> list[str]:
    """Clean names of the modules inside a ``CheckpointWrapper``, in module order."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper

    return [
        clean_name(f"{name}._checkpoint_wrapped_module" if name else "_checkpoint_wrapped_module")
        for name, module in model.named_modules()
        if isinstance(module, CheckpointWrapper)
    ]


def checkpoint_modules(model: nn.Module, classes: Any) -> list[str]:
    """Checkpoint every instance of ``classes`` in ``model`` not checkpointed already.

    Args:
        model: A plain or FSDP-wrapped model; wrapped in place.
        classes: A module class or a set/list/tuple of them.

    Returns:
        Clean qualified names of the modules checkpointed by this call.
    """
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        CheckpointWrapper,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )

    wanted = tuple(module_classes(classes, "activation_checkpointing"))
    already = {
        m._checkpoint_wrapped_module for m in model.modules() if isinstance(m, CheckpointWrapper)
    }
    chosen = {
        id(m)
        for m in model.modules()
        if isinstance(m, wanted) and not isinstance(m, CheckpointWrapper) and m not in already
    }
    if not chosen:
        return []
    before = set(checkpointed_names(model))
    apply_activation_checkpointing(
        model,
        checkpoint_wrapper_fn=functools.partial(
            checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT
        ),
        check_fn=lambda module: id(module) in chosen,
    )
    return [name for name in checkpointed_names(model) if name not in before]
