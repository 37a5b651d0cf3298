"""FSDP307: FairScale's ``OSS``, reported at every use (its recipe: ``--explain FSDP307``).

A use that only tests for the class (``isinstance(optimizer, OSS)``) says what to test
for instead (:mod:`codemods.rules.tested_uses`).
"""

from __future__ import annotations

from codemods.rules.kinds.reference import Reported
from codemods.rules.tested_uses import COMPARISON, ISINSTANCE

_TESTED = "a test of the class: once the optimizer is torch's, test for `ZeroRedundancyOptimizer`"


class Fsdp307(Reported):
    """Every use of ``OSS``; a test of the class says what to test for instead."""

    tested = {ISINSTANCE: _TESTED, COMPARISON: _TESTED}


BEHAVIOUR = Fsdp307
