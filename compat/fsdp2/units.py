"""Which modules FSDP1 makes units of, in which order, with which arguments.

FSDP1's constructor, given an ``auto_wrap_policy``, wraps submodules before it
initialises the root, and each wrapped submodule initialises itself (materialises,
moves, broadcasts) as it is wrapped. :func:`fsdp1_units` lists those units the way
FSDP1 would:

- a policy object (``ModuleWrapPolicy``, ``CustomPolicy``) picks its modules through its
  own ``_run_policy``; the picked modules are wrapped in post-order over
  ``named_children`` (each shared module once, at its first place), with the
  per-module arguments a ``CustomPolicy`` may return;
- a policy callable is walked like FSDP1's recursive wrapping: a module is entered when
  the policy says ``recurse=True`` for it, its children are decided first, and it is
  picked when the policy accepts the parameter count its picked children left over;
- with ``mixed_precision`` and a policy, every module of
  ``MixedPrecision._module_classes_to_ignore`` (``_BatchNorm`` by default) becomes a
  unit of its own without mixed precision (and, for a callable, the walk enters every
  module, as FSDP1's ``_or_policy`` with its class policy does);
- the root comes last.

Ignored modules are never entered. A non-root unit sees no ignored modules of its own
(FSDP1 passes its children only the ignored *parameters*), which matters for what it
materialises and moves; :attr:`Unit.ignored_modules` records what each unit sees.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import torch.nn as nn

from compat.fsdp2.availability import fsdp2_module


@dataclass
class Unit:
    """One ``fully_shard`` call, as one FSDP1 instance.

    Attributes:
        name: The module's qualified name (``""`` for the root).
        module: The module.
        kwargs: The FSDP1 arguments this instance gets (the root's, or a policy's
            per-module ones).
        ignored_modules: The ignored modules this instance sees.
    """

    name: str
    module: nn.Module
    kwargs: dict[str, Any]
    ignored_modules: frozenset[nn.Module] = field(default_factory=frozenset)

    @property
    def is_root(self) -> bool:
        """Whether this is the root (the last unit)."""
        return self.name == ""


def resolve_ignored(
    root: nn.Module, ignored_modules: Any, ignored_states: Any
) -> tuple[set[nn.Module], set[nn.Parameter]]:
    """FSDP1's ignored modules (with everything inside them) and ignored parameters.

    Raises:
        ValueError: Both arguments given, a mix of modules and parameters, or an FSDP
            unit among the ignored modules (FSDP1's rules).
        TypeError: Something that is neither a module nor a parameter.
    """
    if ignored_modules is not None and ignored_states is not None:
        raise ValueError(
            "Cannot pass both ignored_modules and ignored_states at the same time (FSDP1's "
            "rule); pass ignored_states"
        )
    given = ignored_states if ignored_states is not None else ignored_modules
    argument = "ignored_states" if ignored_states is not None else "ignored_modules"
    items = [given] if isinstance(given, nn.Module) else list(given or ())
    params = [item for item in items if isinstance(item, nn.Parameter)]
    modules = [item for item in items if isinstance(item, nn.Module)]
    if len(params) + len(modules) != len(items):
        raise TypeError(f"{argument} expects nn.Module or nn.Parameter elements, got {items!r}")
    if params and argument == "ignored_modules":
        raise ValueError(
            "ignored_modules expects nn.Module elements; pass parameters as ignored_states"
        )
    if params and modules:
        raise ValueError("ignored_states expects all nn.Parameter or all nn.Module elements")
    unit_class = fsdp2_module().FSDPModule
    if any(isinstance(module, unit_class) for module in modules):
        raise ValueError(f"{argument} should not include FSDP units")
    expanded = {inner for module in modules for inner in module.modules()}
    ignored_params = {p for module in expanded for p in module.parameters()} | set(params)
    return expanded, ignored_params


def post_order(root: nn.Module) -> list[tuple[str, nn.Module]]:
    """Modules children first, each shared module once at its first place."""
    seen = {root}
    ordered: list[tuple[str, nn.Module]] = []

    def visit(module: nn.Module, name: str) -> None:
        for child_name, child in module.named_children():
            if child is not None and child not in seen:
                seen.add(child)
                visit(child, f"{name}.{child_name}" if name else child_name)
        ordered.append((name, module))

    visit(root, "")
    return ordered


def child_kwargs(root_kwargs: dict[str, Any], ignored_params: set[nn.Parameter]) -> dict[str, Any]:
    """The arguments FSDP1's root passes the units it wraps.

    Its own, but no policy, and the ignored parameters instead of the ignored modules.
    """
    base = {k: v for k, v in root_kwargs.items() if k != "ignored_modules"}
    base.update(auto_wrap_policy=None, ignored_states=ignored_params)
    return base


def fsdp1_units(
    root: nn.Module,
    policy: Any,
    root_kwargs: dict[str, Any],
    ignored_modules: set[nn.Module],
    ignored_params: set[nn.Parameter],
) -> list[Unit]:
    """The units FSDP1 builds for ``root``, in its order, the root last.

    Args:
        root: The module passed to FSDP1.
        policy: The normalised ``auto_wrap_policy`` (``None``: the root only).
        root_kwargs: The call's FSDP1 arguments (all but ``module``).
        ignored_modules: Every ignored module (:func:`resolve_ignored`).
        ignored_params: Every ignored parameter.
    """
    base = child_kwargs(root_kwargs, ignored_params)
    precision = root_kwargs.get("mixed_precision")
    picked: dict[nn.Module, tuple[str, dict[str, Any]]] = {}
    if policy is not None:
        classes = tuple(getattr(precision, "_module_classes_to_ignore", ()) or ())
        run_policy = getattr(policy, "_run_policy", None)
        if run_policy is not None:
            targets = run_policy(root, ignored_modules, copy.copy(base))
            for module in root.modules():
                if classes and module not in ignored_modules and isinstance(module, classes):
                    targets.setdefault(module, copy.copy(base))["mixed_precision"] = None
            names = {module: name for name, module in post_order(root)}
            picked = {m: (names[m], targets[m]) for m in names if m in targets and m is not root}
        else:
            walk_classes = classes if precision is not None else None
            picked = _walk(root, policy, walk_classes, base, ignored_modules, ignored_params)
    units = [Unit(name, module, kwargs) for module, (name, kwargs) in picked.items()]
    units.append(Unit("", root, dict(root_kwargs), frozenset(ignored_modules)))
    return units


def _walk(
    root: nn.Module,
    policy: Callable[..., bool],
    classes: tuple[type, ...] | None,
    kwargs: dict[str, Any],
    ignored_modules: set[nn.Module],
    ignored_params: set[nn.Parameter],
) -> dict[nn.Module, tuple[str, dict[str, Any]]]:
    """FSDP1's recursive wrapping of a policy callable, picking instead of wrapping."""
    numel_kwarg = "nonwrapped_numel"  # what torch >= 2.0 passes (the bridge needs 2.6)
    picked: dict[nn.Module, tuple[str, dict[str, Any]]] = {}

    def decide(module: nn.Module, recurse: bool, numel: int) -> bool:
        if policy(module=module, recurse=recurse, **{numel_kwarg: numel}):
            return True
        # With mixed precision, FSDP1 ors the policy with one that always recurses and
        # wraps the classes kept out of mixed precision.
        return classes is not None and (recurse or isinstance(module, classes))

    def visit(module: nn.Module, name: str, is_root: bool) -> int:
        numel = sum(p.numel() for p in module.parameters() if p not in ignored_params)
        if not decide(module, True, numel):
            return 0
        wrapped = 0
        for child_name, child in module.named_children():
            if child not in ignored_modules:
                wrapped += visit(child, f"{name}.{child_name}" if name else child_name, False)
        if not is_root and decide(module, False, numel - wrapped):
            unit_kwargs = dict(kwargs)
            unit_kwargs.update(getattr(module, "_wrap_overrides", None) or {})
            if classes and isinstance(module, classes):
                unit_kwargs["mixed_precision"] = None
            picked[module] = (name, unit_kwargs)
            return numel
        return wrapped

    visit(root, "", True)
    return picked


def fsdp2_unit_names(model: nn.Module) -> list[str]:
    """Qualified names of the modules that are FSDP2 units (``""`` for the root)."""
    module_class = fsdp2_module().FSDPModule
    return [name for name, module in model.named_modules() if isinstance(module, module_class)]


__all__ = [
    "Unit",
    "child_kwargs",
    "fsdp1_units",
    "fsdp2_unit_names",
    "resolve_ignored",
    "post_order",
]
