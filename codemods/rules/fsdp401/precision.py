"""FSDP1's ``mixed_precision`` as FSDP2's ``mp_policy``, for FSDP401.

``MixedPrecision(...)`` becomes ``MixedPrecisionPolicy(...)`` with the fields FSDP2 has;
a name passed as the precision is kept, and its bindings are rewritten in place
(:class:`codemods.rules.fsdp401.keywords.Rebinding`) where the call is its only use.

FSDP1 casts the floating forward inputs at the root only (``cast_root_forward_inputs``,
its default), and at the other units only with ``cast_forward_inputs=True``; FSDP2
casts at every unit whose policy says ``cast_forward_inputs=True`` (its default). So
where FSDP1's units do not cast, they get a policy of their own with
``cast_forward_inputs=False`` (:attr:`Keywords.unit_values`), and the root keeps the
casting one: a unit handed an fp32 tensor by its parent (positions, a RoPE table)
receives it as FSDP1's did.
"""

from __future__ import annotations

from collections.abc import Callable

from codemods.rules.api import Engine
from codemods.rules.fsdp401.dual import needs_dual
from codemods.rules.fsdp401.helpers import helper_names
from codemods.rules.fsdp401.keywords import Keywords, Rebinding, Untranslatable
from codemods.rules.fsdp401.values import (
    PLAIN_VALUE,
    assignment_of,
    call_fields,
    constructor,
    direct_constructor,
    is_none,
    operand,
    source,
)
from codemods.syntax.cst_nodes import find_all, keyword, literal
from codemods.syntax.lazy_libcst import cst

#: The ``MixedPrecisionPolicy`` fields the rewrite carries over from FSDP1's.
DTYPES = ("param_dtype", "reduce_dtype")
#: What stays different from FSDP1 with mixed precision, named in the finding.
ACCUMULATION = (
    "gradients accumulated without sync (`no_sync`, on FSDP2 "
    "`set_requires_gradient_sync(False)`) are kept in `reduce_dtype` where FSDP1 kept them "
    "in `param_dtype`: the numbers differ slightly"
)
BUFFERS = "`buffer_dtype` dropped: FSDP2 does not cast buffers"


def mixed_precision(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    """Add the ``mp_policy`` for FSDP1's ``mixed_precision=value`` to ``out`` (none for ``None``).

    Raises:
        Untranslatable: Where the value, or a field of it, has no certain translation.
    """
    if is_none(value):
        return
    if isinstance(value, cst.Name) and needs_dual(engine):
        # The dual stack keeps FSDP1's call, which still passes the name's FSDP1 object:
        # FSDP2's branch converts that object at run time instead of rebinding it.
        _at_run_time(engine, value, out)
        return
    rebindings = _precision_bindings(engine, value, out)
    if rebindings is not None:
        # `mp = None` / `if bf16: mp = MixedPrecision(...)` bind a FSDP2 policy instead,
        # built once where FSDP1's was, and the root gets that one object.
        out.code.append(f"mp_policy={engine.module.code_for_node(value)}")
        out.imports.append("MixedPrecisionPolicy")
        out.rebindings += rebindings
        return
    if isinstance(value, cst.IfExp) and _conditional(engine, value, out):
        return
    call = constructor(engine, value, "MixedPrecision")
    if call is None:
        _at_run_time(engine, value, out)
        return
    kept, root_casts, units_cast = _policy_fields(engine, call, out)
    root = kept + ([] if root_casts else ["cast_forward_inputs=False"])
    out.code.append(f"mp_policy=MixedPrecisionPolicy({', '.join(root)})")
    out.imports.append("MixedPrecisionPolicy")
    if units_cast != root_casts:
        fields = {text.partition("=")[0]: text.partition("=")[2] for text in kept}
        out.unit_values["mp_policy"] = _unit_policy(fields)


def _conditional(engine: Engine, value: cst.IfExp, out: Keywords) -> bool:
    """``MixedPrecision(...) if flag else None`` as the same choice of FSDP2 policies.

    Each side is ``None`` (``MixedPrecisionPolicy()``: no casting) or a
    ``MixedPrecision(...)`` call, and the test calls nothing (the units' policy reads the
    root's). False where the value is another form.

    Raises:
        Untranslatable: Where the sides cast the forward inputs in different ways.
    """
    sides = (value.body, value.orelse)
    calls = [
        None if is_none(side) else direct_constructor(engine, side, "MixedPrecision")
        for side in sides
    ]
    if any(c is None and not is_none(s) for c, s in zip(calls, sides)) or not any(calls):
        return False
    if find_all(value.test, lambda n: isinstance(n, cst.Call)):
        return False
    texts, casts = [], set()
    for call in calls:
        if call is None:
            texts.append("MixedPrecisionPolicy()")
            continue
        kept, root_casts, units_cast = _policy_fields(engine, call, out)
        casts.add((root_casts, units_cast))
        root = kept + ([] if root_casts else ["cast_forward_inputs=False"])
        texts.append(f"MixedPrecisionPolicy({', '.join(root)})")
    if len(casts) > 1:
        raise Untranslatable(
            "the `mixed_precision` choices cast the forward inputs in different ways: "
            "give the root and the units a `MixedPrecisionPolicy` each"
        )
    test = operand(engine, value.test)
    out.code.append(f"mp_policy={texts[0]} if {test} else {texts[1]}")
    out.imports.append("MixedPrecisionPolicy")
    if casts == {(True, False)}:  # FSDP1's default: the root alone casts
        out.unit_values["mp_policy"] = _unit_policy(dict.fromkeys(DTYPES))
    return True


def _unit_policy(fields: dict[str, str | None]) -> Callable[[str], str]:
    """The units' policy, given the name of the root's: FSDP1's units cast no inputs.

    A field whose source is more than a name or a constant (or is None: the root's
    policy is a name bound elsewhere) is read from the root's policy, so that it is
    evaluated once, as FSDP1 did.

    Example:
        >>> print(_unit_policy({"param_dtype": "torch.bfloat16", "reduce_dtype": "f()"})("mp"))
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=mp.reduce_dtype, \
cast_forward_inputs=False)
    """

    def text(root: str) -> str:
        args = [
            f"{name}={value}"
            if value is not None and PLAIN_VALUE.fullmatch(value)
            else f"{name}={root}.{name}"
            for name, value in fields.items()
        ]
        return f"MixedPrecisionPolicy({', '.join([*args, 'cast_forward_inputs=False'])})"

    return text


def _policy_fields(engine: Engine, call: cst.Call, out: Keywords) -> tuple[list[str], bool, bool]:
    """``MixedPrecision(...)``'s fields as ``MixedPrecisionPolicy`` keywords.

    Returns:
        The dtype keywords kept, whether FSDP1's root casts the forward inputs, and
        whether its other units do.
    """
    fields = call_fields(call, (*DTYPES, "buffer_dtype"))
    kept = []
    casting = {"cast_forward_inputs": False, "cast_root_forward_inputs": True}  # FSDP1's
    for name, node in fields.items():
        if name in DTYPES:
            kept.append(f"{name}={source(engine, node)}")
        elif name == "buffer_dtype":
            if BUFFERS not in out.notes:
                out.notes.append(BUFFERS)
        elif name in casting and literal(node) in (True, False):
            casting[name] = literal(node)
        else:
            raise Untranslatable(f"`MixedPrecision({name}=...)` has no FSDP2 twin")
    units_cast = casting["cast_forward_inputs"]
    if units_cast:
        kept.append("cast_forward_inputs=True")
    dtypes = [source(engine, fields[name]) for name in DTYPES if name in fields]
    if len(set(dtypes)) == 2 and ACCUMULATION not in out.notes:  # reduced in another dtype
        out.notes.append(ACCUMULATION)
    return kept, units_cast or casting["cast_root_forward_inputs"], units_cast


def _precision_bindings(
    engine: Engine, node: cst.BaseExpression, out: Keywords
) -> list[Rebinding] | None:
    """The rewrites of a name's bindings, where the call is the name's only use.

    Each binding must be ``name = MixedPrecision(...)`` or ``name = None`` in the scope
    the call reads it from, at least one of them a ``MixedPrecision``: then each
    becomes the FSDP2 policy (``None``: ``MixedPrecisionPolicy()``, FSDP2's default, no
    casting, as FSDP1's ``None``) and the call passes the name. Where FSDP1's units cast
    no inputs, they get a policy of their own that reads its dtypes from the name's.
    None: another form.

    Raises:
        Untranslatable: Where the bindings cast the inputs in ways one name cannot carry.
    """
    scope = engine.scope(node)
    if not isinstance(node, cst.Name) or scope is None:
        return None
    assignments = list(scope[node.value])
    out_rebindings = []
    notes = Keywords()  # the fields' notes, kept only if every binding can be rewritten
    casts = set()  # per MixedPrecision binding: (root casts, units cast)
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
            kept, root_casts, units_cast = _policy_fields(engine, call, notes)
            casts.add((root_casts, units_cast))
            names = [keyword(arg) for arg in call.args]
            if None in names:
                return None  # by position: MixedPrecisionPolicy's third field differs
            dropped = tuple(i for i, name in enumerate(names) if not _kept(name, kept))
        out_rebindings.append(Rebinding(value, dropped))
    if not any(not is_none(r.value) for r in out_rebindings):
        return None
    if casts - {(True, False), (True, True)} or len(casts) > 1:
        raise Untranslatable(
            f"`{node.value}`'s bindings cast the forward inputs in different ways: "
            "give the root and the units a `MixedPrecisionPolicy` each"
        )
    out.notes += [note for note in notes.notes if note not in out.notes]
    if casts == {(True, False)}:  # FSDP1's default: the root alone casts
        out.unit_values["mp_policy"] = _unit_policy(dict.fromkeys(DTYPES))
    return out_rebindings


def _kept(name: str | None, kept: list[str]) -> bool:
    """Whether the field ``name`` is among the ``name=value`` texts ``kept``."""
    return any(text.startswith(f"{name}=") for text in kept)


RUNTIME = (
    "`mixed_precision` is read at run time: its `param_dtype` and `reduce_dtype` become a "
    "`MixedPrecisionPolicy`, the inputs cast where FSDP1 cast them (the root, and every "
    "unit with `cast_forward_inputs=True`); its `buffer_dtype` and "
    "`keep_low_precision_grads`, if set, are dropped (FSDP2 casts no buffers and keeps "
    "gradients in `reduce_dtype`)"
)


def _at_run_time(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    """A precision known only at run time, converted then by a helper of the file.

    The value is written twice (the root's policy and the units'), so it must be free of
    calls: evaluating it again then gives the same object.
    """
    if find_all(value, lambda n: isinstance(n, cst.Call)):
        raise Untranslatable("`mixed_precision` is not a `MixedPrecision(...)` call")
    helper = helper_names(engine, ["precision"])["precision"]
    text = source(engine, value)
    out.code.append(f"mp_policy={helper}({text}, True)")
    out.unit_values["mp_policy"] = lambda _root: f"{helper}({text}, False)"
    out.imports.append("MixedPrecisionPolicy")
    out.notes += [RUNTIME, ACCUMULATION]
