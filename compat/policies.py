"""Every form of auto-wrap policy, normalised to what the installed torch's FSDP accepts.

One function, :func:`normalize_policy`, is the door for all of ``compat``: module
classes, sets of them, torch policy objects and callables in either the
``unwrapped_params`` or the ``nonwrapped_numel`` spelling. :func:`select_modules`
says which submodules a policy picks, the way FSDP1's recursive wrapping would, without
a process group (so it also runs where FSDP cannot).

Example:
    >>> import torch.nn as nn
    >>> from compat.policies import normalize_policy, select_modules
    >>> model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    >>> select_modules(model, normalize_policy(nn.Linear))
    ['0', '1.0']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from typing import Any, Callable

import torch.nn as nn

from compat.deprecation import warn_deprecated
from compat.features import current
from compat.policy_types import ModuleWrapPolicy, is_policy_object, module_classes


def _is_class_spec(value: Any) -> bool:
    return isinstance(value, type) or (
        isinstance(value, (set, frozenset, list, tuple))
        and all(isinstance(item, (type, nn.Module)) for item in value)
    )


def normalize_policy(policy: Any, argument: str = "auto_wrap_policy") -> Any:
    """Turn any accepted policy form into one the installed torch's FSDP takes.

    Args:
        policy: ``None``; an ``nn.Module`` subclass or a set/list/tuple of them; a torch
            policy object (``ModuleWrapPolicy``, ``CustomPolicy``) or compat's backport of
            one; or a policy callable ``(module, recurse, nonwrapped_numel)`` in either
            numel spelling.
        argument: The argument's name, for error messages.

    Returns:
        ``None``, a ``ModuleWrapPolicy`` (torch's, or compat's backport before torch 2.0),
        the policy object unchanged, or the callable adapted to the installed torch.

    Raises:
        TypeError: If ``policy`` is none of these.
    """
    if policy is None:
        return None
    if isinstance(policy, nn.Module):  # callable, but surely meant as its class
        module_classes(policy, argument)
    if _is_class_spec(policy):
        return ModuleWrapPolicy(module_classes(policy, argument))
    if is_policy_object(policy):
        return policy
    if callable(policy):
        return adapt_policy_callable(policy)
    raise TypeError(
        f"{argument} expects a module class, a set of module classes, a policy object or a "
        f"policy callable, got {type(policy).__name__}"
    )


def _parameter_names(fn: Callable) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # builtins and C callables have no signature
        return None


def adapt_policy_callable(fn: Callable) -> Callable:
    """Make a policy callable accept the numel keyword the installed torch passes.

    torch 2.0 renamed the keyword FSDP passes to policies from ``unwrapped_params`` to
    ``nonwrapped_numel``. A callable that names only the other spelling is wrapped so
    the keyword is renamed on the way in; a callable in the legacy spelling also warns
    (``FSDP102``). Callables that take ``**kwargs`` or both names are returned as is.

    Example:
        >>> def legacy(module, recurse, unwrapped_params):
        ...     return recurse or unwrapped_params > 4
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     policy = adapt_policy_callable(legacy)
        >>> policy(nn.Linear(2, 2), False, 6)
        True
    """
    names = _parameter_names(fn)
    if names is None:
        return fn
    expected = current().policy_numel_kwarg
    other = "unwrapped_params" if expected == "nonwrapped_numel" else "nonwrapped_numel"
    if other not in names or expected in names:
        return fn
    if other == "unwrapped_params":
        warn_deprecated("FSDP102", detail=f"(in your policy {_callable_name(fn)})")

    @functools.wraps(fn)
    def adapted(*args: Any, **kwargs: Any) -> Any:
        if expected in kwargs:
            kwargs[other] = kwargs.pop(expected)
        return fn(*args, **kwargs)

    adapted.__signature__ = _renamed_signature(fn, other, expected)  # type: ignore[attr-defined]
    return adapted


def _renamed_signature(fn: Callable, old: str, new: str) -> inspect.Signature:
    signature = inspect.signature(fn)
    params = [p.replace(name=new) if p.name == old else p for p in signature.parameters.values()]
    return signature.replace(parameters=params)


def _callable_name(fn: Callable) -> str:
    target = fn.func if isinstance(fn, functools.partial) else fn
    return getattr(target, "__qualname__", repr(target))


def select_modules(
    root: nn.Module,
    policy: Any,
    include_root: bool = False,
    ignored: Iterable[nn.Module] = (),
) -> list[str]:
    """Qualified names of the submodules ``policy`` selects, in FSDP1's wrapping order.

    No process group is needed. Policy objects use their own selection
    (``_run_policy`` on torch >= 2.1); callables are walked like FSDP1's recursive
    wrapping: a module is entered when the policy says ``recurse=True`` for it, its
    children are decided first (post-order), and the module itself is selected when the
    policy accepts the numel its selected children left unwrapped.

    Args:
        root: The model.
        policy: Any form :func:`normalize_policy` accepts.
        include_root: Report ``""`` for the root when the policy selects it (FSDP
            always wraps the root itself, so it is left out by default).
        ignored: FSDP1's ``ignored_modules``: neither they nor anything inside them is
            selected, and their parameters count for no module's size.

    Returns:
        Names as in ``root.named_modules()``, children before parents.
    """
    policy = normalize_policy(policy)
    if policy is None:
        return []
    left_out = {module for top in ignored for module in top.modules()}
    left_out_params = {p for module in left_out for p in module.parameters(recurse=False)}
    run_policy = getattr(policy, "_run_policy", None)
    if run_policy is not None:
        chosen = run_policy(root, left_out, {})
        names = _post_order(root)
        return [name for name in names if (name or include_root) and names[name] in chosen]
    callable_policy = getattr(policy, "policy", policy)  # torch 2.0's _FSDPPolicy
    numel_kwarg = current().policy_numel_kwarg
    selected: list[str] = []

    def visit(module: nn.Module, name: str, is_root: bool) -> int:
        if module in left_out:
            return 0
        numel = sum(p.numel() for p in module.parameters() if p not in left_out_params)
        if not callable_policy(module=module, recurse=True, **{numel_kwarg: numel}):
            return 0
        wrapped = sum(
            visit(child, f"{name}.{child_name}" if name else child_name, False)
            for child_name, child in module.named_children()
        )
        remainder = numel - wrapped
        if (not is_root or include_root) and callable_policy(
            module=module, recurse=False, **{numel_kwarg: remainder}
        ):
            selected.append(name)
            return numel
        return wrapped

    visit(root, "", True)
    return selected


def _post_order(root: nn.Module) -> dict[str, nn.Module]:
    """Modules by qualified name, children before their parents (FSDP1's wrapping order)."""
    ordered: dict[str, nn.Module] = {}

    def visit(module: nn.Module, name: str) -> None:
        for child_name, child in module.named_children():
            visit(child, f"{name}.{child_name}" if name else child_name)
        ordered.setdefault(name, module)

    visit(root, "")
    return ordered


__all__ = [
    "adapt_policy_callable",
    "is_policy_object",
    "module_classes",
    "normalize_policy",
    "select_modules",
]
