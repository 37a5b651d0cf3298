"""FSDP214: Lightning Lite's package as ``lightning.fabric`` (unsafe).

The package moves as a whole or not at all: a file that still uses a Lite name with
no Fabric counterpart (FSDP213, ``LightningLite`` first of all) keeps every Lite
import, so that Lite objects never meet Fabric ones in it.
"""

from __future__ import annotations

from codemods.rules.api import CallSiteFix, unchanged
from codemods.rules.kinds.reference import Renamed


class Fsdp214(Renamed):
    """A plain rename of the package, blocked by any name that did not move."""

    rename = CallSiteFix(unchanged, bare_references=True, partials=True, blocked_by=("FSDP213",))


BEHAVIOUR = Fsdp214
