"""FSDP224: ``Trainer(strategy="fsdp")``, FairScale's on Lightning 1.x and torch's from 2.0.

Reported as FSDP215 reports its strings (a literal, or a name bound once to one), where
the range holds both sides of 2.0 (the registry's ``DEFAULT_CHANGE``); nothing is fixed.
A range set to the current release alone (``target-lightning = "latest"``) holds no 1.x,
so there the string means torch's FSDP and nothing is reported.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Detector, Engine
from codemods.rules.fsdp215 import Fsdp215
from codemods.settings import Settings
from codemods.syntax.lazy_libcst import cst


class Fsdp224(Fsdp215):
    """Report ``strategy="fsdp"`` on the Trainer, unless the range is the current release."""

    strings = ("fsdp",)

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        return super().call(engine, original, updated) if _older(engine.settings) else updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        if _older(detector.settings):
            super().ast_call(detector, call)


def _older(settings: Settings) -> bool:
    """Whether the range may hold Lightning 1.x: not a range set to ``latest`` alone.

    A floor nobody set (``Settings()``'s) is unknown, and reported as other changed
    defaults are (:meth:`codemods.releases.Releases.reported`); ``latest`` set by
    ``--target-lightning`` or a configuration is the current release alone.
    """
    span = settings.releases.span("lightning")
    return span.floor is not None or not span.floor_origin


BEHAVIOUR = Fsdp224
