"""FSDP139: ``checkpoint_wrapper(module, offload_to_cpu=False)``, the keyword dropped.

torch 2.0 removed ``offload_to_cpu``; ``False`` was its default, so the call without it
does what it did on 1.11 to 1.13 and runs on every torch. FSDP133's behaviour does the
finding and the fix (:func:`codemods.rules.fsdp133.decide`'s ``"drop"``): here it takes
the calls whose flag is a literal ``False``, which FSDP133 leaves.
"""

from __future__ import annotations

from codemods.rules.fsdp133 import Fsdp133


class Fsdp139(Fsdp133):
    """Report and drop a literal ``offload_to_cpu=False`` on torch's wrapper."""

    FALSE_FLAG = True


BEHAVIOUR = Fsdp139
