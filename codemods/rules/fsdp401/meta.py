"""Where a file builds modules on the meta device, for FSDP401.

FSDP1 materialises a unit that holds meta tensors when it wraps it (``to_empty`` and
``reset_parameters()`` on each of its modules, or ``param_init_fn``), even for a call
without ``param_init_fn``; FSDP2's ``fully_shard`` leaves them on meta, and code that
only shards would fail at the first forward. In a file that puts modules on meta the
rewrite writes FSDP1's materialisation before each ``fully_shard``
(:mod:`codemods.rules.fsdp401.setup`).
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.keywords import Keywords, Setup
from codemods.rules.fsdp401.lookups import line_of
from codemods.rules.fsdp401.setup import setup_notes
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst

#: Context managers that build every module on the meta device.
_EMPTY_WEIGHTS = (
    "accelerate.init_empty_weights",
    "accelerate.big_modeling.init_empty_weights",
)


def materialise(engine: Engine, keywords: Keywords) -> None:
    """Have the call's units materialised as FSDP1 did, where the file builds on meta."""
    if keywords.setup.materialise or meta_line(engine) is None:
        return
    keywords.setup.materialise = True
    keywords.notes += setup_notes(Setup(materialise=True))


META = (
    "the model may be built on the meta device (line {line}), which FSDP1 materialises "
    "when it wraps a unit and FSDP2 does not: materialise each unit just before its "
    "`fully_shard`, in FSDP1's order (children before parents, the root last), with "
    "`module.to_empty(device=device, recurse=False)` and `module.reset_parameters()` on "
    "each module of the unit that holds meta tensors, breadth-first, not entering units "
    "already sharded"
)


def meta_line(engine: Engine) -> int | None:
    """The first line that puts modules or tensors on the meta device, if any.

    ``torch.device("meta")``, a ``device="meta"`` argument, and accelerate's
    ``init_empty_weights()``.
    """
    lines = []
    for call in engine.nodes(cst.Call):
        names = engine.qualified(call.func)
        first = call.args[0] if call.args else None
        if "torch.device" in names and first is not None and literal(first.value) == "meta":
            lines.append(line_of(engine, call))
        elif names & set(_EMPTY_WEIGHTS):
            lines.append(line_of(engine, call))
        elif any(keyword(arg) == "device" and literal(arg.value) == "meta" for arg in call.args):
            lines.append(line_of(engine, call))
    return min(lines, default=None)
