"""FSDP1's ``mixed_precision`` as FSDP2's ``mp_policy``, for FSDP401.

``MixedPrecision(...)`` becomes ``MixedPrecisionPolicy(...)`` with the fields FSDP2 has;
a name passed as the precision is kept, and its bindings are rewritten in place
(:class:`codemods.rules.fsdp401.keywords.Rebinding`) where the call is its only use.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.keywords import Keywords, Rebinding, Untranslatable
from codemods.rules.fsdp401.values import (
    assignment_of,
    call_fields,
    constructor,
    direct_constructor,
    is_none,
    source,
)
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst


def mixed_precision(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    """Add the ``mp_policy`` for FSDP1's ``mixed_precision=value`` to ``out`` (none for ``None``).

    Raises:
        Untranslatable: Where the value, or a field of it, has no certain translation.
    """
    if is_none(value):
        return
    rebindings = _precision_bindings(engine, value, out)
    if rebindings is not None:
        # `mp = None` / `if bf16: mp = MixedPrecision(...)` bind a FSDP2 policy instead,
        # built once where FSDP1's was, and every unit gets that one object.
        out.code.append(f"mp_policy={engine.module.code_for_node(value)}")
        out.imports.append("MixedPrecisionPolicy")
        out.rebindings += rebindings
        return
    call = constructor(engine, value, "MixedPrecision")
    if call is None:
        raise Untranslatable("`mixed_precision` is not a `MixedPrecision(...)` call")
    kept = _policy_fields(engine, call, out)
    out.code.append(f"mp_policy=MixedPrecisionPolicy({', '.join(kept)})")
    out.imports.append("MixedPrecisionPolicy")


def _policy_fields(engine: Engine, call: cst.Call, out: Keywords) -> list[str]:
    """``MixedPrecision(...)``'s fields as ``MixedPrecisionPolicy`` keywords."""
    fields = call_fields(call, ("param_dtype", "reduce_dtype", "buffer_dtype"))
    kept = []
    for name, node in fields.items():
        if name in ("param_dtype", "reduce_dtype"):
            kept.append(f"{name}={source(engine, node)}")
        elif name == "buffer_dtype":
            note = "`buffer_dtype` dropped: FSDP2 does not cast buffers"
            if note not in out.notes:
                out.notes.append(note)
        elif name == "cast_forward_inputs" and literal(node) is True:
            kept.append("cast_forward_inputs=True")
        elif name == "cast_forward_inputs" and literal(node) is False:
            continue  # FSDP1's root still casts; FSDP2 casts at every unit by default
        else:
            raise Untranslatable(f"`MixedPrecision({name}=...)` has no FSDP2 twin")
    return kept


def _precision_bindings(
    engine: Engine, node: cst.BaseExpression, out: Keywords
) -> list[Rebinding] | None:
    """The rewrites of a name's bindings, where the call is the name's only use.

    Each binding must be ``name = MixedPrecision(...)`` or ``name = None`` in the scope
    the call reads it from, at least one of them a ``MixedPrecision``: then each
    becomes the FSDP2 policy (``None``: ``MixedPrecisionPolicy()``, FSDP2's default, no
    casting, as FSDP1's ``None``) and the call passes the name. None: another form.
    """
    scope = engine.scope(node)
    if not isinstance(node, cst.Name) or scope is None:
        return None
    assignments = list(scope[node.value])
    out_rebindings = []
    notes = Keywords()  # the fields' notes, kept only if every binding can be rewritten
    for assignment in assignments:
        target = getattr(assignment, "node", None)
        statement = assignment_of(engine, target)
        if statement is None or assignment.scope is not scope:
            return None
        if {access.node for access in assignment.references} != {node}:
            return None  # read elsewhere too: it must stay FSDP1's object there
        value = statement.value
        call = None if is_none(value) else direct_constructor(engine, value, "MixedPrecision")
        if call is None and not is_none(value):
            return None
        dropped: tuple[int, ...] = ()
        if call is not None:
            kept = _policy_fields(engine, call, notes)
            names = [keyword(arg) for arg in call.args]
            if None in names:
                return None  # by position: MixedPrecisionPolicy's third field differs
            dropped = tuple(i for i, name in enumerate(names) if not _kept(name, kept))
        out_rebindings.append(Rebinding(value, dropped))
    if not any(not is_none(r.value) for r in out_rebindings):
        return None
    out.notes += [note for note in notes.notes if note not in out.notes]
    return out_rebindings


def _kept(name: str | None, kept: list[str]) -> bool:
    """Whether the field ``name`` is among the ``name=value`` texts ``kept``."""
    return any(text.startswith(f"{name}=") for text in kept)
