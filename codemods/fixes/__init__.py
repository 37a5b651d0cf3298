"""Call-site fixes by rule code: renames whose calls need their arguments translated.

See :mod:`codemods.fixes.base` for what a fix declares and how the engine applies it.
Every other symbol rename is a fix too, one whose calls keep their arguments.
"""

from __future__ import annotations

from codemods.fixes import compat, fairscale, lightning
from codemods.fixes.base import CallSiteFix, Site, Translation, unchanged
from codemods.registry import ChangeKind, Rule

CALL_SITE_FIXES: dict[str, CallSiteFix] = {**compat.FIXES, **lightning.FIXES, **fairscale.FIXES}

#: A plain rename: every use means the same under the new name.
PLAIN_RENAME = CallSiteFix(unchanged, bare_references=True, partials=True)


def fix_for(rule: Rule) -> CallSiteFix | None:
    """The rename fix of ``rule``, or None where its fix renames nothing."""
    if rule.code in CALL_SITE_FIXES:
        return CALL_SITE_FIXES[rule.code]
    return PLAIN_RENAME if rule.kind is ChangeKind.SYMBOL_RENAME else None


__all__ = ["CALL_SITE_FIXES", "PLAIN_RENAME", "CallSiteFix", "Site", "Translation", "fix_for"]
