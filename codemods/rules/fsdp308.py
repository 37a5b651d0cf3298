"""FSDP308: FairScale's ``ShardedDataParallel``, reported at every use (``--explain FSDP308``).

A use that only tests for the class (``isinstance(model, ShardedDataParallel)``) says
what to test for instead (:mod:`codemods.rules.tested_uses`).
"""

from __future__ import annotations

from codemods.rules.kinds.reference import Reported
from codemods.rules.tested_uses import COMPARISON, ISINSTANCE

_TESTED = "a test of the class: once the model is torch's, test for `DistributedDataParallel`"


class Fsdp308(Reported):
    """Every use of ``ShardedDataParallel``; a test of the class says what to test for instead."""

    tested = {ISINSTANCE: _TESTED, COMPARISON: _TESTED}


BEHAVIOUR = Fsdp308
