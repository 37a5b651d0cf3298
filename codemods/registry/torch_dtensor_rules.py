"""torch's DTensor, FSDP2 and activation-checkpointing API changes (FSDP123-FSDP126, FSDP130+)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule

RULES: tuple[Rule, ...] = ()
