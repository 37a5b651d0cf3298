"""compat.fsdp2: FSDP1 configurations applied with FSDP2's fully_shard."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch

from compat.features import current

if not current().fsdp2:
    # On torch without FSDP2 the API must say so plainly.
    def test_fully_shard_by_policy_needs_torch_2_4():
        from compat.fsdp2 import fully_shard_by_policy

        with pytest.raises(ImportError, match=r"FSDP2 \(fully_shard\) needs torch >= 2.4"):
            fully_shard_by_policy(torch.nn.Linear(2, 2))

    pytest.skip("this torch has no FSDP2", allow_module_level=True)

from torch.distributed.fsdp import CPUOffload, MixedPrecision, ShardingStrategy  # noqa: E402

from compat import FSDPDeprecationWarning  # noqa: E402
from compat.fsdp2 import fsdp2_module, translate_fsdp1_arguments  # noqa: E402
from tests import distributed  # noqa: E402
from tests.equivalence import warning_codes  # noqa: E402
from tests.models import Block, Head, batch, is_block, legacy_policy, make_model  # noqa: E402


def _translate(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = translate_fsdp1_arguments(**kwargs)
    return out, caught


@pytest.mark.parametrize(
    ("strategy", "reshard"),
    [
        (ShardingStrategy.FULL_SHARD, True),
        (ShardingStrategy.SHARD_GRAD_OP, False),
        ("FULL_SHARD", True),
        ("SHARD_GRAD_OP", False),
        (None, True),
    ],
)
def test_sharding_strategy_becomes_reshard_after_forward(strategy, reshard):
    out, caught = _translate(sharding_strategy=strategy)
    assert out == {"reshard_after_forward": reshard} and not caught


def test_no_shard_has_no_fsdp2_equivalent():
    with pytest.raises(ValueError, match="NO_SHARD has no FSDP2 equivalent"):
        translate_fsdp1_arguments(sharding_strategy=ShardingStrategy.NO_SHARD)


def test_cpu_offload_becomes_an_offload_policy():
    out, _ = _translate(cpu_offload=CPUOffload(offload_params=True))
    assert isinstance(out["offload_policy"], fsdp2_module().CPUOffloadPolicy)
    out, _ = _translate(cpu_offload=CPUOffload(offload_params=False))
    assert "offload_policy" not in out


def test_mixed_precision_becomes_a_policy():
    precision = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    out, caught = _translate(mixed_precision=precision)
    policy = out["mp_policy"]
    assert (policy.param_dtype, policy.reduce_dtype) == (torch.bfloat16, torch.float32)
    assert not caught
    _, caught = _translate(mixed_precision=MixedPrecision(buffer_dtype=torch.float16))
    assert warning_codes(caught) == {"FSDP401"} and "buffer_dtype" in str(caught[0].message)


@pytest.mark.parametrize(
    "argument",
    [
        "backward_prefetch",
        "forward_prefetch",
        "sync_module_states",
        "use_orig_params",
        "limit_all_gathers",
        "device_id",
        "param_init_fn",
    ],
)
def test_arguments_without_fsdp2_meaning_warn_by_name(argument):
    _, caught = _translate(**{argument: None})
    assert warning_codes(caught) == {"FSDP401"} and f"`{argument}`" in str(caught[0].message)


def test_unknown_argument_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'flatten_parameters'"):
        translate_fsdp1_arguments(flatten_parameters=True)


def test_ignored_modules():
    head = Head()
    if "ignored_params" in __import__("inspect").signature(fsdp2_module().fully_shard).parameters:
        out, _ = _translate(ignored_modules=[head])
        assert out["ignored_params"] == set(head.parameters())
    else:
        with pytest.raises(NotImplementedError, match="torch >= 2.7"):
            translate_fsdp1_arguments(ignored_modules=[head])


# Real runs: FSDP1 and fully_shard_by_policy on the same model, seed and data ----------------

STEPS = 5


def _policies():
    from torch.distributed.fsdp.wrap import CustomPolicy, ModuleWrapPolicy

    import compat.fsdp.wrap as cw

    return {
        "classes": {Block},
        "module-wrap-policy": ModuleWrapPolicy({Block, Head}),
        "custom-policy": CustomPolicy(is_block),
        "size-based": cw.size_based_auto_wrap_policy(min_nonwrapped_numel=500),
        "size-based-small": functools.partial(
            cw.size_based_auto_wrap_policy, min_nonwrapped_numel=100
        ),
        "legacy-callable": legacy_policy,
    }


def _train(model, rank):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(STEPS):
        x, y = batch(rank, step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def _compare(rank: int, world_size: int) -> dict:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from compat.checkpointing import apply_activation_checkpointing, clean_name
    from compat.fsdp2 import fsdp2_unit_names, fully_shard_by_policy
    from compat.policies import normalize_policy
    from tests.equivalence import native_fsdp

    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FSDPDeprecationWarning)  # the legacy callable's
        for name, policy in _policies().items():
            fsdp1 = native_fsdp(make_model(), auto_wrap_policy=normalize_policy(policy))
            fsdp2 = fully_shard_by_policy(make_model(), policy)
            results[name] = {
                "fsdp1_units": sorted(
                    clean_name(n)
                    for n, m in fsdp1.named_modules()
                    if isinstance(m, FullyShardedDataParallel)
                ),
                "fsdp2_units": sorted(fsdp2_unit_names(fsdp2)),
                "fsdp1_losses": _train(fsdp1, rank),
                "fsdp2_losses": _train(fsdp2, rank),
            }
        # One node of 2 ranks: HYBRID_SHARD is a (1 replicate x 2 shard) mesh, so it must
        # train exactly like FULL_SHARD. (FSDP1's own HYBRID_SHARD is no reference on CPU:
        # it sizes the node by CUDA devices, finds none and falls back to NO_SHARD.)
        hybrid = fully_shard_by_policy(
            make_model(), {Block}, sharding_strategy=ShardingStrategy.HYBRID_SHARD
        )
        results["hybrid"] = {
            "mesh": dict(
                zip(
                    hybrid.embed.weight.device_mesh.mesh_dim_names,
                    hybrid.embed.weight.device_mesh.shape,
                )
            ),
            "losses": _train(hybrid, rank),
        }
        # Activation checkpointing on both sharded models.
        fsdp1 = native_fsdp(make_model(), auto_wrap_policy=normalize_policy({Block}))
        fsdp2 = fully_shard_by_policy(
            make_model(), {Block}, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP
        )
        results["checkpointed"] = {
            "fsdp1": apply_activation_checkpointing(fsdp1, Block),
            "fsdp2": apply_activation_checkpointing(fsdp2, Block),
            "fsdp1_again": apply_activation_checkpointing(fsdp1, Block),
            "fsdp1_losses": _train(fsdp1, rank),
            "fsdp2_losses": _train(fsdp2, rank),
        }
    return results


@pytest.fixture(scope="module")
def runs():
    if not current().fsdp2_on_cpu and not torch.cuda.is_available():
        pytest.skip("this torch runs FSDP2 only on CUDA")
    return distributed.run(_compare, backend=distributed.backend_for_tests(), timeout=400)


@pytest.mark.distributed
@pytest.mark.parametrize(
    "policy",
    [
        "classes",
        "module-wrap-policy",
        "custom-policy",
        "size-based",
        "size-based-small",
        "legacy-callable",
    ],
)
def test_fully_shard_by_policy_matches_fsdp1(runs, policy):
    if policy == "custom-policy" and not current().custom_policy:
        pytest.skip("CustomPolicy needs torch >= 2.1")
    for rank_result in runs:
        result = rank_result[policy]
        assert result["fsdp2_units"] == result["fsdp1_units"] and len(result["fsdp1_units"]) > 1
        assert result["fsdp2_losses"] == pytest.approx(result["fsdp1_losses"], abs=1e-5)


@pytest.mark.distributed
def test_activation_checkpointing_on_fsdp1_and_fsdp2_models(runs):
    for rank_result in runs:
        result = rank_result["checkpointed"]
        assert result["fsdp1"] == result["fsdp2"] == ["blocks.0", "blocks.1", "blocks.2"]
        assert result["fsdp1_again"] == []
        assert result["fsdp2_losses"] == pytest.approx(result["fsdp1_losses"], abs=1e-5)


@pytest.mark.distributed
def test_hybrid_shard_is_a_2d_mesh_training_like_full_shard_on_one_node(runs):
    for rank_result in runs:
        assert rank_result["hybrid"]["mesh"] == {"replicate": 1, "shard": 2}
        expected = rank_result["classes"]["fsdp1_losses"]
        assert rank_result["hybrid"]["losses"] == pytest.approx(expected, abs=1e-5)
