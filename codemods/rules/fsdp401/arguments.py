"""FSDP1 ``FullyShardedDataParallel`` keywords as ``fully_shard`` keywords, for FSDP401.

Each keyword of an FSDP1 wrapper call is translated with certainty, dropped (where
FSDP2 does the same thing unasked, or the argument has no FSDP2 meaning; a note says
where dropping it changes something), or the whole call is left for a human with a
recipe (:class:`Untranslatable`). The table is the one ``compat.fsdp2`` applies at run
time; :data:`MAPPING` is what the guide shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codemods.registry.names import TORCH_FSDP
from codemods.rules.api import Engine
from codemods.syntax.cst_nodes import keyword, literal
from codemods.syntax.lazy_libcst import cst

#: FSDP1 argument -> what the rewrite makes of it (the guide's table).
MAPPING = (
    ("sharding_strategy=ShardingStrategy.FULL_SHARD", "`reshard_after_forward=True`"),
    ("sharding_strategy=ShardingStrategy.SHARD_GRAD_OP", "`reshard_after_forward=False`"),
    (
        "sharding_strategy=FULL_SHARD if flag else SHARD_GRAD_OP",
        "`reshard_after_forward=bool(flag)`",
    ),
    (
        "sharding_strategy=strategy, strategy = ShardingStrategy.X (bound once)",
        "as for the member itself",
    ),
    (
        'sharding_strategy={"fsdp": FULL_SHARD, "sdp": SHARD_GRAD_OP}[flag]',
        '`reshard_after_forward={"fsdp": True, "sdp": False}[flag]`',
    ),
    (
        "mixed_precision=MixedPrecision(param_dtype=..., reduce_dtype=...)",
        "`mp_policy=MixedPrecisionPolicy(param_dtype=..., reduce_dtype=...)`; "
        "`buffer_dtype` dropped with a note",
    ),
    (
        "mixed_precision=mp, mp = None / mp = MixedPrecision(...) (in branches, read only there)",
        "each binding becomes `MixedPrecisionPolicy(...)` (`None`: `MixedPrecisionPolicy()`, "
        "no casting), and the call passes `mp_policy=mp`",
    ),
    ("cpu_offload=CPUOffload(offload_params=True)", "`offload_policy=CPUOffloadPolicy()`"),
    (
        "cpu_offload=CPUOffload(offload_params=flag)",
        "`offload_policy=CPUOffloadPolicy() if flag else OffloadPolicy()` (any flag expression)",
    ),
    (
        "cpu_offload=CPUOffload(offload_params=True) if flag else None",
        "`offload_policy=CPUOffloadPolicy() if flag else OffloadPolicy()` (either side may be "
        "any of these forms)",
    ),
    ("cpu_offload=CPUOffload(), cpu_offload=None", "dropped (no offloading)"),
    ("use_orig_params, limit_all_gathers", "dropped (FSDP2 always does so)"),
    ("device_id", "dropped, with a note (FSDP2 uses the current device)"),
    (
        "backward_prefetch, forward_prefetch",
        "dropped, with a note where not the default (`set_modules_to_*_prefetch`)",
    ),
    ("sync_module_states=False, process_group=None", "dropped (the defaults)"),
)

#: FSDP1 arguments the rewrite leaves to a human, and the recipe it gives.
RECIPES = {
    "sync_module_states": (
        "FSDP2 does not broadcast rank 0's weights: load them after `fully_shard` with "
        "`set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, "
        "broadcast_from_rank0=True))`, or initialise every rank from the same seed"
    ),
    "param_init_fn": (
        "build the model under `torch.device('meta')`, call `fully_shard`, then "
        "`model.to_empty(device=...)` and initialise each module (`reset_parameters()`)"
    ),
    "process_group": (
        "pass `mesh=` to `fully_shard` (`DeviceMesh.from_group(group, device_type)` for a "
        "process group)"
    ),
    "device_mesh": "pass the mesh as `fully_shard(..., mesh=...)`",
    "HYBRID_SHARD": (
        "shard on a 2-D mesh: `mesh = init_device_mesh(device_type, (nodes, "
        "gpus_per_node), mesh_dim_names=('replicate', 'shard'))`, then "
        "`fully_shard(..., mesh=mesh)`"
    ),
    "NO_SHARD": "FSDP2 has no NO_SHARD: use `DistributedDataParallel` (or `replicate`)",
    # Not rewritten: FSDP2 leaves ignored parameters plain tensors beside the DTensors,
    # and an optimizer over both fails in its foreach step (the default on CUDA), where
    # FSDP1's flat parameters and ignored ones are all plain tensors.
    "ignored_modules": (
        "FSDP2 (torch >= 2.7) takes `ignored_params={p for m in ignored for p in "
        "m.parameters()}` and shards no module inside them; those stay plain tensors beside "
        "the DTensors, so give them an optimizer (or parameter group) of their own, or "
        "build the optimizer with `foreach=False`: a foreach step (the default on CUDA) "
        "fails on the mix"
    ),
}

#: Keywords with no FSDP2 meaning that are dropped without a note.
_SILENT = ("use_orig_params", "limit_all_gathers")

_PREFIXES = (f"{TORCH_FSDP}.", "torch.distributed.fsdp.api.")


class Untranslatable(Exception):
    """The call has arguments without a certain FSDP2 translation: the message says why.

    Attributes:
        reasons: Each thing that stands in the way (the message joins them).
    """

    def __init__(self, *reasons: str) -> None:
        super().__init__(joined(list(reasons)))
        self.reasons = list(reasons)


@dataclass(frozen=True)
class Rebinding:
    """An earlier binding of a name the call passes, rewritten in place with the call.

    Attributes:
        value: The value bound (``MixedPrecision(...)`` or ``None``), an original node.
        dropped: Of a ``MixedPrecision(...)`` call, the arguments FSDP2 has no twin for
            (by position); the call keeps its layout and comments otherwise.
    """

    value: cst.BaseExpression
    dropped: tuple[int, ...] = ()

    def replacement(self, updated: cst.BaseExpression) -> cst.BaseExpression:
        """What takes the place of the value (given as the visit updated it).

        Example:
            >>> call = cst.parse_expression("MixedPrecision(param_dtype=a, buffer_dtype=b)")
            >>> new = Rebinding(call, (1,)).replacement(call)
            >>> cst.Module([]).code_for_node(new)
            'MixedPrecisionPolicy(param_dtype=a)'
        """
        if not isinstance(updated, cst.Call):
            return cst.parse_expression("MixedPrecisionPolicy()")  # FSDP1's None
        args = [arg for index, arg in enumerate(updated.args) if index not in self.dropped]
        if args and len(args) < len(updated.args):
            # the last argument kept ends the way the call's last one did
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        return updated.with_changes(func=cst.Name("MixedPrecisionPolicy"), args=args)


@dataclass
class Keywords:
    """A wrapper call's FSDP2 keywords, the imports they need and the notes to report.

    Attributes:
        code: ``name=value`` source texts, in order.
        imports: FSDP2 names the values use (imported from the FSDP2 module).
        notes: What was dropped and changes something.
        rebindings: Bindings of the names passed that are rewritten too.
    """

    code: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rebindings: list[Rebinding] = field(default_factory=list)


def bound_once(engine: Engine, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value of a name bound exactly once, by ``name = value`` (or ``name: T = value``)."""
    if not isinstance(node, cst.Name):
        return None
    scope = engine.scope(node)
    if scope is None:
        return None
    assignments = list(scope[node.value])
    if len(assignments) != 1:
        return None
    statement = _assignment_of(engine, getattr(assignments[0], "node", None))
    return None if statement is None else statement.value


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _member(engine: Engine, node: cst.BaseExpression, enum: str) -> str | None:
    """``X`` for a reference to torch's ``enum.X`` (``ShardingStrategy.FULL_SHARD``)."""
    for name in engine.qualified(node):
        head, _, member = name.rpartition(".")
        owner, _, cls = head.rpartition(".")
        if cls == enum and any(f"{owner}.".startswith(p) for p in _PREFIXES):
            return member
    return None


def _constructor(engine: Engine, node: cst.BaseExpression, cls: str) -> cst.Call | None:
    """``node`` as a call of torch's FSDP1 class ``cls`` (directly or through a name bound once)."""
    return _direct_constructor(engine, bound_once(engine, node) or node, cls)


def _direct_constructor(engine: Engine, node: cst.BaseExpression, cls: str) -> cst.Call | None:
    """``node`` as a call of torch's FSDP1 class ``cls`` itself."""
    if not isinstance(node, cst.Call):
        return None
    names = engine.qualified(node.func)
    wanted = {f"{TORCH_FSDP}.{cls}", f"torch.distributed.fsdp.api.{cls}"}
    wanted.add(f"{TORCH_FSDP}.fully_sharded_data_parallel.{cls}")
    return node if names & wanted else None


def _fields(call: cst.Call, order: tuple[str, ...]) -> dict[str, cst.BaseExpression]:
    """A constructor call's arguments by field name (positional ones by ``order``)."""
    out = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            raise Untranslatable(f"`{order[0]}`... passed with `*`/`**`")
        name = keyword(arg) or (order[index] if index < len(order) else None)
        if name is None:
            raise Untranslatable("too many positional arguments")
        out[name] = arg.value
    return out


def _source(engine: Engine, node: cst.BaseExpression) -> str:
    """Source of a value, as the keyword's value is written.

    It is evaluated once, as FSDP1 evaluates its arguments: FSDP401 binds a value that
    is more than a name or a constant to a name before its loop.
    """
    return engine.module.code_for_node(node)


def _operand(engine: Engine, node: cst.BaseExpression) -> str:
    """Source of a value used inside a new expression, in parentheses unless atomic.

    Example: the flag ``a or b`` stays right in ``X if (a or b) else Y``.
    """
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer)
    text = _source(engine, node)
    return text if isinstance(node, atoms) or node.lpar else f"({text})"


#: The most of a node's source a message quotes.
SHOWN_LENGTH = 60


def shown(engine: Engine, node: cst.CSTNode) -> str:
    """``node``'s source as a message quotes it: on one line, cut at :data:`SHOWN_LENGTH`.

    A finding is one line of output (and one record of a report); real values span lines
    (a dict of dtypes looked up by a flag).
    """
    text = " ".join(engine.module.code_for_node(node).split())
    return text if len(text) <= SHOWN_LENGTH else f"{text[: SHOWN_LENGTH - 3]}..."


def _mixed_precision(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    if _is_none(value):
        return
    rebindings = _precision_bindings(engine, value, out)
    if rebindings is not None:
        # `mp = None` / `if bf16: mp = MixedPrecision(...)` bind a FSDP2 policy instead,
        # built once where FSDP1's was, and every unit gets that one object.
        out.code.append(f"mp_policy={engine.module.code_for_node(value)}")
        out.imports.append("MixedPrecisionPolicy")
        out.rebindings += rebindings
        return
    call = _constructor(engine, value, "MixedPrecision")
    if call is None:
        raise Untranslatable("`mixed_precision` is not a `MixedPrecision(...)` call")
    kept = _policy_fields(engine, call, out)
    out.code.append(f"mp_policy=MixedPrecisionPolicy({', '.join(kept)})")
    out.imports.append("MixedPrecisionPolicy")


def _policy_fields(engine: Engine, call: cst.Call, out: Keywords) -> list[str]:
    """``MixedPrecision(...)``'s fields as ``MixedPrecisionPolicy`` keywords."""
    fields = _fields(call, ("param_dtype", "reduce_dtype", "buffer_dtype"))
    kept = []
    for name, node in fields.items():
        if name in ("param_dtype", "reduce_dtype"):
            kept.append(f"{name}={_source(engine, node)}")
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
        statement = _assignment_of(engine, target)
        if statement is None or assignment.scope is not scope:
            return None
        if {access.node for access in assignment.references} != {node}:
            return None  # read elsewhere too: it must stay FSDP1's object there
        value = statement.value
        call = None if _is_none(value) else _direct_constructor(engine, value, "MixedPrecision")
        if call is None and not _is_none(value):
            return None
        dropped: tuple[int, ...] = ()
        if call is not None:
            kept = _policy_fields(engine, call, notes)
            names = [keyword(arg) for arg in call.args]
            if None in names:
                return None  # by position: MixedPrecisionPolicy's third field differs
            dropped = tuple(i for i, name in enumerate(names) if not _kept(name, kept))
        out_rebindings.append(Rebinding(value, dropped))
    if not any(not _is_none(r.value) for r in out_rebindings):
        return None
    out.notes += [note for note in notes.notes if note not in out.notes]
    return out_rebindings


def _kept(name: str | None, kept: list[str]) -> bool:
    """Whether the field ``name`` is among the ``name=value`` texts ``kept``."""
    return any(text.startswith(f"{name}=") for text in kept)


def _assignment_of(engine: Engine, target: Any) -> cst.Assign | cst.AnnAssign | None:
    """The ``name = value`` (or ``name: T = value``) statement binding the ``Name`` ``target``."""
    parent = engine.parent(target) if isinstance(target, cst.Name) else None
    if isinstance(parent, cst.AnnAssign) and parent.target is target and parent.value is not None:
        return parent
    statement = engine.parent(parent) if isinstance(parent, cst.AssignTarget) else None
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return statement
    return None


def _cpu_offload(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    policy = _offload(engine, value)
    if policy is None:
        return  # no offloading: FSDP2's default
    out.code.append(f"offload_policy={policy}")
    out.imports += [name for name in ("CPUOffloadPolicy", "OffloadPolicy") if f"{name}()" in policy]


def _offload(engine: Engine, value: cst.BaseExpression) -> str | None:
    """The FSDP2 offload policy for an FSDP1 ``cpu_offload`` value; None: no offloading.

    ``None``, ``CPUOffload(...)`` (by a literal or a flag read at run time) and a
    conditional choosing between them (``CPUOffload(offload_params=True) if flag else
    None``, as real scripts write it).

    Raises:
        Untranslatable: For any other value.
    """
    if _is_none(value):
        return None
    if isinstance(value, cst.IfExp):
        body, orelse = _offload(engine, value.body), _offload(engine, value.orelse)
        if body is None and orelse is None:
            return None
        test = _operand(engine, value.test)
        return f"{_branch(body)} if {test} else {_branch(orelse)}"
    call = _constructor(engine, value, "CPUOffload")
    if call is None:
        raise Untranslatable("`cpu_offload` is not a `CPUOffload(...)` call")
    fields = _fields(call, ("offload_params",))
    if set(fields) - {"offload_params"}:
        raise Untranslatable("`CPUOffload(...)` with a value the rewrite cannot read")
    node = fields.get("offload_params")
    offload = False if node is None else literal(node)
    if offload is True:
        return "CPUOffloadPolicy()"
    if offload is False:
        return None
    # A flag read at run time (FSDP1 offloads where it is true); `OffloadPolicy()` is
    # FSDP2's own default, no offloading.
    return f"CPUOffloadPolicy() if {_operand(engine, node)} else OffloadPolicy()"


def _branch(policy: str | None) -> str:
    """One side of a conditional policy: the default where None, a conditional in parentheses."""
    if policy is None:
        return "OffloadPolicy()"
    return f"({policy})" if " if " in policy else policy


def _reshards(engine: Engine, value: cst.BaseExpression) -> bool:
    """Whether a ``ShardingStrategy`` member reshards after forward (FULL_SHARD)."""
    member = _member(engine, value, "ShardingStrategy")
    if member in ("FULL_SHARD", "SHARD_GRAD_OP"):
        return member == "FULL_SHARD"
    if member in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"):
        raise Untranslatable(f"`{member}`: {RECIPES['HYBRID_SHARD']}")
    if member == "NO_SHARD":
        raise Untranslatable(RECIPES["NO_SHARD"])
    raise Untranslatable("`sharding_strategy` is not a `ShardingStrategy` member")


def _sharding(engine: Engine, value: cst.BaseExpression, out: Keywords) -> None:
    bound = bound_once(engine, value)
    if bound is not None and _member(engine, bound, "ShardingStrategy") is not None:
        value = bound  # `strategy = ShardingStrategy.X`, once: a constant
    looked_up = _strategy_table(engine, value)
    if looked_up is not None:
        out.code.append(f"reshard_after_forward={looked_up}")
        return
    if isinstance(value, cst.IfExp):
        # `FULL_SHARD if flag else SHARD_GRAD_OP`: the flag says whether to reshard.
        body, orelse = _reshards(engine, value.body), _reshards(engine, value.orelse)
        test = _source(engine, value.test)
        if body == orelse:
            out.code.append(f"reshard_after_forward={body}")
        else:
            out.code.append(f"reshard_after_forward={'' if body else 'not '}bool({test})")
        return
    out.code.append(f"reshard_after_forward={_reshards(engine, value)}")


def _strategy_table(engine: Engine, value: cst.BaseExpression) -> str | None:
    """``{"fsdp": FULL_SHARD, "sdp": SHARD_GRAD_OP}[key]`` as ``{"fsdp": True, ...}[key]``.

    Real scripts pick the strategy from a table by a command-line flag; each entry
    becomes whether it reshards, and a key missing from the table fails the same way.
    None: not a table lookup.

    Raises:
        Untranslatable: Where an entry has no FSDP2 twin (``HYBRID_SHARD``, ``NO_SHARD``).
    """
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Dict)):
        return None
    entries = value.value.elements
    if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
        return None
    if not entries or not all(isinstance(entry, cst.DictElement) for entry in entries):
        return None
    code = engine.module.code_for_node
    table = ", ".join(f"{code(e.key)}: {_reshards(engine, e.value)}" for e in entries)
    return f"{{{table}}}[{code(value.slice[0].slice.value)}]"


def _prefetch(engine: Engine, name: str, value: cst.BaseExpression, out: Keywords) -> None:
    if name == "forward_prefetch":
        if literal(value) is not False:
            out.notes.append(
                "`forward_prefetch` dropped: prefetch explicitly with "
                "`set_modules_to_forward_prefetch`"
            )
        return
    if _member(engine, value, "BackwardPrefetch") != "BACKWARD_PRE":
        out.notes.append(
            "`backward_prefetch` dropped: FSDP2 prefetches one unit ahead in backward "
            "(`set_modules_to_backward_prefetch` sets it explicitly)"
        )


def translate(engine: Engine, args: list[cst.Arg]) -> Keywords:
    """The ``fully_shard`` keywords for an FSDP1 call's keyword arguments (not the policy).

    Raises:
        Untranslatable: For the arguments without a certain translation, saying why and
            what to write instead for each (all of them: a user porting the call by
            hand gets the whole list at once).
    """
    out = Keywords()
    reasons: list[str] = []
    for arg in args:
        try:
            _translate_one(engine, arg, out)
        except Untranslatable as why:
            reasons += why.reasons
    if reasons:
        raise Untranslatable(*reasons)
    return out


def joined(reasons: list[str]) -> str:
    """Several reasons as one message, numbered where there are more than one.

    Example:
        >>> joined(["a"]), joined(["a", "b"])
        ('a', '(1) a; (2) b')
    """
    if len(reasons) == 1:
        return reasons[0]
    return "; ".join(f"({number}) {why}" for number, why in enumerate(reasons, 1))


def _translate_one(engine: Engine, arg: cst.Arg, out: Keywords) -> None:
    """Add one keyword argument's translation to ``out`` (see :func:`translate`)."""
    name = keyword(arg)
    value = arg.value
    if name == "sharding_strategy":
        _sharding(engine, value, out)
    elif name == "mixed_precision":
        _mixed_precision(engine, value, out)
    elif name == "cpu_offload":
        _cpu_offload(engine, value, out)
    elif name in ("backward_prefetch", "forward_prefetch"):
        _prefetch(engine, name, value, out)
    elif name == "device_id":
        out.notes.append(
            "`device_id` dropped: FSDP2 moves the model to the current device "
            "(call `torch.cuda.set_device(local_rank)` first)"
        )
    elif name in _SILENT or (name == "ignored_modules" and _is_none(value)):
        return
    elif name in ("sync_module_states", "process_group") and (
        literal(value) is False or _is_none(value)
    ):
        return
    elif name in RECIPES:
        raise Untranslatable(f"`{name}`: {RECIPES[name]}")
    else:
        raise Untranslatable(f"`{name}=` has no certain FSDP2 translation")


def mapping_table() -> str:
    """The guide's table: each FSDP1 argument and what the rewrite makes of it (Markdown).

    Example:
        >>> mapping_table().splitlines()[0]
        '| FSDP1 | FSDP2 (what FSDP401 writes) |'
    """
    rows = ["| FSDP1 | FSDP2 (what FSDP401 writes) |", "| --- | --- |"]
    rows += [f"| `{old}` | {new} |" for old, new in MAPPING]
    rows += [f"| `{name}` | left for a human: {recipe} |" for name, recipe in RECIPES.items()]
    return "\n".join(rows) + "\n"
