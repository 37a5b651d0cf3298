"""Where a file builds modules on the meta device, for FSDP401.

FSDP1 materialises a unit that holds meta tensors when it wraps it (``to_empty`` and
``reset_parameters()`` on each of its modules, or ``param_init_fn``), even for a call
without ``param_init_fn``; FSDP2's ``fully_shard`` leaves them on meta, and the plain
rewrite would fail at the first forward. A file that puts modules on meta keeps its
calls for a human (or the opt-in bridge, which materialises as FSDP1 does).
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import line_of
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst

#: Context managers that build every module on the meta device.
_EMPTY_WEIGHTS = (
    "accelerate.init_empty_weights",
    "accelerate.big_modeling.init_empty_weights",
)

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
