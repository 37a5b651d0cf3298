"""What a bridged model keeps of FSDP1's API, and what nothing on FSDP2 keeps, for FSDP401.

The bridge's model (``compat.fsdp2.fsdp1_api``) answers FSDP1's methods and class calls
as FSDP1 did, so a use of one where the rewrite cannot follow the model puts the file's
calls on the bridge instead of keeping the file FSDP1. FSDP1's flat-parameter state
dicts and its private modules have no FSDP2 form at all and keep the file FSDP1.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

#: FSDP1's class-level calls that ``compat``'s ``FSDP1Api`` takes for a bridged model
#: (``compat.fsdp2.fsdp1_api.CLASS_CALLS``; codemods never imports compat, which imports
#: torch: ``tests/test_fsdp2_fsdp1_api.py`` keeps the two lists the same).
FSDP1_API = (
    "state_dict_type",
    "set_state_dict_type",
    "get_state_dict_type",
    "optim_state_dict",
    "optim_state_dict_to_load",
    "sharded_optim_state_dict",
    "full_optim_state_dict",
    "scatter_full_optim_state_dict",
    "shard_full_optim_state_dict",
    "summon_full_params",
)

#: FSDP1 methods the bridge's model keeps (``compat.fsdp2.fsdp1_methods.FSDP1Methods``): used
#: where the rewrite cannot follow the model, they put the file's calls on the bridge.
#: (Not ``module``: the bridge shards in place, and a ``module`` giving the model back
#: would send a recursive unwrap round forever; a read of it keeps the file FSDP1.)
BRIDGE_KEEPS = frozenset({"clip_grad_norm_", "no_sync", "state_dict", "load_state_dict"})

#: What to write by hand for each FSDP1 call the bridge's model answers.
KEPT_RECIPES = {
    "clip_grad_norm_": "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`",
    "no_sync": "`model.set_requires_gradient_sync(False)` for the block, then `True`",
    "state_dict": "`get_model_state_dict(model, options=StateDictOptions(...))`",
    "load_state_dict": "`set_model_state_dict(model, state, options=StateDictOptions(...))`",
    "api": "torch.distributed.checkpoint.state_dict's functions with `StateDictOptions`",
    # FSDP1's class calls with a recipe of their own (the kind is the call's name)
    "summon_full_params": (
        "`unshard()` on each `FSDPModule` of the model for the block and `reshard()` after "
        "(nothing is written back, and under mixed precision the gather is in "
        "`param_dtype`), or `.full_tensor()` of each DTensor the block reads"
    ),
    "optim_state_dict_to_load": (
        "`set_optimizer_state_dict(model, optim, state, options=StateDictOptions("
        "full_state_dict=True))` in place of the conversion and the optimizer's own load"
    ),
    "full_optim_state_dict": (
        "`get_optimizer_state_dict(model, optim, options=StateDictOptions("
        "full_state_dict=True))` (on every rank; `cpu_offload=True` with `rank0_only`)"
    ),
    "module": "the model itself: `fully_shard` shards the module in place, no wrapper",
    "set_state_dict_type": (
        "`get_model_state_dict` / `set_model_state_dict` with the type's "
        "`StateDictOptions` at each state-dict call the type was set for"
    ),
    "fully_shard": "import torch's `fully_shard` under another name",
    "local": (
        "SHARDED_STATE_DICT, whose DTensor shards torch.distributed.checkpoint saves and "
        "loads (LOCAL_STATE_DICT files hold FSDP1's flat layout, which plain FSDP2 cannot read)"
    ),
}

#: What every bridged call's finding says: the FSDP1 behaviour the bridge keeps, which
#: removing the bridge (plain FSDP2) changes, and what the bridge itself changes (it
#: warns with ``compat.fsdp2.BridgeDifferenceWarning``).
LEAVING_THE_BRIDGE = (
    "the bridged model keeps FSDP1's methods, which plain FSDP2 does not: "
    "`model.state_dict()` a full state dict for FSDP1 code (plain FSDP2: DTensor shards; "
    "write `get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))`), "
    "`model.no_sync()` (`model.set_requires_gradient_sync(False)` for the block), "
    "`model.clip_grad_norm_(n)` (`torch.nn.utils.clip_grad_norm_(model.parameters(), n)`), "
    "`FSDP1Api`'s class calls (torch.distributed.checkpoint.state_dict's functions); "
    "unlike FSDP1, the optimizer gets the original parameters (groups built per module "
    "differ under use_orig_params=False) and `no_sync` with bf16 mixed precision "
    "accumulates in fp32"
)

#: What FSDP1's ``LOCAL_STATE_DICT`` is spelled as, and why plain FSDP2 has no form of it:
#: the bridge's model writes FSDP1's flat layout (``compat.fsdp2.local_state``).
LOCAL_STATE_DICT = "StateDictType.LOCAL_STATE_DICT"
NO_LOCAL = "FSDP2 keeps no flat parameters: the bridge's model writes FSDP1's"


def api_call(engine: Engine, node: cst.CSTNode) -> cst.Call | None:
    """The ``FSDP.<call>(...)`` ``node`` (the class) is called through, for :data:`FSDP1_API`."""
    attribute = engine.parent(node)
    if not isinstance(attribute, cst.Attribute) or attribute.value is not node:
        return None
    call = engine.parent(attribute)
    if attribute.attr.value not in FSDP1_API or not isinstance(call, cst.Call):
        return None
    return call if call.func is attribute else None


def local_state_dict(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is torch's ``StateDictType.LOCAL_STATE_DICT``."""
    return isinstance(node, cst.Attribute) and any(
        name.startswith("torch.distributed.fsdp.") and name.endswith(LOCAL_STATE_DICT)
        for name in engine.qualified(node)
    )


#: Private names under torch's FSDP package that are not FSDP1's internals: FSDP2's home,
#: and a string helper that works on any parameter name (FSDP2's have nothing to clean).
NOT_FSDP1_INTERNALS = (
    "torch.distributed.fsdp._fully_shard",
    "torch.distributed.fsdp._common_utils.clean_tensor_name",
)


#: FSDP1's modules without an underscore that hold its internals (flat parameters).
FSDP1_INTERNAL_MODULES = (
    "torch.distributed.fsdp.flat_param",
    "torch.distributed.fsdp.flatten_params_wrapper",
)


def fsdp1_internals(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` names something in FSDP1's private modules (``_runtime_utils``...).

    Only the outermost reference counts (``a._b.c`` is one use, not three).
    """
    parent = engine.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        return False
    return any(
        (name.startswith("torch.distributed.fsdp._") and not name.startswith(NOT_FSDP1_INTERNALS))
        or name.startswith(FSDP1_INTERNAL_MODULES)
        for name in engine.qualified(node)
    )


#: Other libraries' calls that need an FSDP1 model: they assert its class or read its
#: flat parameters, so a bridged model fails in them. (package, name, why); the name is
#: matched at any depth of the package, as libraries re-export it.
FSDP1_CONSUMERS = (
    (
        "transformer_engine",
        "prepare_te_modules_for_fsdp",
        "TransformerEngine's FSDP1 hook: it asserts an FSDP1 root and reads each unit's state",
    ),
    (
        "distributed_shampoo",
        "compile_fsdp_parameter_metadata",
        "Distributed Shampoo reads FSDP1's flat parameters here "
        "(FSDP2 models take `FullyShardDistributedConfig`)",
    ),
    (
        "distributed_shampoo",
        "FSDPDistributedConfig",
        "Distributed Shampoo's FSDP1 config (FSDP2 models take `FullyShardDistributedConfig`)",
    ),
    *(
        (
            "apex",
            name,
            f"apex's `{name}` hands each parameter to its CUDA kernels by data pointer, "
            "which FSDP2's parameters (DTensors) do not have: use torch's fused optimizer",
        )
        for name in ("FusedAdam", "FusedLAMB", "FusedSGD", "FusedNovoGrad")
    ),
    (
        "distributed_shampoo",
        "HSDPDistributedConfig",
        "Distributed Shampoo's FSDP1 config (FSDP2 models take `HybridShardDistributedConfig`)",
    ),
)


def fsdp1_consumer(engine: Engine, node: cst.CSTNode) -> str | None:
    """Why ``node``, another library's name, needs an FSDP1 model (:data:`FSDP1_CONSUMERS`)."""
    for name in engine.qualified(node):
        package, _, rest = name.partition(".")
        last = name.rpartition(".")[2]
        for owner, consumer, why in FSDP1_CONSUMERS:
            if package == owner and rest and last == consumer:
                return why
    return None


def loop_reads_fsdp1_state(engine: Engine, listing: cst.Call, fsdp1_only: tuple[str, ...]) -> bool:
    """Whether ``for unit in FSDP.fsdp_modules(m)`` reads FSDP1's state of each unit.

    FSDP2's units (the comprehension that replaces the listing) have none of FSDP1's
    attributes (``unit._handle``, ``unit.sharding_strategy``). ``unit.module`` in a
    ``for`` statement's body is no such read: it becomes ``unit``
    (:func:`unit_modules`).
    """
    loop = engine.parent(listing)
    if isinstance(loop, (cst.For, cst.CompFor)) and loop.iter is listing:
        target = loop.target
        scope = loop.body if isinstance(loop, cst.For) else engine.parent(loop)
    else:
        return False
    if not isinstance(target, cst.Name):
        return True  # unpacked: nothing to follow, and FSDP2 units do not unpack
    for node in find_all(scope, lambda n: isinstance(n, cst.Attribute)):
        value = node.value
        if isinstance(value, cst.Name) and value.value == target.value:
            attr = node.attr.value
            if attr == "module" and isinstance(loop, cst.For):
                continue
            if attr in fsdp1_only or attr.startswith("_"):
                return True
    return False


def unit_modules(engine: Engine, listing: cst.Call) -> list[cst.Attribute]:
    """In ``for unit in FSDP.fsdp_modules(m):``, each ``unit.module`` of the loop's body.

    FSDP1's unit wraps the module it shards (``unit.module``); FSDP2 shards the module in
    place, so on FSDP2 the unit is that module, of the same class.
    """
    loop = engine.parent(listing)
    if not (isinstance(loop, cst.For) and loop.iter is listing):
        return []
    target = loop.target
    if not isinstance(target, cst.Name):
        return []
    return [
        node
        for node in find_all(loop.body, lambda n: isinstance(n, cst.Attribute))
        if node.attr.value == "module"
        and isinstance(node.value, cst.Name)
        and node.value.value == target.value
    ]


def kept_reason(kept: list[tuple[str, str]]) -> str:
    """Why a file's calls are on the bridge: its uses of FSDP1's API, each with a recipe.

    Args:
        kept: Each use, quoted with its line, and its kind (a method, or ``"api"``).
    """
    shown = [f"{where}: {KEPT_RECIPES[kind]}" for where, kind in kept[:3]]
    more = f"; and {len(kept) - 3} more" if len(kept) > 3 else ""
    return f"FSDP1's API on the model, which the bridge's model keeps: {'; '.join(shown)}{more}"
