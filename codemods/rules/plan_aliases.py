"""Uses through a module-level alias by assignment (``FSDP = FullyShardedDataParallel``).

Both detectors follow such an alias as they follow ``import ... as`` (``Names._find_aliases``,
``Lookups._find_aliases``); what a use through it reports is decided here, once.
"""

from __future__ import annotations

from codemods.registry import Rule
from codemods.rules.index import INDEX
from codemods.rules.plan import keeps_spelling


def answered_by_alias(targets: set[str], rule: Rule, bare: str | None) -> bool:
    """Whether a use through a module-level alias ``X = old`` has its finding elsewhere.

    As a use of ``import old as X`` is answered by the import's finding, one through the
    alias is answered by the assignment's (see ``Names._find_aliases``): where the alias
    names ``rule``'s old name and the fix keeps the use's spelling.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> old = "torch.distributed.fsdp.wrap.default_auto_wrap_policy"
        >>> answered_by_alias({old}, REGISTRY["FSDP101"], "auto_wrap_policy")
        True
        >>> fsdp = "torch.distributed.fsdp.FullyShardedDataParallel"
        >>> answered_by_alias({fsdp}, REGISTRY["FSDP115"], None)
        False
    """
    for target in targets:
        match = INDEX.reference(target)
        if match is None or match[1] is not rule or not keeps_spelling(rule, match[0], bare):
            return False
    return bool(targets)


__all__ = ["answered_by_alias"]
