"""Symbol renames and removals: any use of an old name is a finding.

A rename fix renames every use of the old name in a file and moves its imports, where
the plan (:mod:`codemods.rules.plan`) is certain about every use; a removal, or a call
rewrite that has no fix, is reported only.
"""

from __future__ import annotations

from codemods.rules.api import PLAIN_RENAME, Behaviour


class Reported(Behaviour):
    """Every use of the rule's old names is reported; nothing is rewritten."""

    def references(self) -> tuple[str, ...]:
        return self.rule.old


class Renamed(Reported):
    """Every use is renamed to the new name (``SYMBOL_RENAME``)."""

    rename = PLAIN_RENAME
