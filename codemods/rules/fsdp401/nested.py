"""Manual nested wrapping (each layer, then the root) as FSDP2 code, for FSDP401.

Scripts and frameworks (fairseq2's applier, many training scripts) wrap FSDP1 units by
hand: ``model.layers[i] = FSDP(layer, ...)`` for each layer, then ``FSDP(model, ...)``.
Each call becomes ``fully_shard`` in place, which FSDP2 takes in the same order
(children first, the root last). What changes is the casting of inputs: FSDP1 casts
the floating forward inputs at the root only, and a unit wrapped by hand is no root
once the model around it is wrapped; so such a call gets the units' policy
(``cast_forward_inputs=False``), as the units of a policy do.
"""

from __future__ import annotations

import ast

from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import line_of
from codemods.rules.fsdp401.outcome import Conversion
from codemods.syntax.lazy_libcst import cst

INNER = (
    "a unit wrapped by hand inside `{root}` (wrapped at line {line}): FSDP1 casts its "
    "inputs only where `cast_forward_inputs=True`, so its policy casts none"
)


def _holders(node: cst.BaseExpression) -> set[str] | None:
    """What ``node`` hangs on, each as :func:`_same` spells it.

    ``model.layers`` and ``model`` for ``model.layers[i]``; None where the chain does not
    start at a name (a call's result).
    """
    found = set()
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
        found.add(_same(cst.Module([]).code_for_node(node)))
    return found if isinstance(node, cst.Name) else None


def _same(code: str) -> str:
    """One spelling of an expression's code, whatever its spaces and brackets."""
    return ast.dump(ast.parse(code.strip(), mode="eval"))


def wrapping_root(engine: Engine, conversion: Conversion, conversions: list) -> Conversion | None:
    """The later conversion in the same scope that wraps the module this call's unit is in.

    Only for a call whose result is stored into that module (``model.layers[i] = FSDP(...)``,
    ``self.model.encoder = FSDP(...)``), the root's call coming after it: its model is
    an expression the target hangs on (``model``, ``self.model``). Two models kept on
    one object (``self.actor``, then ``self.critic``) are two roots.
    """
    statement = conversion.line.body[0]
    targets = getattr(statement, "targets", ())
    if len(targets) != 1 or not isinstance(targets[0].target, (cst.Subscript, cst.Attribute)):
        return None
    holders = _holders(targets[0].target)
    if not holders:
        return None
    scope, line = engine.scope(conversion.call), line_of(engine, conversion.call)
    for other in conversions:
        if (
            isinstance(other, Conversion)
            and other is not conversion
            and _same(other.root) in holders
            and engine.scope(other.call) is scope
            and line_of(engine, other.call) > line
        ):
            return other
    return None


def as_unit(conversion: Conversion, keywords: list[str]) -> list[str]:
    """The call's keywords with the units' values (FSDP1's units cast no inputs)."""
    out = []
    for text in keywords:
        name, _, value = text.partition("=")
        make = conversion.keywords.unit_values.get(name)
        out.append(f"{name}={make(value)}" if make else text)
    return out
