"""The FSDP1 arguments FSDP401 leaves to a human, and the recipe each finding gives."""

from __future__ import annotations

#: FSDP1 arguments the rewrite leaves to a human, and the recipe it gives.
RECIPES = {
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
