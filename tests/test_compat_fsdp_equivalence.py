"""Legacy spellings through compat.fsdp build the same sharded model as native torch.

One 2-rank gloo run (NCCL on a GPU) trains every case twice, legacy-through-compat and
native-current, from the same seed and data; each case is then asserted on its own:
the same FSDP units, the same checkpointed modules, the same parameters after the steps
(to 1e-6), both equal to an unsharded reference, legacy warning with its rule code and
native raising no deprecation warning.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import pytest
import torch

from compat.features import current
from tests import distributed
from tests.models import (
    Block,
    Head,
    current_policy,
    is_block,
    legacy_policy,
    make_model,
    reference_summary,
    summary,
    train,
)

pytestmark = pytest.mark.distributed

if not current().fsdp1_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)


def _native(**kwargs: Any) -> Callable:
    def build(model):
        from torch.distributed.fsdp import FullyShardedDataParallel

        from tests.distributed import device_for

        device = device_for(torch.distributed.get_rank())
        return FullyShardedDataParallel(model, device_id=device, **kwargs)

    return build


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


def _module_wrap(*classes):
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return ModuleWrapPolicy(set(classes))


def _native_module_wrap(model):
    return _native(auto_wrap_policy=_module_wrap(Block))(model)


def _native_custom_policy(model):
    from torch.distributed.fsdp.wrap import CustomPolicy

    return _native(auto_wrap_policy=CustomPolicy(is_block))(model)


def _native_size_based(model):
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    return _native(
        auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=500)
    )(model)


def _native_user_policy(model):
    return _native(auto_wrap_policy=current_policy)(model)


def _native_class_set(model):
    return _native(auto_wrap_policy=_module_wrap(Block, Head))(model)


def _native_cpu_offload(model):
    from torch.distributed.fsdp import CPUOffload

    return _native(
        auto_wrap_policy=_module_wrap(Block), cpu_offload=CPUOffload(offload_params=True)
    )(model)


def _native_activation_checkpointing(model):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )

    sharded = _native(auto_wrap_policy=_module_wrap(Block))(model)
    apply_activation_checkpointing(
        sharded,
        checkpoint_wrapper_fn=functools.partial(
            checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT
        ),
        check_fn=lambda m: isinstance(m, (Block, Head)),
    )
    return sharded


def _reference_checkpointed(model):
    from compat.checkpointing import checkpoint_modules

    checkpoint_modules(model, [Block, Head])
    return model


# name: (legacy builder, native builder, rule codes the legacy run warns with, reference)
CASES: dict[str, tuple[Callable, Callable, set[str], Callable]] = {
    "transformer-partial": (_compat_legacy_transformer, _native_module_wrap, {"FSDP103"}, None),
    "lambda-partial": (_compat_legacy_lambda, _native_custom_policy, {"FSDP104"}, None),
    "min-num-params": (_compat_min_num_params, _native_size_based, {"FSDP106"}, None),
    "default-auto-wrap-policy": (_compat_default_policy, _native_size_based, {"FSDP101"}, None),
    "unwrapped-params-policy": (_compat_user_policy, _native_user_policy, {"FSDP102"}, None),
    "class-set": (_compat_class_set, _native_class_set, set(), None),
    "cpu-offload-bool": (_compat_cpu_offload, _native_cpu_offload, {"FSDP109"}, None),
    "activation-checkpointing": (
        _compat_activation_checkpointing,
        _native_activation_checkpointing,
        {"FSDP110"},
        _reference_checkpointed,
    ),
}
if not current().custom_policy:
    del CASES["lambda-partial"]
if not torch.cuda.is_available():  # FSDP1's CPU offload pins memory, which needs a GPU
    del CASES["cpu-offload-bool"]


def _codes(caught) -> set[str]:
    from compat import FSDPDeprecationWarning

    return {
        str(w.message).rsplit("[", 1)[-1].rstrip("]")
        for w in caught
        if issubclass(w.category, FSDPDeprecationWarning)
    }


def _run_side(build: Callable, rank: int) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = build(make_model())
        losses = train(model, [rank])
        result = summary(model, losses)
    result["codes"] = _codes(caught)
    return result


def _all_cases(rank: int, world_size: int, names: list[str]) -> dict[str, Any]:
    from compat.deprecation import reset_warned_sites

    results = {}
    for name in names:
        legacy, native, _, _ = CASES[name]
        reset_warned_sites()
        results[name] = {"legacy": _run_side(legacy, rank), "native": _run_side(native, rank)}
    return results


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    return distributed.run(
        _all_cases, list(CASES), backend=distributed.backend_for_tests(), timeout=400
    )


@pytest.mark.parametrize("name", list(CASES))
def test_legacy_through_compat_equals_native(runs, name):
    codes = CASES[name][2]
    for rank_result in runs:
        legacy, native = rank_result[name]["legacy"], rank_result[name]["native"]
        assert legacy["units"] == native["units"] and len(native["units"]) > 1
        assert legacy["checkpointed"] == native["checkpointed"]
        assert legacy["state"].keys() == native["state"].keys()
        for key, value in native["state"].items():
            torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)
        assert legacy["losses"] == pytest.approx(native["losses"], abs=1e-6)
        assert legacy["codes"] == codes
        assert native["codes"] == set()


@pytest.mark.parametrize("name", list(CASES))
def test_sharded_training_equals_the_unsharded_reference(runs, name):
    build_reference = CASES[name][3] or (lambda model: model)
    reference = reference_summary(build_reference)
    legacy = runs[0][name]["legacy"]
    assert legacy["checkpointed"] == reference["checkpointed"]
    for key, value in reference["state"].items():
        torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)
