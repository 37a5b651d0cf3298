"""The module-level functions FSDP401's plain FSDP2 code calls, written once per file.

Nine, each only where a converted call needs it:

- ``shard_like_fsdp1(module, policy, root, prepare, **kwargs)``: the units an FSDP1
  ``auto_wrap_policy`` known only at run time picks (a size threshold, a lambda, classes
  read from a config), decided as FSDP1's auto-wrapping decides them: the policy sees
  each module with ``recurse=True``, then, after its children, with ``recurse=False``
  and the parameters no unit below took; each unit is sharded after its children
  (post-order), the root left to the caller;
- ``materialize_like_fsdp1(unit, device, init_fn=None)``: FSDP1's materialisation of a
  unit holding meta tensors;
- ``broadcast_like_fsdp1(unit, device, mesh=None)``: FSDP1's ``sync_module_states``
  for one unit (over each dimension of the mesh, as FSDP1's hybrid sync goes across the
  replicas, then within each shard group);
- ``precision_like_fsdp1(precision, root)``: a ``MixedPrecision`` known only at run time
  (read from a config) as a ``MixedPrecisionPolicy`` casting inputs where FSDP1 did;
- ``no_sync_like_fsdp1(module)``: ``with module.no_sync():``'s plain form as a context,
  for the dual stack (:mod:`codemods.rules.fsdp401.dual_code`);
- ``summon_full_params_like_fsdp1(module)``: a ``summon_full_params`` block that only
  reads, each unit unsharded for it (:mod:`codemods.rules.fsdp401.summon`);
- ``mesh_like_fsdp1(strategy, module, device, mesh, group)``: the mesh over the ranks a
  ``sharding_strategy`` FSDP1 has and FSDP2 does not (``NO_SHARD``, a hybrid one
  without a mesh, or one known only at run time) shards and replicates on
  (:mod:`codemods.rules.fsdp401.sharding`), and ``reshards_like_fsdp1(strategy)``,
  whether such a strategy reshards after forward;
- ``set_device_like_fsdp1(device)``: FSDP1's ``device_id`` as the current device, where
  the file sets none (:mod:`codemods.rules.fsdp401.device`).

They name nothing but torch, so the rewritten file depends on nothing new.
"""

from __future__ import annotations

from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import fresh
from codemods.syntax.lazy_libcst import cst

#: Each helper's source, with ``{one}`` for one indentation step and ``{names}`` for
#: the helpers' names in the file.
SOURCES = {
    "modules": '''def {modules}(unit):
{one}"""The modules FSDP1 counts in ``unit``: breadth-first, not inside a sharded unit."""
{one}found, queue = [], [unit]
{one}while queue:
{one}{one}module = queue.pop(0)
{one}{one}found.append(module)
{one}{one}for child in module.children():
{one}{one}{one}if not isinstance(child, FSDPModule) and child not in found + queue:
{one}{one}{one}{one}queue.append(child)
{one}return found
''',
    "materialise": '''def {materialise}(unit, device, init_fn=None):
{one}"""FSDP1's materialisation of a unit holding meta tensors, before it is sharded."""
{one}modules = {modules}(unit)
{one}own = [[*m.parameters(recurse=False), *m.buffers(recurse=False)] for m in modules]
{one}if not any(tensor.is_meta for tensors in own for tensor in tensors):
{one}{one}return
{one}for module, tensors in zip(modules, own):
{one}{one}if init_fn is not None:
{one}{one}{one}init_fn(module)
{one}{one}elif tensors:
{one}{one}{one}with torch.no_grad():
{one}{one}{one}{one}module.to_empty(device=device, recurse=False)
{one}{one}{one}{one}module.reset_parameters()
''',
    "broadcast": '''def {broadcast}(unit, device, mesh=None):
{one}"""FSDP1's ``sync_module_states`` for a unit: rank 0's tensors, over each mesh dimension."""
{one}groups = [None] if mesh is None else [mesh.get_group(dim) for dim in range(mesh.ndim)]
{one}for module in {modules}(unit):
{one}{one}for tensor in [*module.parameters(recurse=False), *module.buffers(recurse=False)]:
{one}{one}{one}if device is not None:
{one}{one}{one}{one}tensor.data = tensor.data.to(device)
{one}{one}{one}for group in groups:  # hybrid: across replicas, then within each shard group
{one}{one}{one}{one}source = 0 if group is None else torch.distributed.get_global_rank(group, 0)
{one}{one}{one}{one}torch.distributed.broadcast(tensor.detach(), src=source, group=group)
''',
    "units": '''def {units}(module, policy, root, prepare=None, **kwargs):
{one}"""Shard the units FSDP1's ``policy`` picks under ``root``, each after its children.

{one}Returns the number of parameters in the units sharded.
{one}"""
{one}numel = sum(parameter.numel() for parameter in module.parameters())
{one}if policy is None or not policy(module=module, recurse=True, nonwrapped_numel=numel):
{one}{one}return 0
{one}sharded = 0
{one}for child in module.children():
{one}{one}sharded += {units}(child, policy, root, prepare, **kwargs)
{one}if module is root or not policy(
{one}{one}module=module, recurse=False, nonwrapped_numel=numel - sharded
{one}):
{one}{one}return sharded
{one}if prepare is not None:
{one}{one}prepare(module)
{one}fully_shard(module, **kwargs)
{one}return numel
''',
    "precision": '''def {precision}(precision, root):
{one}"""FSDP1's ``MixedPrecision`` (or None) as FSDP2's policy, casting inputs as FSDP1 did."""
{one}if precision is None:
{one}{one}return MixedPrecisionPolicy()
{one}casts = precision.cast_forward_inputs or (root and precision.cast_root_forward_inputs)
{one}return MixedPrecisionPolicy(
{one}{one}param_dtype=precision.param_dtype,
{one}{one}reduce_dtype=precision.reduce_dtype,
{one}{one}cast_forward_inputs=casts,
{one})
''',
    "mesh": '''def {mesh}(strategy, module, device=None, mesh=None, group=None):
{one}"""The FSDP2 mesh over the ranks FSDP1's ``strategy`` shards and replicates on.

{one}FULL_SHARD and SHARD_GRAD_OP shard over ``mesh`` or ``group`` (None: every rank);
{one}the hybrid ones over the 2-D ``mesh``, the ``(intra, inter)`` pair of groups, or
{one}groups of ``device_count()`` consecutive ranks, replicated across; NO_SHARD keeps
{one}a whole replica on each rank.
{one}"""
{one}kind = getattr(strategy, "name", "FULL_SHARD")
{one}hybrid = kind in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2")
{one}if kind != "NO_SHARD" and not hybrid and group is None:
{one}{one}return mesh
{one}dist, names = torch.distributed, ("replicate", "shard")
{one}from_group = dist.device_mesh.DeviceMesh.from_group
{one}init_mesh = dist.device_mesh.init_device_mesh
{one}if device is not None:
{one}{one}device_type = torch.device(device).type
{one}else:  # FSDP1's choice: where the module's parameters are, else the accelerator
{one}{one}types = [p.device.type for p in module.parameters()]
{one}{one}types = [t for t in types if t not in ("cpu", "meta")]
{one}{one}accelerator = "cuda" if torch.cuda.is_available() else "cpu"
{one}{one}device_type = types[0] if types else accelerator
{one}if hybrid and mesh is not None:
{one}{one}if mesh.mesh_dim_names:
{one}{one}{one}return mesh
{one}{one}groups = [mesh.get_group(0), mesh.get_group(1)]  # FSDP2 needs named dimensions
{one}{one}return from_group(groups, device_type, mesh.mesh, mesh_dim_names=names)
{one}world = dist.get_world_size()
{one}if hybrid and group is None:  # FSDP1's groups of `device_count()` consecutive ranks
{one}{one}count = getattr(torch, device_type).device_count()
{one}{one}shape = (world // count, count)
{one}{one}return init_mesh(device_type, shape, mesh_dim_names=names)
{one}if hybrid:  # FSDP1's (intra-node, inter-node) pair: the grid of ranks they form
{one}{one}intra, inter = group
{one}{one}rows = [None] * world
{one}{one}dist.all_gather_object(rows, dist.get_process_group_ranks(intra))
{one}{one}replicas = dist.get_process_group_ranks(inter)
{one}{one}grid = torch.tensor([rows[rank] for rank in replicas])
{one}{one}me = dist.get_rank()
{one}{one}column = rows[me].index(me)  # this rank's place in its shard group
{one}{one}if grid[:, column].tolist() != replicas:
{one}{one}{one}raise ValueError("the intra-node and inter-node groups form no grid")
{one}{one}return from_group([inter, intra], device_type, grid, mesh_dim_names=names)
{one}if mesh is not None:
{one}{one}group = mesh.get_group(0)  # as FSDP1 reads a mesh without a hybrid strategy
{one}if kind != "NO_SHARD":
{one}{one}return from_group(group, device_type)
{one}if group is None:  # NO_SHARD: every rank a replica, shards of one rank
{one}{one}shape = (world, 1)
{one}{one}return init_mesh(device_type, shape, mesh_dim_names=names)
{one}alone = dist.new_group([dist.get_rank()], use_local_synchronization=True)
{one}grid = torch.tensor(dist.get_process_group_ranks(group)).unsqueeze(1)
{one}return from_group([group, alone], device_type, grid, mesh_dim_names=names)
''',
    "device": '''def {device}(device):
{one}"""The current device set to ``device``, where the old wrapper's ``device_id`` put units."""
{one}device = torch.device(device)
{one}if device.type != "cpu" and device.index is not None:  # else it took the current one
{one}{one}getattr(torch, device.type).set_device(device)
''',
    "reshards": '''def {reshards}(strategy):
{one}"""Whether FSDP1's ``strategy`` (None: FULL_SHARD) reshards after forward."""
{one}return getattr(strategy, "name", "FULL_SHARD") in ("FULL_SHARD", "HYBRID_SHARD")
''',
    "no_sync": '''@contextlib.contextmanager
def {no_sync}(module):
{one}"""FSDP1's ``module.no_sync()`` on FSDP2: no gradient reduction in it, on after it."""
{one}module.set_requires_gradient_sync(False)
{one}try:
{one}{one}yield
{one}finally:
{one}{one}module.set_requires_gradient_sync(True)
''',
    "summon": '''@contextlib.contextmanager
def {summon}(module):
{one}"""FSDP1's ``summon_full_params(module)`` on FSDP2, to read: each unit gathered in it."""
{one}units = [unit for unit in module.modules() if isinstance(unit, FSDPModule)]
{one}for unit in units:
{one}{one}unit.unshard()
{one}try:
{one}{one}yield
{one}finally:
{one}{one}for unit in reversed(units):
{one}{one}{one}unit.reshard()
''',
}
#: The names they take in the file (made fresh where the file uses one).
NAMES = {
    "modules": "fsdp1_unit_modules",
    "materialise": "materialize_like_fsdp1",
    "broadcast": "broadcast_like_fsdp1",
    "units": "shard_like_fsdp1",
    "precision": "precision_like_fsdp1",
    "no_sync": "no_sync_like_fsdp1",
    "summon": "summon_full_params_like_fsdp1",
    "mesh": "mesh_like_fsdp1",
    "reshards": "reshards_like_fsdp1",
    "device": "set_device_like_fsdp1",
}
#: What each needs besides itself.
NEEDS: dict[str, tuple[str, ...]] = {
    "materialise": ("modules",),
    "broadcast": ("modules",),
    "units": (),
    "precision": (),
    "no_sync": (),
    "summon": (),
    "mesh": (),
    "reshards": (),
    "device": (),
}


def helper_names(engine: Engine, roles: list[str]) -> dict[str, str]:
    """The names of the helpers ``roles`` need in the file, queued to be written once.

    The helpers go before the file's first top-level statement that holds a converted
    call (:func:`write_helpers`); the same names serve every call.
    """
    state = engine.scratch.setdefault("FSDP401-helpers", {"names": {}, "wanted": []})
    for need in [need for role in roles for need in (*NEEDS[role], role)]:
        if need not in state["names"]:
            state["names"][need] = fresh(engine, NAMES[need])
        if need not in state["wanted"]:
            state["wanted"].append(need)
    return state["names"]


def write_helpers(engine: Engine, line: cst.SimpleStatementLine) -> list[cst.CSTNode]:
    """The helpers wanted and not yet written in this module, before ``line``'s top statement.

    Returns the statements to put before ``line`` itself where it is at module level
    (the caller inserts them); otherwise they go before its top-level statement.
    """
    state = engine.scratch.get("FSDP401-helpers")
    written = engine.scratch.setdefault("FSDP401-written", {}).setdefault(id(engine.module), [])
    roles = [role for role in (state or {}).get("wanted", []) if role not in written]
    if not roles:
        return []
    written += roles
    one = engine.module.default_indent
    text = "\n\n".join(SOURCES[role].format(one=one, **state["names"]) for role in roles)
    if {"materialise", "broadcast"} & set(roles):
        engine.need_import("torch", None)
    if {"no_sync", "summon"} & set(roles):
        engine.need_import("contextlib", None)
    if "summon" in roles:  # (the dual stack's importer takes it from FSDP2's `try`)
        home = TORCH_FSDP if engine.target_at_least("2.6") else COMPOSABLE_FSDP
        engine.need_import(home, "FSDPModule")
    if {"mesh", "device"} & set(roles):  # they name torch's functions through `torch`
        engine.need_import("torch", None)
    blank = [cst.EmptyLine(), cst.EmptyLine()]
    parsed = [node.with_changes(leading_lines=blank) for node in cst.parse_module(text).body]
    top: cst.CSTNode = line
    while not isinstance(engine.parent(top), cst.Module):
        top = engine.parent(top)
    if top is line:  # the line's own blank lines go before the first
        first = [cst.EmptyLine()] * max(0, 2 - len(line.leading_lines))
        return [parsed[0].with_changes(leading_lines=first), *parsed[1:]]
    pending = engine.scratch.setdefault("FSDP401-before", {})
    if id(top) not in pending:  # one replacement, holding what every call adds
        pending[id(top)] = []
        engine.replace(top, lambda updated: cst.FlattenSentinel([*pending[id(top)], updated]))
    pending[id(top)] += parsed
    return []


def spaced(
    engine: Engine, statements: list[cst.CSTNode], line: cst.SimpleStatementLine
) -> list[cst.CSTNode]:
    """``statements`` put before ``line``, two blank lines after each helper among them.

    At module level the helpers come first (:func:`write_helpers`): what follows the
    last, the next statement or ``line`` itself, starts after two blank lines (PEP 8).
    """
    blank = [cst.EmptyLine(), cst.EmptyLine()]
    out = list(statements)
    if not isinstance(engine.parent(line), cst.Module):
        return out  # in a function: its own nested functions keep their layout
    for index in range(1, len(out)):
        if isinstance(out[index - 1], cst.FunctionDef):
            out[index] = out[index].with_changes(leading_lines=blank)
    if out and isinstance(out[-1], cst.FunctionDef):

        def after_helpers(updated: cst.CSTNode) -> cst.CSTNode:
            if isinstance(updated, cst.FlattenSentinel):  # the statements, then the line
                *before, last = updated.nodes
                return cst.FlattenSentinel([*before, last.with_changes(leading_lines=blank)])
            return updated.with_changes(leading_lines=blank)

        engine.replace(line, after_helpers)
    return out
