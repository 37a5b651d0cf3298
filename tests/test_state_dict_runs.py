"""Proof by runs: the legacy state-dict API through compat equals the current one, tensor by tensor.

On 2 real gloo ranks (2 even on a one-GPU host: ``rank0_only`` needs a second rank) with
an FSDP1 model (three ``Block`` units and the root) after two Adam steps:

1. the legacy idioms through ``compat.fsdp.FSDP`` (``state_dict_type`` with
   ``FullStateDictConfig(offload_to_cpu=True, rank0_only=True)``,
   ``full_optim_state_dict``, ``SHARDED_STATE_DICT``, ``sharded_optim_state_dict``) and
   the migrated code on native torch (``get_model_state_dict`` /
   ``get_optimizer_state_dict`` with ``StateDictOptions``) give equal state dicts on each
   rank. The one layout difference, handled explicitly: on CPU ranks the migrated full
   *model* state dict uses ``cpu_offload=False`` (FSDP1 fails gathering with the CPU
   offload when its parameters are on the CPU, through either API), so every rank gets
   the full dict where ``rank0_only=True`` gives rank 1 ``{}``. Keys are the same clean
   parameter names in both (no ``_fsdp_wrapped_module``), optimizer states are keyed by
   parameter name in both, and sharded dicts hold ``ShardedTensor`` in both (compared
   shard by shard, with offsets).
2. a save -> load round trip through distributed checkpoint into a freshly initialised
   model (another seed) and optimizer, with the old functions
   (``compat.checkpoint.save_state_dict`` / ``load_state_dict``, torch's own and compat's
   stand-ins on ``save`` / ``load``) and the new ones (``save`` / ``load`` with
   ``get_state_dict`` / ``set_state_dict``), restores parameters and optimizer state
   exactly, and the next training step gives the same parameters as the original's.
3. compat's stand-ins for torch's legacy methods (:mod:`compat.fsdp.fallbacks`), run
   through ``compat.fsdp.FSDP`` with torch's own optimizer methods removed from the rank's
   process, give what torch's own gave.
"""

from __future__ import annotations

import pytest
import torch

from compat.features import current, dcp_state_dict
from tests import distributed
from tests.state_dicts import (
    NATIVE_SHARDED_REASON,
    assert_same,
    native_loads_unrun_fsdp1,
    native_sharded_fsdp1,
)

pytestmark = pytest.mark.distributed

if not current().fsdp1_on_cpu:  # the runs are on gloo ranks, on the CPU
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)
if not dcp_state_dict():
    pytest.skip(
        "torch.distributed.checkpoint.state_dict needs torch >= 2.2", allow_module_level=True
    )

from tests.state_dict_ranks import fallback_run, legacy_and_migrated, round_trips  # noqa: E402

WORLD = 2  # gloo on every host: NCCL on one GPU would run a single rank
needs_native_sharded = pytest.mark.skipif(not native_sharded_fsdp1(), reason=NATIVE_SHARDED_REASON)


@pytest.fixture(scope="module")
def equivalence():
    return distributed.run(legacy_and_migrated, world_size=WORLD, backend="gloo")


@pytest.fixture(scope="module")
def trips(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("dcp"))
    return distributed.run(round_trips, folder, world_size=WORLD, backend="gloo")


@pytest.fixture(scope="module")
def fallbacks():
    if not native_loads_unrun_fsdp1():
        # The stand-ins load fresh models: compat uses them only where torch has no
        # legacy methods of its own, which is not this torch.
        pytest.skip(
            "this torch's set_model_state_dict cannot load into an FSDP1 model before its "
            "first forward (no FSDP root yet), and compat's stand-ins build on it"
        )
    return distributed.run(fallback_run, world_size=WORLD, backend="gloo")


def test_full_model_state_dict_legacy_equals_migrated(equivalence):
    rank0, rank1 = equivalence
    # Both equal the gathered parameters, and each other, on rank 0.
    params = len(rank0["reference"])  # 16 parameter tensors
    assert assert_same(rank0["reference"], rank0["legacy_full"]) == params
    assert assert_same(rank0["legacy_full"], rank0["native_full"]) == params
    assert rank1["legacy_full"] == {}  # rank0_only=True
    if rank1["on_gpu"]:  # cpu_offload=True: rank 0 only, as rank0_only
        assert rank1["native_full"] == {}
    else:  # cpu_offload=False: every rank gets it
        assert assert_same(rank0["legacy_full"], rank1["native_full"]) == params


def test_full_optimizer_state_dict_legacy_equals_migrated(equivalence):
    rank0, rank1 = equivalence
    legacy = rank0["legacy_full_optim"]
    assert sorted(legacy["state"]) == sorted(rank0["reference"])  # keyed by parameter name
    # After real steps the moments are not zero: the comparison compares something.
    assert all(s["exp_avg"].abs().sum() > 0 for s in legacy["state"].values())
    moments = 3 * len(rank0["reference"])  # exp_avg, exp_avg_sq and step per parameter
    assert assert_same(legacy, rank0["native_full_optim"]) == moments
    assert assert_same(legacy, rank0["legacy_full_optim_input"]) == moments
    assert rank1["legacy_full_optim"] == rank1["native_full_optim"] == {}


@needs_native_sharded
@pytest.mark.parametrize("kind", ["sharded", "sharded_optim"])
def test_sharded_state_dicts_legacy_equal_migrated_on_each_rank(equivalence, kind):
    compared = [assert_same(r[f"legacy_{kind}"], r[f"native_{kind}"]) for r in equivalence]
    assert all(count > 0 for count in compared)


def _assemble(ranks: list[dict], key: str) -> torch.Tensor:
    """A whole tensor from each rank's ``ShardedTensor`` shards, placed at their offsets."""
    size = ranks[0][key]["size"]
    whole = torch.full(size, float("nan"))
    for sharded in ranks:
        assert sharded[key]["size"] == size
        for offsets, shard in sharded[key]["shards"]:
            index = tuple(slice(o, o + n) for o, n in zip(offsets, shard.shape))
            whole[index] = shard
    return whole


def test_sharded_model_state_dicts_are_shards_of_the_parameters(equivalence):
    reference = equivalence[0]["reference"]
    for key, expected in reference.items():
        assert torch.equal(_assemble([r["legacy_sharded"] for r in equivalence], key), expected)


def test_legacy_idioms_warn_with_their_rules_and_migrated_code_does_not(equivalence):
    for rank in equivalence:
        assert rank["legacy_codes"] == ["FSDP115", "FSDP116", "FSDP117"]
        assert rank["native_codes"] == []


@pytest.mark.parametrize(
    "variant", ["old", "old-on-new", pytest.param("new", marks=needs_native_sharded)]
)
def test_checkpoint_round_trip_restores_parameters_and_optimizer(trips, variant):
    for rank in trips:
        result = rank["variants"][variant]
        assert result["differed_before"]  # a fresh model: loading has work to do
        params = len(rank["source_params"])
        assert assert_same(rank["source_params"], result["params"]) == params
        assert assert_same(rank["source_optim"], result["optim"]) == 3 * params
        assert assert_same(rank["source_next"], result["next"]) == params


def test_checkpoint_round_trips_warn_with_their_rules(trips):
    for rank in trips:
        codes = rank["variants"]
        assert {"FSDP115", "FSDP120", "FSDP121"} <= set(codes["old"]["codes"])
        assert {"FSDP115", "FSDP120", "FSDP121"} <= set(codes["old-on-new"]["codes"])
        if "new" in codes:  # run where torch takes the sharded dicts it saves
            assert codes["new"]["codes"] == []


@pytest.mark.parametrize(
    "name",
    [
        "full",
        pytest.param("sharded", marks=needs_native_sharded),
        "full_loaded",
        "full_optim",
        "sharded_optim",
        "shard_full",
        "scatter_full",
        "flatten_sharded",
        "rekey",
    ],
)
def test_fallbacks_give_what_torchs_own_methods_give(fallbacks, name):
    compared = [assert_same(r["own"][name], r["fallback"][name], name) for r in fallbacks]
    if name in ("full", "full_optim"):  # rank0_only: rank 1 holds {} in both
        assert compared[0] > 0 and compared[1] == 0
    else:
        assert all(count > 0 for count in compared)


def test_fallbacks_warn_through_compat(fallbacks):
    for rank in fallbacks:
        assert rank["fallback_codes"] == ["FSDP116", "FSDP117"]
        assert rank["fallback_missing"] == []  # torch's own methods were gone


def test_fallback_rekey_refuses_flattened_fsdp_parameters(fallbacks):
    for rank in fallbacks:
        assert "use_orig_params=True" in rank["rekey_flat_error"]
