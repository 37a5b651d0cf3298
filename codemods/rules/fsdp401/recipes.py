"""The FSDP1 arguments FSDP401 leaves to a human, and the recipe each finding gives."""

from __future__ import annotations

#: FSDP1 arguments the rewrite leaves to a human, and the recipe it gives.
RECIPES = {
    # The forms FSDP1's own steps give (measured equal to FSDP1, docs/fsdp2.md "Finishing
    # a bridged call by hand"): a load with `broadcast_from_rank0` after sharding leaves
    # non-persistent buffers unsynced, and initialising after sharding on meta draws
    # other random values, so neither is offered.
    "sync_module_states": (
        "FSDP2 broadcasts nothing: before the first `fully_shard` (after any initialisation, "
        "on the device), send rank 0's parameters and buffers, non-persistent ones "
        "included, to every rank as FSDP1 did: `for tensor in itertools.chain("
        "model.parameters(), model.buffers()): torch.distributed.broadcast(tensor.detach(), "
        "src=0)` (a process group: `group=pg, src=torch.distributed.get_global_rank(pg, 0)`)"
    ),
    "param_init_fn": (
        "FSDP2 leaves meta tensors on meta: materialise each unit just before its "
        "`fully_shard`, in FSDP1's order (children before parents, the root last), by "
        "calling `param_init_fn(module)` on each module of the unit that holds meta "
        "tensors, breadth-first, not entering units already sharded (without one: "
        "`module.to_empty(device=device, recurse=False)` and `module.reset_parameters()`); "
        "sharding on meta and initialising afterwards draws other random values"
    ),
    "process_group": (
        "pass `mesh=` to `fully_shard` (`DeviceMesh.from_group(group, device_type)` for a "
        "process group)"
    ),
    "device_mesh": (
        "pass the mesh as `fully_shard(..., mesh=...)`; FSDP2 shards hybrid on any 2-D mesh, "
        "which must have dimension names (rebuild an unnamed one with "
        "`mesh_dim_names=('replicate', 'shard')`)"
    ),
    "HYBRID_SHARD": (
        "shard on FSDP1's 2-D mesh, shard groups of `n = torch.cuda.device_count()` "
        "consecutive ranks: `mesh = init_device_mesh('cuda', (world_size // n, n), "
        "mesh_dim_names=('replicate', 'shard'))`, then `fully_shard(..., mesh=mesh)` "
        "(`_HYBRID_SHARD_ZERO2`: with `reshard_after_forward=False`); where `n` is 1 "
        "FSDP1 trains each rank alone, as NO_SHARD"
    ),
    "NO_SHARD": (
        "FSDP2 has no NO_SHARD: the same units on a `(world_size, 1)` mesh, "
        "`init_device_mesh(device_type, (world_size, 1), mesh_dim_names=('replicate', "
        "'shard'))`, with `reshard_after_forward=False`, train as FSDP1 did (or use "
        "`DistributedDataParallel`)"
    ),
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

#: What a finding of a call left FSDP1 adds after its recipes: how to check a hand port,
#: and the opt-in bridge where it would take the call.
HAND_PORT = (
    "check a port by hand against FSDP1 with `python -m compat.portcheck` "
    '(docs/fsdp2.md, "The port checker")'
)
BRIDGE_OPTION = "or let `--fsdp2-bridge` rewrite it to compat's FSDP1 bridge"
