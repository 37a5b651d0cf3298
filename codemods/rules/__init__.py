"""Rules with behaviour of their own, one module each: ``codemods.rules.fsdpNNN``.

A module named after a rule code holds that rule's detection and fix and sets
``BEHAVIOUR`` (a :class:`codemods.rules.api.Behaviour` subclass); a rule without one
behaves as its kind says (:mod:`codemods.rules.kinds`). Modules not named after a code hold
what several rules share.
"""

from __future__ import annotations

import functools
import importlib


@functools.cache
def own_behaviours() -> dict[str, type]:
    """The behaviour class of every rule that has a module here, by rule code."""
    import pkgutil  # here: a one-file lint reads the index's table instead

    found = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("fsdp") and module.name[4:].isdigit():
            code = module.name.upper()
            found[code] = importlib.import_module(f"{__name__}.{module.name}").BEHAVIOUR
    return found
