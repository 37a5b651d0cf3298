"""FSDP121: DCP's ``load_state_dict(...)`` as ``load(...)``; see :mod:`codemods.rules.fsdp120`."""

from __future__ import annotations

from codemods.kinds.base import CallSiteFix
from codemods.kinds.reference import Renamed
from codemods.rules.fsdp120 import _translator


class Fsdp121(Renamed):
    """Rename to ``load`` where every call's arguments translate."""

    rename = CallSiteFix(_translator("storage_reader", "load"), partials=True)


BEHAVIOUR = Fsdp121
