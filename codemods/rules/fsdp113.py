"""FSDP113: compat.fsdp.wrap's re-exports of torch's policies, imported from torch."""

from __future__ import annotations

from codemods.rules.api import CallSiteFix
from codemods.rules.fsdp101 import size_policy_arguments, size_policy_certain
from codemods.rules.kinds.reference import Renamed


class Fsdp113(Renamed):
    """Rename to torch's module; compat's threshold spelling becomes torch's (FSDP106's)."""

    rename = CallSiteFix(
        size_policy_arguments,
        bare_references=True,
        partials=True,
        supersedes=("FSDP106",),
        certain=size_policy_certain,
    )


BEHAVIOUR = Fsdp113
