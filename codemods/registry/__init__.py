"""The one table of FSDP API changes that lint, migrate, ``compat`` and the docs share.

Importing it needs neither torch nor Lightning.

Example:
    >>> from codemods.registry import REGISTRY
    >>> rule = REGISTRY["FSDP101"]
    >>> rule.new
    'torch.distributed.fsdp.wrap.size_based_auto_wrap_policy'
    >>> rule.fix.value
    'safe'
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

    from codemods.registry.model import (
        Capability,
        ChangeKind,
        Example,
        FixSafety,
        Framework,
        Registry,
        Rule,
    )

#: The rule modules, one per topic; the registry lists their rules in code order.
_MODULES = (
    "torch_rules",
    "torch_policy_rules",
    "torch_fsdp_rules",
    "torch_activation_checkpointing_rules",
    "torch_fsdp1_private_rules",
    "torch_state_dict_rules",
    "torch_checkpoint_rules",
    "torch_dcp_state_dict_rules",
    "torch_dtensor_rules",
    "torch_fsdp2_rules",
    "compat_fsdp_rules",
    "lightning_rules",
    "lightning_trainer_rules",
    "lightning_strategy_rules",
    "lightning_legacy_rules",
    "lightning_removed_rules",
    "lightning_call_rules",
    "fairscale_rules",
    "fairscale_optim_rules",
    "to_fsdp2_rules",
)
_MODEL = ("Capability", "ChangeKind", "Example", "FixSafety", "Framework", "Registry", "Rule")


def __getattr__(name: str) -> Any:
    # Built on first use: `python -m compat` reads the names of `codemods.registry.names`
    # and a prebuilt plan at start, and a program that imports nothing legacy never
    # pays for the rules' dataclasses (about half of compat's start-up).
    if name in _MODEL:
        value = getattr(importlib.import_module("codemods.registry.model"), name)
    elif name == "REGISTRY":
        from codemods.registry.capabilities import CAPABILITIES
        from codemods.registry.model import Registry

        modules = [importlib.import_module(f"{__name__}.{m}") for m in _MODULES]
        rules = (rule for m in modules for rule in m.RULES)
        value = Registry(
            rules=tuple(sorted(rules, key=lambda r: r.code)), capabilities=CAPABILITIES
        )
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "REGISTRY",
    "Capability",
    "ChangeKind",
    "Example",
    "FixSafety",
    "Framework",
    "Registry",
    "Rule",
]
