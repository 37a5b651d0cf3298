"""The strategy strings Lightning removed, registered again from the registry's rules.

A string-value rule on ``strategy=`` (``"fsdp_native"`` -> ``"fsdp"``, FSDP204) says
what each removed string means today: the strategy its new string is registered as.
:func:`register_removed_names` registers each removed string of one Lightning flavour
as compat's CPU-capable subclass of that strategy, with the same arguments, warning
with the rule's code when Lightning builds it. A new rule needs no code here.
"""

from __future__ import annotations

from typing import Any

import codemods.registry
from codemods.registry import ChangeKind


def removed_strategy_names(root: str) -> list[tuple[str, str, str]]:
    """``(removed string, its current string, rule code)`` for the Trainer or Fabric at ``root``.

    Args:
        root: A Lightning flavour's package (``"lightning.pytorch"``, ``"lightning_fabric"``).

    Example:
        >>> ("fsdp_native", "fsdp", "FSDP204") in removed_strategy_names("pytorch_lightning")
        True
    """
    found = []
    for rule in codemods.registry.REGISTRY:
        if rule.kind is not ChangeKind.STRING_VALUE or rule.argument != "strategy":
            continue
        if not any(old.startswith(f"{root}.") for old in rule.old):
            continue
        found += [(old, new, rule.code) for old, new in rule.values if isinstance(old, str)]
    return found


def register_removed_names(registry: Any, removed_name: type, root: str) -> list[str]:
    """Register the removed strategy strings of flavour ``root`` that ``registry`` lacks.

    Args:
        registry: That flavour's strategy registry.
        removed_name: That flavour's :class:`~compat.strategies.mixins.RemovedName` class;
            only strings whose current strategy it subclasses are registered.
        root: The flavour's package, as in :func:`removed_strategy_names`.

    Returns:
        The strings this call registered (none that were there already).
    """
    added = []
    for old, new, code in removed_strategy_names(root):
        # Lightning's registry.get(name) builds the strategy; the entry is registry[name].
        current = registry[new] if old not in registry and new in registry else None
        if current is None or not issubclass(removed_name, current["strategy"]):
            continue
        registry.register(
            old,
            removed_name,
            description=f"fsdp-compat: the removed name of {new!r} ({code})",
            compat_rule=code,
            **current["init_params"],
        )
        added.append(old)
    return added
