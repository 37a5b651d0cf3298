"""One activation-checkpointing API for plain, FSDP1 and FSDP2 models.

:func:`apply_activation_checkpointing` takes the modules to checkpoint in any of the
forms users write today: module classes, torch policy objects, a ``module -> bool``
predicate, a ``(name, module) -> bool`` predicate, an auto-wrap policy callable, or
:func:`every_nth` for every k-th layer; ``ops_to_save=`` adds op-level selective
checkpointing (torch >= 2.5). Checkpointing is non-reentrant on every torch, a module is
never wrapped twice, and the call returns the qualified names it checkpointed.

Example:
    >>> import torch.nn as nn
    >>> from compat.checkpointing import apply_activation_checkpointing, every_nth
    >>> model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(4)])
    >>> apply_activation_checkpointing(model, every_nth(2, nn.Sequential))
    ['1', '3']
    >>> apply_activation_checkpointing(model, nn.Sequential)  # 1 and 3 are done already
    ['0', '2']
    >>> apply_activation_checkpointing(model, nn.Sequential)
    []
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable

import torch.nn as nn

from compat.features import current
from compat.policies import is_policy_object, module_classes, normalize_policy, select_modules

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


@dataclass(frozen=True)
class EveryNth:
    """Select the k-th, 2k-th, ... module of the given classes, counted in module order.

    Counting starts at 1 (torchtitan's convention): with ``k=2`` over four blocks, the
    second and the fourth are selected.
    """

    k: int
    classes: frozenset[type[nn.Module]]

    def select(self, named: list[tuple[str, nn.Module]]) -> list[nn.Module]:
        """The selected modules among ``named`` (clean name, module) pairs."""
        matching = [module for _, module in named if isinstance(module, tuple(self.classes))]
        return matching[self.k - 1 :: self.k]


def every_nth(k: int, *classes: type[nn.Module]) -> EveryNth:
    """Checkpoint every ``k``-th module of ``classes`` (1-based, in module order).

    Raises:
        ValueError: If ``k`` is not a positive integer.
        TypeError: If ``classes`` is empty or holds something other than module classes.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"every_nth needs a positive integer k, got {k!r}")
    return EveryNth(k, module_classes(list(classes), "every_nth"))


def checkpointed_names(model: nn.Module) -> list[str]:
    """Clean names of the modules inside a ``CheckpointWrapper``, in module order."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper

    return [
        clean_name(f"{name}._checkpoint_wrapped_module" if name else "_checkpoint_wrapped_module")
        for name, module in model.named_modules()
        if isinstance(module, CheckpointWrapper)
    ]


def _predicate_arity(fn: Callable) -> int | None:
    """1 for ``module -> bool``, 2 for ``(name, module) -> bool``, None for anything else.

    An auto-wrap policy callable takes ``recurse``; that name tells it apart from a
    predicate whatever its other parameters are.
    """
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.name == "recurse" for p in parameters):
        return None
    arity = sum(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        for p in parameters
    )
    return arity if arity in (1, 2) else None


def _select(model: nn.Module, policy: Any) -> list[nn.Module]:
    """The modules ``policy`` picks in ``model`` (its root excluded), in module order."""
    named = [(clean_name(name), module) for name, module in model.named_modules() if name]
    if isinstance(policy, EveryNth):
        return policy.select(named)
    plain_callable = not isinstance(policy, (type, nn.Module)) and not is_policy_object(policy)
    if callable(policy) and plain_callable:
        arity = _predicate_arity(policy)
        if arity == 1:
            return [module for _, module in named if policy(module)]
        if arity == 2:
            return [module for name, module in named if policy(name, module)]
    # Classes, policy objects and auto-wrap policy callables select like FSDP1 wrapping.
    chosen = set(select_modules(model, normalize_policy(policy, "policy")))
    by_name = dict(model.named_modules())
    return [by_name[name] for name in by_name if name in chosen]


def _context_fn(ops_to_save: Iterable[Any]) -> Callable:
    if not current().selective_ac:
        raise NotImplementedError(
            "op-level selective activation checkpointing needs "
            "torch.utils.checkpoint.create_selective_checkpoint_contexts (torch >= 2.5); "
            f"installed torch {current().torch}"
        )
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    ops = list(ops_to_save)
    if not ops:
        raise ValueError("ops_to_save is empty; omit it for full activation checkpointing")
    return functools.partial(create_selective_checkpoint_contexts, ops)


def apply_activation_checkpointing(
    model: nn.Module, policy: Any, *, ops_to_save: Iterable[Any] | None = None
) -> list[str]:
    """Checkpoint the submodules ``policy`` selects, non-reentrantly, in place.

    Args:
        model: A plain model, or one wrapped by FSDP1 or sharded by FSDP2.
        policy: Which submodules: a module class or a set/list/tuple of them; a torch
            policy object (``ModuleWrapPolicy``, ``CustomPolicy``); a ``module -> bool``
            or ``(name, module) -> bool`` predicate (told apart by signature; names
            leave out FSDP1 and checkpoint wrapper levels); an auto-wrap policy
            callable; or :func:`every_nth`.
        ops_to_save: torch ops whose outputs are kept, everything else in a selected
            module being recomputed (op-level selective checkpointing, torch >= 2.5).

    Returns:
        Clean qualified names of the modules this call checkpointed; modules already
        checkpointed are left alone, so applying the same policy twice returns ``[]``.

    Raises:
        TypeError: For a policy of none of these forms.
        NotImplementedError: For ``ops_to_save`` on torch < 2.5.
    """
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        CheckpointWrapper,
        checkpoint_wrapper,
    )
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        apply_activation_checkpointing as torch_apply,
    )

    wrapper_kwargs: dict[str, Any] = {"checkpoint_impl": CheckpointImpl.NO_REENTRANT}
    if ops_to_save is not None:
        wrapper_kwargs["context_fn"] = _context_fn(ops_to_save)
    already = {
        m._checkpoint_wrapped_module for m in model.modules() if isinstance(m, CheckpointWrapper)
    }
    chosen = {
        id(m)
        for m in _select(model, policy)
        if not isinstance(m, CheckpointWrapper) and m not in already
    }
    if not chosen:
        return []
    before = set(checkpointed_names(model))
    torch_apply(
        model,
        checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, **wrapper_kwargs),
        check_fn=lambda module: id(module) in chosen,
    )
    return [name for name in checkpointed_names(model) if name not in before]


def checkpoint_modules(model: nn.Module, classes: Any) -> list[str]:
    """Checkpoint every instance of ``classes`` not checkpointed already (see above)."""
    return apply_activation_checkpointing(
        model, module_classes(classes, "activation_checkpointing")
    )


#: The keyword torch's ``checkpoint_wrapper`` lost in 2.0 (FSDP133, FSDP139).
OFFLOAD_KEYWORD = "offload_to_cpu"
_OFFLOAD_DETAIL = (
    "`offload_to_cpu=True` runs as `offload_wrapper(module)`: activations are saved on CPU "
    "and nothing is recomputed, what torch 1.13 did (its other arguments ignored); on "
    "torch 1.11 and 1.12 the module was also checkpointed (reentrant): for both, write "
    "`offload_wrapper(checkpoint_wrapper(module))`."
)
_FALSY_DETAIL = "`offload_to_cpu` is false here, as by default: the keyword is dropped."


def checkpoint_wrapper(module: nn.Module, *args: Any, **kwargs: Any) -> nn.Module:
    """The ``checkpoint_wrapper`` of torch, also taking the ``offload_to_cpu`` it lost in 2.0.

    ``offload_to_cpu=True`` gives torch's ``offload_wrapper(module)`` and
    ``offload_to_cpu=False`` is dropped, each with a warning that says what runs (FSDP133;
    FSDP139 for ``False``); any other call, and any call on torch 1.13 (which still takes
    the keyword), is torch's own.

    Example:
        >>> import warnings
        >>> import torch
        >>> import torch.nn as nn
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     wrapped = checkpoint_wrapper(nn.Linear(2, 2), offload_to_cpu=True)
        ...     out = wrapped(torch.ones(1, 2, requires_grad=True))
        >>> out.shape
        torch.Size([1, 2])
    """
    return legacy_checkpoint_wrapper(_torch_checkpoint_wrapper(), module, args, kwargs)


def legacy_checkpoint_wrapper(
    wrapper: Callable[..., nn.Module], module: nn.Module, args: tuple, kwargs: dict[str, Any]
) -> nn.Module:
    """Call torch's ``wrapper`` with ``offload_to_cpu`` translated (FSDP133), else as is."""
    if OFFLOAD_KEYWORD not in kwargs or OFFLOAD_KEYWORD in inspect.signature(wrapper).parameters:
        return wrapper(module, *args, **kwargs)
    from compat.deprecation import warn_deprecated

    kwargs = dict(kwargs)
    offload = kwargs.pop(OFFLOAD_KEYWORD)
    if not offload:  # the default: dropped (FSDP139's message says so)
        if offload is False:
            warn_deprecated("FSDP139")
        else:
            warn_deprecated("FSDP133", detail=_FALSY_DETAIL)
        return wrapper(module, *args, **kwargs)
    warn_deprecated("FSDP133", detail=_OFFLOAD_DETAIL)
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import offload_wrapper

    return offload_wrapper(module)


def _torch_checkpoint_wrapper() -> Callable[..., nn.Module]:
    """The ``checkpoint_wrapper`` of torch itself, whether or not the drop-in patched it."""
    from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as home

    found = home.checkpoint_wrapper
    return getattr(found, "__compat_original__", found)
