"""compat.fsdp2: FSDP1 configurations applied with FSDP2's fully_shard."""

from __future__ import annotations

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
from torch.distributed.fsdp.wrap import ModuleWrapPolicy  # noqa: E402

from compat.fsdp2 import fsdp2_module, translate_fsdp1_arguments  # noqa: E402
from tests.models import Block, Head, make_model  # noqa: E402

#: The bridge's meshes and runs need torch.distributed.fsdp.fully_shard (2.6), on CPU 2.7.
needs_bridge = pytest.mark.skipif(
    not current().fsdp2_on_cpu, reason="the bridge on CPU ranks needs torch >= 2.7"
)


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


@pytest.fixture
def one_rank():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@needs_bridge
def test_no_shard_replicates_on_a_world_by_one_mesh(one_rank):
    # It used to raise: NO_SHARD is fully_shard over (replicate=world, shard=1).
    out, caught = _translate(sharding_strategy=ShardingStrategy.NO_SHARD)
    mesh = out["mesh"]
    assert (mesh.mesh_dim_names, tuple(mesh.shape)) == (("replicate", "shard"), (1, 1))
    assert out["reshard_after_forward"] is False and not caught


@needs_bridge
def test_hybrid_shard_sizes_shard_groups_by_device_count_not_local_world_size(
    one_rank, monkeypatch
):
    # FSDP1 shards within torch.<device>.device_count() ranks (1 on CPU); LOCAL_WORLD_SIZE
    # (which the helper used to read) says nothing to FSDP1.
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    out, _ = _translate(
        sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_id=torch.device("cpu")
    )
    mesh = out["mesh"]
    assert (mesh.mesh_dim_names, tuple(mesh.shape)) == (("replicate", "shard"), (1, 1))
    assert out["reshard_after_forward"] is True


def test_cpu_offload_becomes_an_offload_policy():
    out, _ = _translate(cpu_offload=CPUOffload(offload_params=True))
    assert isinstance(out["offload_policy"], fsdp2_module().CPUOffloadPolicy)
    out, _ = _translate(cpu_offload=CPUOffload(offload_params=False))
    assert "offload_policy" not in out


def test_mixed_precision_becomes_a_policy_that_casts_the_roots_inputs():
    # FSDP1's MixedPrecision has cast_forward_inputs=False, but its root casts its inputs
    # (cast_root_forward_inputs=True): the root's policy must cast, or an fp32 input to a
    # bf16 model fails. (The helper used to pass cast_forward_inputs=False through.)
    precision = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    out, caught = _translate(mixed_precision=precision)
    policy = out["mp_policy"]
    assert (policy.param_dtype, policy.reduce_dtype) == (torch.bfloat16, torch.float32)
    assert policy.cast_forward_inputs is True and not caught


@needs_bridge
def test_an_fp32_input_to_a_bf16_model_runs_as_under_fsdp1(one_rank):
    from torch.distributed.fsdp import FullyShardedDataParallel

    from compat.fsdp2 import fully_shard_like_fsdp1

    precision = MixedPrecision(param_dtype=torch.bfloat16)  # cast_forward_inputs=False
    cpu = torch.device("cpu")
    x = torch.randn(4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fsdp1 = FullyShardedDataParallel(
            make_model(),
            auto_wrap_policy=ModuleWrapPolicy({Block}),
            mixed_precision=precision,
            device_id=cpu,
        )
    from compat.fsdp2 import BridgeDifferenceWarning

    with pytest.warns(BridgeDifferenceWarning, match="use_orig_params=False"):  # FSDP1's default
        fsdp2 = fully_shard_like_fsdp1(
            make_model(), auto_wrap_policy={Block}, mixed_precision=precision, device_id=cpu
        )
    torch.testing.assert_close(fsdp2(x), fsdp1(x), atol=0, rtol=0)


@pytest.mark.parametrize(
    "argument", ["backward_prefetch", "forward_prefetch", "use_orig_params", "limit_all_gathers"]
)
def test_arguments_that_change_no_numbers_are_accepted_silently(argument):
    out, caught = _translate(**{argument: True})
    assert out == {"reshard_after_forward": True} and not caught


@pytest.mark.parametrize(
    ("argument", "value"), [("sync_module_states", True), ("param_init_fn", lambda m: None)]
)
def test_steps_before_fully_shard_are_not_dropped(argument, value):
    # The helper used to drop them with a warning; they are the bridge's to carry out.
    with pytest.raises(
        ValueError, match=f"{argument} is a step before fully_shard.*fully_shard_like_fsdp1"
    ):
        translate_fsdp1_arguments(**{argument: value})
    out, _ = _translate(**{argument: None if argument == "param_init_fn" else False})
    assert out == {"reshard_after_forward": True}


@needs_bridge
def test_device_id_sets_the_meshs_device_type(one_rank):
    out, _ = _translate(device_id=torch.device("cpu"))
    assert out["mesh"].device_type == "cpu" and out["mesh"].ndim == 1


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


# The real runs of fully_shard_by_policy against FSDP1 (every policy form, activation
# checkpointing) are in tests/test_fsdp2_bridge.py, inside its 2-rank spawn: the helper is
# the bridge's policy-first spelling, and one spawn serves both.


def test_a_cuda_build_with_no_usable_gpu_computes_on_the_cpu(monkeypatch):
    """A CUDA build names CUDA as its accelerator on a host without a GPU, and in a
    process whose ``CUDA_VISIBLE_DEVICES`` hides them (gloo ranks on a GPU machine)."""
    from compat.fsdp2.mesh import resolve_device

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:
        pytest.skip("this torch has no torch.accelerator")
    monkeypatch.setattr(accelerator, "current_accelerator", lambda *a, **k: torch.device("cuda"))
    monkeypatch.setattr(accelerator, "is_available", lambda: False)
    assert resolve_device(make_model(), None, set()) == torch.device("cpu")
