"""FSDP303: FairScale's ``wrap`` as torch's, inside torch's ``enable_wrap`` (unsafe)."""

from __future__ import annotations

from codemods.kinds.base import CallSiteFix, Site, Translation
from codemods.kinds.reference import Renamed
from codemods.syntax import is_plain_positional


def wrap_arguments(site: Site) -> Translation | None:
    """``wrap(module)``: certain without overrides (they would be FairScale arguments)."""
    if site.partial or len(site.pairs) != 1 or not is_plain_positional(site.pairs[0][0]):
        return None
    return Translation(list(site.updated.args))


class Fsdp303(Renamed):
    """Rename, only together with ``enable_wrap`` (FSDP302)."""

    rename = CallSiteFix(wrap_arguments, requires=("FSDP302",))


BEHAVIOUR = Fsdp303
