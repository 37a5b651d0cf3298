"""FSDP1 ``FullyShardedDataParallel`` keywords as ``fully_shard`` keywords, for FSDP401.

Each keyword of an FSDP1 wrapper call is translated with certainty, dropped (where
FSDP2 does the same thing unasked, or the argument has no FSDP2 meaning; a note says
where dropping it changes something), or the whole call is left for a human with a
recipe (:class:`Untranslatable`). The table is the one ``compat.fsdp2`` applies at run
time; :data:`MAPPING` is what the guide shows.

The translation of each kind of argument has a module of its own (``sharding``,
``precision``, ``offload``), and :mod:`codemods.rules.fsdp401.recipes` holds the recipes.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401 import device
from codemods.rules.fsdp401.device import is_current, sets_device
from codemods.rules.fsdp401.keywords import Keywords, Untranslatable
from codemods.rules.fsdp401.offload import cpu_offload
from codemods.rules.fsdp401.precision import mixed_precision
from codemods.rules.fsdp401.recipes import RECIPES
from codemods.rules.fsdp401.setup import DEVICE_MESH, SETUP, setup_notes, take_setup
from codemods.rules.fsdp401.sharding import prefetch, runtime_strategy, sharding
from codemods.rules.fsdp401.values import is_none, source
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
        "the root: `mp_policy=MixedPrecisionPolicy(param_dtype=..., reduce_dtype=...)`; the "
        "units below it: the same with `cast_forward_inputs=False` (FSDP1 casts the inputs at "
        "the root only); `buffer_dtype` dropped with a note, and a note that gradients "
        "accumulated without sync are kept in `reduce_dtype`",
    ),
    (
        "MixedPrecision(..., cast_forward_inputs=True)",
        "one policy with `cast_forward_inputs=True` for every unit (FSDP1's units cast too)",
    ),
    (
        "MixedPrecision(..., cast_root_forward_inputs=False)",
        "the root's policy with `cast_forward_inputs=False` as well",
    ),
    (
        "mixed_precision=mp, mp = None / mp = MixedPrecision(...) (in branches, read only there)",
        "each binding becomes `MixedPrecisionPolicy(...)` (`None`: `MixedPrecisionPolicy()`, "
        "no casting), the root gets `mp_policy=mp`, the units "
        "`MixedPrecisionPolicy(param_dtype=mp.param_dtype, reduce_dtype=mp.reduce_dtype, "
        "cast_forward_inputs=False)`",
    ),
    (
        "mixed_precision=mp where FSDP1 stays beside FSDP2 (the dual stack)",
        "as a precision read at run time (below): FSDP1's branch still passes `mp`",
    ),
    (
        "mixed_precision=MixedPrecision(...) if flag else None",
        "`mp_policy=MixedPrecisionPolicy(...) if flag else MixedPrecisionPolicy()` (a flag "
        "that calls nothing); the units' policy reads the root's dtypes and casts no inputs",
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
    (
        "cpu_offload=offload (None or a CPUOffload, bound at run time)",
        '`offload_policy=CPUOffloadPolicy() if getattr(offload, "offload_params", False) '
        "else OffloadPolicy()`",
    ),
    (
        "use_orig_params, limit_all_gathers",
        "dropped (FSDP2 always does so); without `use_orig_params=True` a note that the "
        "optimizer now gets the original parameters, and a note where `limit_all_gathers` "
        "may be off",
    ),
    (
        "device_id",
        "set as the current device (`set_device_like_fsdp1(device_id)`) before `fully_shard` "
        "where the file sets none, with a note; else dropped, with a note (FSDP2 uses the "
        "current device)",
    ),
    (
        "backward_prefetch, forward_prefetch",
        "dropped, with a note where not the default (`set_modules_to_*_prefetch`)",
    ),
    ("sync_module_states=False, process_group=None", "dropped (the defaults)"),
    (
        "sharding_strategy=ShardingStrategy.NO_SHARD",
        "`reshard_after_forward=False, mesh=mesh_like_fsdp1(ShardingStrategy.NO_SHARD, model, "
        "...)`: a function written in the file builds a `(ranks, 1)` mesh (`replicate`, "
        "`shard`) over the call's group or mesh (every rank without one): a whole replica "
        "on each rank, as FSDP1's",
    ),
    (
        "sharding_strategy=ShardingStrategy.HYBRID_SHARD (or _HYBRID_SHARD_ZERO2)",
        "`reshard_after_forward=True` (`False`), `mesh=mesh_like_fsdp1(...)`: the "
        "`device_mesh` passed (given dimension names where it has none), or FSDP1's "
        "groups of `device_count()` consecutive ranks, `init_device_mesh(type, (world // "
        "n, n), mesh_dim_names=('replicate', 'shard'))`, or the grid of ranks a "
        "`process_group` pair (intra-node, inter-node) forms",
    ),
    (
        "sharding_strategy=config.strategy (known at run time)",
        "`strategy = config.strategy`, then `reshard_after_forward=reshards_like_fsdp1("
        "strategy), mesh=mesh_like_fsdp1(strategy, model, ...)`: each strategy's own "
        "(where the file binds it to `FULL_SHARD` or `SHARD_GRAD_OP` only, a table of "
        "the two)",
    ),
    (
        "mixed_precision=config.precision (known at run time)",
        "the root: `mp_policy=precision_like_fsdp1(config.precision, True)`, the units: "
        "`precision_like_fsdp1(config.precision, False)` (a function written in the file: "
        "FSDP1's dtypes and casting; `buffer_dtype` and `keep_low_precision_grads` dropped)",
    ),
    (
        "auto_wrap_policy=policy (a size, a lambda, classes read from a config)",
        "`shard_like_fsdp1(model, policy, model, prepare, **unit_keywords)`: a function "
        "written in the file that asks the policy as FSDP1 does and shards each unit after "
        "its children, the root then sharded by the call",
    ),
    (
        "sync_module_states=True (or a flag)",
        "before each `fully_shard`, rank 0's parameters and buffers (non-persistent ones "
        "included) of the unit broadcast (`broadcast_like_fsdp1`; with a `process_group` "
        "or a `device_mesh`, over each dimension of the mesh)",
    ),
    (
        "param_init_fn=fn, or a model built on meta",
        "before each `fully_shard`, a unit holding meta tensors materialised as FSDP1 did "
        "(`materialize_like_fsdp1`: `fn(module)`, or `to_empty(recurse=False)` and "
        "`reset_parameters()`, on each module of the unit, breadth-first)",
    ),
    (
        "process_group=pg",
        "`mesh=DeviceMesh.from_group(pg, torch.device(device_id).type)`; without "
        '`device_id`, `DeviceMesh.from_group(pg, "cuda")`, which the finding names (FSDP1 '
        "took the module's device or the current accelerator)",
    ),
    ("device_mesh=mesh", "`mesh=mesh` (a 2-D mesh needs dimension names)"),
)

#: The recipes the guide's table lists: what stays for a human.
LEFT = ("ignored_modules",)

#: Keywords whose ``None`` is FSDP1's default: nothing to write.
_NONE_IS_UNSET = ("sharding_strategy", "device_id", "device_mesh")
#: Keywords with no FSDP2 meaning that are dropped without a note.
_SILENT = ("use_orig_params",)
#: FSDP2 has no switch for its rate limiter: a call that may turn FSDP1's off changes.
RATE_LIMITED = (
    "`limit_all_gathers={value}` dropped: FSDP2 always limits the all-gathers in flight, "
    "where FSDP1 here may have run them ahead without that limit: the same numbers, but "
    "a lower peak memory and possibly slower steps"
)

#: What FSDP2 does otherwise for every call, named in its finding (FSDP2-PORTS.md 7.1,
#: the differences real ports accepted). Without ``use_orig_params=True`` FSDP1 gave the
#: optimizer flat parameters; FSDP2 gives it each original parameter.
FLAT_PARAMETERS = (
    "the optimizer gets each original parameter (a DTensor) where FSDP1 without "
    "`use_orig_params=True` gave it flat ones: parameter groups chosen by module or by "
    "name (no weight decay on biases and norms) now find the parameters FSDP1's flat "
    "ones hid, and train differently"
)
DTENSOR_PARAMETERS = (
    "the model's parameters and their gradients are DTensors where FSDP1 gave plain "
    "tensors (flat ones, or with `use_orig_params=True` views of the local shard): "
    "arithmetic that mixes one with a plain tensor (a gradient norm summed by hand) "
    "raises, and `.to_local()` gives the local shard; an optimizer's own `state_dict()` "
    "holds DTensors in each parameter's shape where FSDP1's held flat shards, so its "
    "files saved by FSDP1 runs do not load into it"
)
SHARDED_STATE = (
    "the model's `state_dict()` gives DTensor shards where FSDP1's gave full tensors "
    "(`get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))` "
    "gives those)"
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
    if out.runtime_strategy is not None:
        runtime_strategy(engine, out.runtime_strategy, out)
    if out.setup.group is not None and out.strategy is None:
        # FSDP1 shards over the group; FSDP2 over a 1-D mesh made of it.
        device = out.setup.device
        kind = f"torch.device({device}).type" if device else '"cuda"'
        out.code.append(f"mesh=DeviceMesh.from_group({out.setup.group}, {kind})")
        # `torch` only where the code names it: an import nothing uses withheld the fix
        out.more_imports += [(DEVICE_MESH, "DeviceMesh"), *([("torch", None)] if device else [])]
    if reasons:
        raise Untranslatable(*reasons)
    out.notes += setup_notes(out.setup)
    if not any(keyword(a) == "use_orig_params" and literal(a.value) is True for a in args):
        out.notes.append(FLAT_PARAMETERS)
    out.notes += [DTENSOR_PARAMETERS, SHARDED_STATE]
    return out


def _translate_one(engine: Engine, arg: cst.Arg, out: Keywords) -> None:
    """Add one keyword argument's translation to ``out`` (see :func:`translate`)."""
    name = keyword(arg)
    value = arg.value
    if name in _NONE_IS_UNSET and is_none(value):
        return  # FSDP1's default, and FSDP2's (`FSDP(model, None, None)` by position)
    if name == "sharding_strategy":
        sharding(engine, value, out)
    elif name == "mixed_precision":
        mixed_precision(engine, value, out)
    elif name == "cpu_offload":
        cpu_offload(engine, value, out)
    elif name in ("backward_prefetch", "forward_prefetch"):
        prefetch(engine, name, value, out)
    elif name == "device_mesh":
        out.code.append(f"mesh={source(engine, value)}")
    elif name == "device_id":
        out.setup.device = source(engine, value)
        if is_current(engine, value) or sets_device(engine):
            out.notes.append(device.DROPPED)
        else:  # FSDP2 shards on the current device, which nothing else sets
            out.setup.set_device = True
            out.more_imports.append(("torch", None))
            out.notes.append(device.SET.format(device=out.setup.device))
    elif name == "limit_all_gathers":
        if literal(value) is not True:
            out.notes.append(RATE_LIMITED.format(value=source(engine, value)))
    elif name in _SILENT or (name == "ignored_modules" and is_none(value)):
        return
    elif name in ("sync_module_states", "process_group") and (
        literal(value) is False or is_none(value)
    ):
        return
    elif name in SETUP:
        take_setup(engine, name, value, out)
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
    rows += [f"| `{name}` | left for a human: {RECIPES[name]} |" for name in LEFT]
    return "\n".join(rows) + "\n"
