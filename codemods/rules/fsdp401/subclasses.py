"""Calls of a file's own subclasses of FSDP1's class, which stay FSDP1, for FSDP401.

``class MyFSDP(FullyShardedDataParallel)`` overrides FSDP1's wrapper (its ``forward``,
its state-dict hooks); FSDP2 has no wrapper class to subclass: ``fully_shard`` shards
the module in place and gives it a new class. A call ``MyFSDP(model, ...)`` is no call
of FSDP1's class, so without this nothing would say that it stays FSDP1.
"""

from __future__ import annotations

from collections.abc import Sequence

from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import fsdp1_reference, line_of, source_order
from codemods.rules.fsdp401.values import shown
from codemods.syntax.lazy_libcst import cst

#: What the finding of such a call says after the subclass's name.
STAYS = (
    "subclasses FSDP1's `FullyShardedDataParallel`, which FSDP2 has no class for "
    "(`fully_shard` shards the module in place), so the call stays FSDP1: move what the "
    "subclass overrides onto the model (FSDP2 runs the model's own `forward`; another "
    "method that runs the model needs `register_fsdp_forward_method`), then shard it "
    "with `fully_shard`"
)


def fsdp1_subclasses(engine: Engine) -> dict[str, cst.ClassDef]:
    """The module's classes, by name, with FSDP1's class among their bases."""
    return {
        node.name.value: node
        for node in engine.nodes(cst.ClassDef)
        if any(fsdp1_reference(engine, base.value) for base in node.bases)
    }


#: The same, said at the class statement of a subclass the file never calls (its calls
#: are in other files, which import it).
UNCALLED = STAYS.replace("so the call stays FSDP1", "so its calls (in other files) stay FSDP1")


def subclass_calls(engine: Engine) -> list[tuple[cst.CSTNode, str]]:
    """Each call of such a class by its name, and why it stays FSDP1, in source order.

    A class the file does not call is said at its FSDP1 base instead.
    """
    classes = fsdp1_subclasses(engine)
    if not classes:
        return []
    found: list[tuple[cst.CSTNode, str]] = []
    called = set()
    for call in engine.nodes(cst.Call):
        name = call.func.value if isinstance(call.func, cst.Name) else None
        if name in classes:
            where = f"`{name}` (line {line_of(engine, classes[name])})"
            found.append((call, f"{where} {STAYS}"))
            called.add(name)
    for name, node in classes.items():
        if name not in called:
            base = next(b.value for b in node.bases if fsdp1_reference(engine, b.value))
            found.append((base, f"`{name}` (line {line_of(engine, node)}) {UNCALLED}"))
    return sorted(found, key=lambda item: source_order(engine, item[0]))


def subclass_blockers(engine: Engine, found: Sequence[tuple[cst.CSTNode, str]]) -> list[str]:
    """Why a file that calls its own FSDP1 subclasses (``found``) keeps its other calls FSDP1.

    A subclass the file never calls blocks nothing here: its calls are in other files.
    """
    return [
        f"`{shown(engine, call.func)}` at line {line_of(engine, call)} subclasses FSDP1 "
        "and stays FSDP1"
        for call, _ in found
        if isinstance(call, cst.Call)
    ]
