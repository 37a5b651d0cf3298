"""The policy types every part of ``compat`` shares: torch's wrap module, the policy classes.

``ModuleWrapPolicy`` and ``CustomPolicy`` are torch's where torch has them and faithful
backports where not; :func:`module_classes` validates the module classes a policy is
given; :func:`is_policy_object` tells policy objects from policy callables. Nothing here
imports the rest of ``compat`` beyond :mod:`compat.features`, so that
:mod:`compat.policies`, :mod:`compat.fsdp.wrap` and :mod:`compat.checkpointing` can all
build on it.

Example:
    >>> import torch.nn as nn
    >>> from compat.policy_types import ModuleWrapPolicy, is_policy_object
    >>> is_policy_object(ModuleWrapPolicy({nn.Linear})), is_policy_object(len)
    (True, False)
"""

from __future__ import annotations

from typing import Any, Callable

import torch.nn as nn

from codemods.registry.names import TORCH_WRAP
from compat.features import current, import_fsdp_module

torch_wrap = import_fsdp_module(TORCH_WRAP)


def module_classes(value: Any, argument: str) -> frozenset[type[nn.Module]]:
    """Validate a module class or a collection of them.

    Args:
        value: An ``nn.Module`` subclass, or a set, list, tuple or frozenset of them.
        argument: The argument's name, for the error message.

    Returns:
        The classes as a frozenset.

    Raises:
        TypeError: If ``value`` holds an instance, a non-Module class, or is empty.

    Example:
        >>> module_classes([nn.Linear, nn.ReLU], "policy") == {nn.Linear, nn.ReLU}
        True
        >>> module_classes(nn.Linear(2, 2), "policy")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: policy expects nn.Module subclasses, got an instance of Linear; pass...
    """
    items = list(value) if isinstance(value, (set, frozenset, list, tuple)) else [value]
    if not items:
        raise TypeError(f"{argument} got an empty collection; pass at least one nn.Module subclass")
    for item in items:
        if isinstance(item, nn.Module):
            raise TypeError(
                f"{argument} expects nn.Module subclasses, got an instance of "
                f"{type(item).__name__}; pass the class {type(item).__name__} itself"
            )
        if not (isinstance(item, type) and issubclass(item, nn.Module)):
            raise TypeError(f"{argument} expects nn.Module subclasses, got {item!r}")
    return frozenset(items)


class _ModuleWrapPolicyBackport:
    """``ModuleWrapPolicy`` for torch < 2.0, as the policy callable those versions take."""

    def __init__(self, module_classes_: Any) -> None:
        self._module_classes = tuple(module_classes(module_classes_, "ModuleWrapPolicy"))

    def __call__(self, module: nn.Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return True if recurse else isinstance(module, self._module_classes)

    def __repr__(self) -> str:
        names = ", ".join(sorted(cls.__name__ for cls in self._module_classes))
        return f"ModuleWrapPolicy({{{names}}})"


class _CustomPolicyBackport:
    """``CustomPolicy`` for torch < 2.1: ``lambda_fn(module)`` decides; no per-module kwargs."""

    def __init__(self, lambda_fn: Callable[[nn.Module], Any]) -> None:
        if not callable(lambda_fn):
            raise TypeError(f"CustomPolicy expects a callable, got {type(lambda_fn).__name__}")
        self._lambda_fn = lambda_fn

    def __call__(self, module: nn.Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        if recurse:
            return True
        decision = self._lambda_fn(module)
        if isinstance(decision, dict) and decision:
            raise NotImplementedError(
                f"CustomPolicy returning per-module FSDP arguments needs torch >= 2.1 "
                f"(installed: {current().torch}); return True or False instead"
            )
        return bool(decision)


ModuleWrapPolicy: Any = vars(torch_wrap).get("ModuleWrapPolicy", _ModuleWrapPolicyBackport)
CustomPolicy: Any = vars(torch_wrap).get("CustomPolicy", _CustomPolicyBackport)

# torch 2.1 replaced the private `_FSDPPolicy` (a `policy` property returning a callable)
# with `_Policy` (`_run_policy` returning the modules); 2.0 has the former, 2.1+ the latter.
# Read from the module itself: with the drop-in installed, getattr would find compat's.
_POLICY_BASES = tuple(
    cls
    for cls in (
        vars(torch_wrap).get("_Policy"),
        vars(torch_wrap).get("_FSDPPolicy"),
        ModuleWrapPolicy,
        CustomPolicy,
    )
    if isinstance(cls, type)
)


def is_policy_object(policy: Any) -> bool:
    """Whether ``policy`` is a torch policy object or compat's backport of one."""
    return isinstance(policy, _POLICY_BASES)


__all__ = ["CustomPolicy", "ModuleWrapPolicy", "is_policy_object", "module_classes", "torch_wrap"]
