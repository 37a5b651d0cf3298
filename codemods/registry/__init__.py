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

from codemods.registry import fairscale_rules, lightning_rules, torch_fsdp_rules, torch_rules
from codemods.registry.capabilities import CAPABILITIES
from codemods.registry.model import (
    Capability,
    ChangeKind,
    Example,
    FixSafety,
    Framework,
    Registry,
    Rule,
)

REGISTRY = Registry(
    rules=torch_rules.RULES
    + torch_fsdp_rules.RULES
    + lightning_rules.RULES
    + fairscale_rules.RULES,
    capabilities=CAPABILITIES,
)

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
