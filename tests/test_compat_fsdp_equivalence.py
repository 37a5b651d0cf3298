"""Legacy spellings through compat.fsdp build the same sharded model as native torch.

One 2-rank gloo run (NCCL on a GPU) trains every case twice, legacy-through-compat and
native-current, from the same seed and data; each case is then asserted on its own:
the same FSDP units, the same checkpointed modules, the same parameters after the steps
(to 1e-6), both equal to an unsharded reference, legacy warning with its rule code and
native raising no deprecation warning.
"""

from __future__ import annotations

import functools

import pytest
import torch

from compat.features import current
from tests import distributed
from tests.equivalence import (
    Case,
    checkpoint_reference,
    equivalence_tests,
    native_fsdp,
)
from tests.models import (
    Block,
    Head,
    current_policy,
    is_block,
    legacy_policy,
)

pytestmark = pytest.mark.distributed

if not current().fsdp1_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)


def _compat_legacy_transformer(model):
    from compat.fsdp import FSDP
    from compat.fsdp.wrap import transformer_auto_wrap_policy

    return FSDP(
        model,
        auto_wrap_policy=functools.partial(
            transformer_auto_wrap_policy, transformer_layer_cls={Block}
        ),
    )


def _compat_legacy_lambda(model):
    from compat.fsdp import FSDP
    from compat.fsdp.wrap import lambda_auto_wrap_policy

    return FSDP(
        model, auto_wrap_policy=functools.partial(lambda_auto_wrap_policy, lambda_fn=is_block)
    )


def _compat_min_num_params(model):
    from compat.fsdp import FSDP
    from compat.fsdp.wrap import size_based_auto_wrap_policy

    return FSDP(
        model, auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=500)
    )


def _compat_default_policy(model):
    from compat.fsdp import FSDP, wrap

    policy = wrap.default_auto_wrap_policy
    return FSDP(model, auto_wrap_policy=functools.partial(policy, min_nonwrapped_numel=500))


def _compat_user_policy(model):
    from compat.fsdp import FSDP

    return FSDP(model, auto_wrap_policy=legacy_policy)


def _compat_class_set(model):
    from compat.fsdp import FSDP

    return FSDP(model, auto_wrap_policy={Block, Head})


def _compat_cpu_offload(model):
    from compat.fsdp import FSDP

    return FSDP(model, auto_wrap_policy={Block}, cpu_offload=True)


def _compat_activation_checkpointing(model):
    from compat.fsdp import FSDP

    return FSDP(model, auto_wrap_policy={Block}, activation_checkpointing=[Block, Head])


def _compat_fsdp_policy_subclass(model):
    from compat.fsdp import FSDP
    from compat.fsdp import wrap as compat_wrap

    class BlockPolicy(compat_wrap._FSDPPolicy):
        @property
        def policy(self):
            return functools.partial(
                compat_wrap.transformer_auto_wrap_policy, transformer_layer_cls={Block}
            )

    return FSDP(model, auto_wrap_policy=BlockPolicy())


def _module_wrap(*classes):
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return ModuleWrapPolicy(set(classes))


def _native_module_wrap(model):
    return native_fsdp(model, auto_wrap_policy=_module_wrap(Block))


def _native_custom_policy(model):
    from torch.distributed.fsdp.wrap import CustomPolicy

    return native_fsdp(model, auto_wrap_policy=CustomPolicy(is_block))


def _native_size_based(model):
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    return native_fsdp(
        model, auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=500)
    )


def _native_user_policy(model):
    return native_fsdp(model, auto_wrap_policy=current_policy)


def _native_class_set(model):
    return native_fsdp(model, auto_wrap_policy=_module_wrap(Block, Head))


def _native_cpu_offload(model):
    from torch.distributed.fsdp import CPUOffload

    return native_fsdp(
        model, auto_wrap_policy=_module_wrap(Block), cpu_offload=CPUOffload(offload_params=True)
    )


def _native_activation_checkpointing(model):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )

    sharded = native_fsdp(model, auto_wrap_policy=_module_wrap(Block))
    apply_activation_checkpointing(
        sharded,
        checkpoint_wrapper_fn=functools.partial(
            checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT
        ),
        check_fn=lambda m: isinstance(m, (Block, Head)),
    )
    return sharded


CASES: dict[str, Case] = {
    "transformer-partial": Case(
        _compat_legacy_transformer, _native_module_wrap, frozenset({"FSDP103"})
    ),
    "lambda-partial": Case(_compat_legacy_lambda, _native_custom_policy, frozenset({"FSDP104"})),
    "min-num-params": Case(_compat_min_num_params, _native_size_based, frozenset({"FSDP106"})),
    "default-auto-wrap-policy": Case(
        _compat_default_policy, _native_size_based, frozenset({"FSDP101"})
    ),
    "unwrapped-params-policy": Case(
        _compat_user_policy, _native_user_policy, frozenset({"FSDP102"})
    ),
    "class-set": Case(_compat_class_set, _native_class_set),
    "fsdp-policy-subclass": Case(
        _compat_fsdp_policy_subclass, _native_module_wrap, frozenset({"FSDP105", "FSDP103"})
    ),
    "cpu-offload-bool": Case(_compat_cpu_offload, _native_cpu_offload, frozenset({"FSDP109"})),
    "activation-checkpointing": Case(
        _compat_activation_checkpointing,
        _native_activation_checkpointing,
        frozenset({"FSDP110"}),
        reference=checkpoint_reference(Block, Head),
    ),
}
if not current().custom_policy:
    del CASES["lambda-partial"]
if distributed.choose_backend(2) != "nccl":
    # FSDP1's CPU offload pins memory, which needs a GPU per rank (test_gpu.py runs it
    # on one where there is one).
    del CASES["cpu-offload-bool"]


runs, test_legacy_equals_native, test_legacy_equals_reference = equivalence_tests(__name__, CASES)
