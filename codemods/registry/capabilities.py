"""Version-gated capabilities that are not renames: what the feature flags test for.

Each name matches an attribute of :class:`compat.features.Features`. Flags that can be
seen by inspecting torch (a class, a parameter) check torch itself and the tests hold
them against ``since``; flags that can only be known from the release (does FSDP run on
CPU?) read ``since`` from here.
"""

from __future__ import annotations

from codemods.registry.model import Capability, Framework

CAPABILITIES = (
    Capability(
        name="module_wrap_policy",
        framework=Framework.TORCH,
        since="2.0",
        summary="`torch.distributed.fsdp.wrap.ModuleWrapPolicy` wraps by module class.",
        note="A policy object, not a callable, until 2.2 (where it gained `__call__`).",
    ),
    Capability(
        name="nonwrapped_numel",
        framework=Framework.TORCH,
        since="2.0",
        summary="Policy callables receive `nonwrapped_numel` (before: `unwrapped_params`).",
    ),
    Capability(
        name="custom_policy",
        framework=Framework.TORCH,
        since="2.1",
        summary="`torch.distributed.fsdp.wrap.CustomPolicy` wraps by a `module -> bool` function.",
    ),
    Capability(
        name="ac_auto_wrap_policy",
        framework=Framework.TORCH,
        since="2.1",
        summary="`apply_activation_checkpointing` also takes `auto_wrap_policy=`.",
        note="Before 2.1 it takes only `check_fn=`.",
    ),
    Capability(
        name="fsdp1_on_cpu",
        framework=Framework.TORCH,
        since="2.2",
        summary="FSDP1 runs on CPU with gloo when given `device_id=torch.device('cpu')`.",
        note=(
            "2.1 accepts `device_id=cpu` but fails at the first forward (`Stream() takes no "
            "arguments`); `device_id=None` without an accelerator always fails, since 2.5 with "
            "`FSDP needs a non-CPU accelerator device`."
        ),
    ),
    Capability(
        name="checkpoint_no_reentrant_default",
        framework=Framework.TORCH,
        since="2.2",
        summary="`checkpoint_wrapper` defaults to `CheckpointImpl.NO_REENTRANT`.",
    ),
    Capability(
        name="fsdp2",
        framework=Framework.TORCH,
        since="2.4",
        summary="FSDP2 `fully_shard` exists, under `torch.distributed._composable.fsdp`.",
        note=(
            "2.3 has an early `fully_shard` there without `offload_policy` or `FSDPModule`; "
            "compat counts FSDP2 from 2.4. `ignored_params` arrived in 2.7."
        ),
    ),
    Capability(
        name="selective_ac",
        framework=Framework.TORCH,
        since="2.5",
        summary="`torch.utils.checkpoint.create_selective_checkpoint_contexts` for op-level AC.",
        note="2.2 to 2.4 have only the private, torch.compile-only "
        "`_pt2_selective_checkpoint_context_fn_gen`.",
    ),
    Capability(
        name="fsdp2_public",
        framework=Framework.TORCH,
        since="2.6",
        summary="FSDP2 is public: `torch.distributed.fsdp.fully_shard`.",
    ),
    Capability(
        name="fsdp2_on_cpu",
        framework=Framework.TORCH,
        since="2.7",
        summary="FSDP2 runs on CPU with gloo.",
        note="2.6.0 fails on CPU: `'Stream' object has no attribute 'record_event'`.",
    ),
)
