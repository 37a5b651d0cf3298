"""With the drop-in installed, torch's own FSDP class takes the legacy arguments.

The legacy side builds with ``torch.distributed.fsdp.FullyShardedDataParallel`` itself,
unchanged code of the kind that needed ``compat.fsdp`` before (class-set policies,
``cpu_offload=False``, ``activation_checkpointing=``, a policy in the ``unwrapped_params``
spelling, no ``device_id`` on a CPU host), directly and through torch's own
``enable_wrap``/``wrap`` (a library building FSDP on the user's behalf). Each case must
build and train exactly as the current native code, on 2 real ranks, warning with its
rule codes.
"""

from __future__ import annotations

import pytest
import torch

from compat.features import current
from tests.equivalence import Case, checkpoint_reference, equivalence_tests, native_fsdp
from tests.models import Block, Head, current_policy, legacy_policy

pytestmark = pytest.mark.distributed

if not current().fsdp1_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)


def _installed(build):
    """``build`` run with the drop-in installed, as a script under ``python -m compat``."""

    def legacy(model: torch.nn.Module) -> torch.nn.Module:
        import compat

        compat.install()
        try:
            return build(model)
        finally:
            compat.uninstall()

    return legacy


def _classes_and_offload_bool(model):
    from torch.distributed.fsdp import FullyShardedDataParallel

    return FullyShardedDataParallel(model, auto_wrap_policy={Block, Head}, cpu_offload=False)


def _native_classes_and_offload(model):
    from torch.distributed.fsdp import CPUOffload
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return native_fsdp(
        model,
        auto_wrap_policy=ModuleWrapPolicy({Block, Head}),
        cpu_offload=CPUOffload(offload_params=False),
    )


def _activation_checkpointing(model):
    from torch.distributed.fsdp import FullyShardedDataParallel

    return FullyShardedDataParallel(model, auto_wrap_policy=[Block], activation_checkpointing=Block)


def _native_checkpointing(model):
    import functools

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    sharded = native_fsdp(model, auto_wrap_policy=ModuleWrapPolicy({Block}))
    apply_activation_checkpointing(
        sharded,
        checkpoint_wrapper_fn=functools.partial(
            checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT
        ),
        check_fn=lambda module: isinstance(module, Block),
    )
    return sharded


def _unwrapped_params_policy(model):
    from torch.distributed.fsdp import FullyShardedDataParallel

    return FullyShardedDataParallel(model, auto_wrap_policy=legacy_policy)


def _native_policy(model):
    return native_fsdp(model, auto_wrap_policy=current_policy)


def _torch_wraps_on_our_behalf(model):
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import enable_wrap, wrap

    with enable_wrap(wrapper_cls=FullyShardedDataParallel, cpu_offload=False):
        for index, block in enumerate(model.blocks):
            model.blocks[index] = wrap(block)
    return FullyShardedDataParallel(model)


def _native_manual_wrap(model):
    from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import enable_wrap, wrap

    from tests import distributed

    device = distributed.device_for(torch.distributed.get_rank())
    offload = CPUOffload(offload_params=False)
    with enable_wrap(wrapper_cls=FullyShardedDataParallel, cpu_offload=offload, device_id=device):
        for index, block in enumerate(model.blocks):
            model.blocks[index] = wrap(block)
    return native_fsdp(model)


CASES = {
    "class-set-and-offload-bool": Case(
        _installed(_classes_and_offload_bool), _native_classes_and_offload, frozenset({"FSDP109"})
    ),
    "activation-checkpointing": Case(
        _installed(_activation_checkpointing),
        _native_checkpointing,
        frozenset({"FSDP110"}),
        reference=checkpoint_reference(Block),
    ),
    "unwrapped-params-policy": Case(
        _installed(_unwrapped_params_policy),
        _native_policy,
        frozenset({"FSDP102"} if current().policy_numel_kwarg == "nonwrapped_numel" else ()),
    ),
    "torch-wraps-on-our-behalf": Case(
        _installed(_torch_wraps_on_our_behalf), _native_manual_wrap, frozenset({"FSDP109"})
    ),
}

runs, test_legacy_equals_native, test_legacy_equals_reference = equivalence_tests(__name__, CASES)
