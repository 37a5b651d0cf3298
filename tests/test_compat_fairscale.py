"""compat.fairscale: FairScale-era FSDP code on torch FSDP.

Argument translation is checked without a process group; the real runs build the same
sharded model as native torch code (one 2-rank spawn for all cases).
"""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
import torch.nn as nn
from torch.distributed.fsdp import CPUOffload, MixedPrecision, ShardingStrategy

from compat import FSDPDeprecationWarning
from compat import fairscale as fs
from compat.policies import select_modules
from tests.equivalence import (
    Case,
    checkpoint_reference,
    equivalence_tests,
    native_fsdp,
    warning_codes,
)
from tests.models import Block, make_model


def _translate(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        translated = fs.translate_fairscale_arguments(nn.Linear(2, 2), **kwargs)
    return translated, [str(w.message) for w in caught]


@pytest.mark.parametrize(
    ("reshard", "strategy"),
    [(True, ShardingStrategy.FULL_SHARD), (False, ShardingStrategy.SHARD_GRAD_OP)],
)
def test_reshard_after_forward_becomes_a_sharding_strategy(reshard, strategy):
    translated, messages = _translate(reshard_after_forward=reshard)
    assert translated["sharding_strategy"] is strategy and not messages


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"mixed_precision": True}, MixedPrecision(torch.float16, torch.float16, torch.float16)),
        (
            {"mixed_precision": True, "compute_dtype": torch.bfloat16, "fp32_reduce_scatter": True},
            MixedPrecision(torch.bfloat16, torch.float32, torch.bfloat16),
        ),
        (
            {"mixed_precision": True, "buffer_dtype": torch.float32},
            MixedPrecision(torch.float16, torch.float16, torch.float32),
        ),
    ],
)
def test_mixed_precision_becomes_a_policy(kwargs, expected):
    translated, messages = _translate(**kwargs)
    assert translated["mixed_precision"] == expected and not messages


@pytest.mark.parametrize("name", ["move_params_to_cpu", "cpu_offload"])
def test_offload_spellings(name):
    translated, messages = _translate(**{name: True})
    assert translated["cpu_offload"] == CPUOffload(offload_params=True) and not messages


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("bucket_cap_mb", 50),
        ("no_broadcast_optim_state", True),
        ("state_dict_device", torch.device("cpu")),
        ("clear_autocast_cache", True),
        ("force_input_to_fp32", True),
        ("verbose", True),
        ("state_dict_on_rank_0_only", True),
        ("gradient_predivide_factor", 2.0),
        ("allow_reset_parameters", True),
        ("disable_reshard_on_root", False),
        ("process_group_reduce_scatter", None),
        ("flatten_parameters", False),
        ("compute_dtype", torch.bfloat16),  # without mixed_precision
        ("move_grads_to_cpu", True),  # without parameter offload
    ],
)
def test_arguments_without_torch_meaning_warn_by_name(name, value):
    _, messages = _translate(**{name: value})
    assert len(messages) == 1 and f"`{name}`" in messages[0] and "[FSDP301]" in messages[0]


def test_compute_device_is_where_torch_computes():
    translated, messages = _translate(compute_device=torch.device("cpu"))
    assert translated["device_id"] == torch.device("cpu") and not messages


def test_defaults_and_flattening_translate_silently():
    translated, messages = _translate(flatten_parameters=True, process_group=None)
    assert not messages and "mixed_precision" not in translated and "cpu_offload" not in translated


def test_positional_arguments_follow_fairscales_order():
    # FairScale order: (module, process_group, process_group_reduce_scatter, reshard_after_forward)
    with pytest.warns(FSDPDeprecationWarning, match="process_group_reduce_scatter"):
        translated = fs.translate_fairscale_arguments(nn.Linear(2, 2), None, None, False)
    assert translated["sharding_strategy"] is ShardingStrategy.SHARD_GRAD_OP


def test_unknown_argument_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'auto_wrap_policy'"):
        fs.translate_fairscale_arguments(nn.Linear(2, 2), auto_wrap_policy=None)


def test_wrap_and_auto_wrap_outside_a_context_return_the_module():
    block = Block()
    with pytest.warns(FSDPDeprecationWarning):
        assert fs.wrap(block) is block
        assert fs.auto_wrap(block) is block


def test_default_auto_wrap_policy_selects_like_torchs_size_policy():
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    native = functools.partial(size_based_auto_wrap_policy, min_num_params=500)
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP305\]"):
        legacy = select_modules(
            make_model(), functools.partial(fs.default_auto_wrap_policy, min_num_params=500)
        )
    assert legacy == select_modules(make_model(), native)


def test_checkpoint_wrapper_is_torchs_non_reentrant_wrapper():
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        CheckpointWrapper,
    )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = fs.checkpoint_wrapper(Block(), offload_to_cpu=True)
    assert isinstance(wrapped, CheckpointWrapper)
    assert wrapped.checkpoint_impl is CheckpointImpl.NO_REENTRANT
    assert warning_codes(caught) == {"FSDP306"} and any(
        "offload_to_cpu" in str(w.message) for w in caught
    )


# Real runs ------------------------------------------------------------------------------


def _fairscale_manual_wrap(model):
    with fs.enable_wrap(wrapper_cls=fs.FullyShardedDataParallel, reshard_after_forward=False):
        for index, block in enumerate(model.blocks):
            model.blocks[index] = fs.wrap(block)
    return fs.FullyShardedDataParallel(model, reshard_after_forward=False)


def _native_manual_wrap(model):
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return native_fsdp(
        model,
        auto_wrap_policy=ModuleWrapPolicy({Block}),
        sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
    )


def _fairscale_auto_wrap(model):
    policy = functools.partial(fs.default_auto_wrap_policy, min_num_params=500)
    with fs.enable_wrap(auto_wrap_policy=policy, wrapper_cls=fs.FullyShardedDataParallel):
        model = fs.auto_wrap(model)
    return fs.FullyShardedDataParallel(model)


def _native_size_based(model):
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    return native_fsdp(
        model, auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=500)
    )


def _fairscale_checkpointed(model):
    with fs.enable_wrap(wrapper_cls=fs.FullyShardedDataParallel):
        for index, block in enumerate(model.blocks):
            model.blocks[index] = fs.wrap(fs.checkpoint_wrapper(block))
    return fs.FullyShardedDataParallel(model)


def _native_checkpointed(model):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        CheckpointWrapper,
        checkpoint_wrapper,
    )
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    for index, block in enumerate(model.blocks):
        model.blocks[index] = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
    return native_fsdp(model, auto_wrap_policy=ModuleWrapPolicy({CheckpointWrapper}))


CASES = {
    "manual-wrap-reshard": Case(
        _fairscale_manual_wrap, _native_manual_wrap, frozenset({"FSDP301", "FSDP302", "FSDP303"})
    ),
    "auto-wrap-size-policy": Case(
        _fairscale_auto_wrap,
        _native_size_based,
        frozenset({"FSDP301", "FSDP302", "FSDP304", "FSDP305"}),
    ),
    "checkpoint-wrapper": Case(
        _fairscale_checkpointed,
        _native_checkpointed,
        frozenset({"FSDP301", "FSDP302", "FSDP303", "FSDP306"}),
        reference=checkpoint_reference(Block),
    ),
}


runs, test_legacy_equals_native, test_legacy_equals_reference = equivalence_tests(__name__, CASES)
