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

from codemods.registry import (
    compat_fsdp_rules,
    fairscale_optim_rules,
    fairscale_rules,
    lightning_call_rules,
    lightning_legacy_rules,
    lightning_removed_rules,
    lightning_rules,
    lightning_strategy_rules,
    lightning_trainer_rules,
    to_fsdp2_rules,
    torch_checkpoint_rules,
    torch_dcp_state_dict_rules,
    torch_dtensor_rules,
    torch_fsdp1_private_rules,
    torch_fsdp2_rules,
    torch_fsdp_rules,
    torch_policy_rules,
    torch_rules,
    torch_state_dict_rules,
)
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

#: The rule modules, one per topic; the registry lists their rules in code order.
_MODULES = (
    torch_rules,
    torch_policy_rules,
    torch_fsdp_rules,
    torch_fsdp1_private_rules,
    torch_state_dict_rules,
    torch_checkpoint_rules,
    torch_dcp_state_dict_rules,
    torch_dtensor_rules,
    torch_fsdp2_rules,
    compat_fsdp_rules,
    lightning_rules,
    lightning_trainer_rules,
    lightning_strategy_rules,
    lightning_legacy_rules,
    lightning_removed_rules,
    lightning_call_rules,
    fairscale_rules,
    fairscale_optim_rules,
    to_fsdp2_rules,
)

REGISTRY = Registry(
    rules=tuple(sorted((rule for m in _MODULES for rule in m.RULES), key=lambda r: r.code)),
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
