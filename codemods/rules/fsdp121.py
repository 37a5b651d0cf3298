"""FSDP121: DCP's ``load_state_dict(...)`` as ``load(...)``; see :mod:`codemods.rules.fsdp120`."""

from __future__ import annotations

from codemods.rules.api import CallSiteFix
from codemods.rules.fsdp120 import _ast_certain, _translator
from codemods.rules.kinds.reference import Renamed


class Fsdp121(Renamed):
    """Rename to ``load`` where every call's arguments translate."""

    rename = CallSiteFix(
        _translator("storage_reader", "load"),
        partials=True,
        certain=_ast_certain("storage_reader", "load"),
    )


BEHAVIOUR = Fsdp121
