"""Where FSDP401 puts a file's calls on ``compat``'s FSDP1 bridge (``--fsdp2-bridge``).

Asked by the survey (:mod:`codemods.rules.fsdp401.decide`): whether the bridge is on
here, which names hold a bridged model, and moving a file's plain conversions onto it.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.kept import kept_reason
from codemods.rules.fsdp401.outcome import Bridged, Conversion
from codemods.syntax.cst_nodes import dotted, keyword
from codemods.syntax.lazy_libcst import cst


def onto_the_bridge(
    conversions: dict[int, Conversion | Bridged | str], kept: list[tuple[str, str]]
) -> None:
    """Put every plainly convertible call of the file on the bridge, which keeps ``kept``.

    FSDP1 code reaches the model through ``self.model``, parameters and class calls the
    rewrite cannot follow; the bridge's model answers them as FSDP1 did.
    """
    why = kept_reason(kept)
    for key, conversion in conversions.items():
        if isinstance(conversion, Conversion):
            conversions[key] = Bridged(conversion.call, why)


def bridges(engine: Engine) -> bool:
    """Whether a call with no certain FSDP2 translation goes to ``compat``'s bridge.

    The setting asks for it (``--fsdp2-bridge``; off by default: such a call stays
    FSDP1 for a human, with its recipes) and the target torch has FSDP2's public home,
    which the bridge runs on (2.6).
    """
    return engine.settings.fsdp2_bridge and engine.target_at_least("2.6")


def bridged_names(engine: Engine, call: cst.Call) -> list[str]:
    """The names that hold the bridged model after ``call``: its result's, its module's.

    The bridge shards the module it is given in place and returns it, as ``fully_shard``
    does, so a dotted first argument is the sharded model afterwards too.
    """
    code = engine.module.code_for_node
    names = []
    parent = engine.parent(call)
    if isinstance(parent, cst.Assign) and parent.value is call:
        names += [code(t.target) for t in parent.targets if dotted(t.target)]
    elif isinstance(parent, cst.AnnAssign) and parent.value is call and dotted(parent.target):
        names.append(code(parent.target))
    first = call.args[0] if call.args else None
    if first is not None and keyword(first) in (None, "module") and not first.star:
        if dotted(first.value):
            names.append(code(first.value))
    return names
