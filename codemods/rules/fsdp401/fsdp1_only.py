"""What an FSDP1-wrapped model answers that an FSDP2 model does not, or answers otherwise.

FSDP401 leaves a file FSDP1 where it uses one of these on the wrapped model (or puts it
on the bridge with ``--fsdp2-bridge``), and names it in the finding.
"""

from __future__ import annotations

#: Attributes of an FSDP1-wrapped model that an FSDP2 model does not have (or that mean
#: something else there): a file using one on the wrapped model is left as FSDP1.
FSDP1_ONLY = (
    "clip_grad_norm_",
    "no_sync",
    "summon_full_params",
    "module",
    "_fsdp_wrapped_module",
    "check_is_root",
    "sharding_strategy",
    "mixed_precision",
    "cpu_offload",
    "params",
    # FSDP1's own state, which shadows the wrapped module's attributes of those names
    "process_group",
    "compute_device",
    "rank",
    "world_size",
    "training_state",
    "backward_prefetch",
    "forward_prefetch",
    "limit_all_gathers",
    "use_orig_params",
    "_handle",
    "_flat_param",
    "_is_root",
)


#: Methods both have that mean something else on an FSDP2 model, and what to write.
CHANGED_MEANING = {
    "state_dict": (
        "FSDP1 gathers a full state dict, FSDP2 returns DTensor shards: use "
        "`get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))`"
    ),
    "load_state_dict": (
        "FSDP2 loads DTensor shards: use `set_model_state_dict(model, state, "
        "options=StateDictOptions(full_state_dict=True))`"
    ),
}
