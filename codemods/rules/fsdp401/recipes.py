"""The FSDP1 arguments FSDP401 leaves to a human, and the recipe each finding gives."""

from __future__ import annotations

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
