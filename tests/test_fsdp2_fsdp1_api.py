"""FSDP1's model API on a bridged model (``compat.fsdp2.fsdp1_api``), against real FSDP1.

One 2-rank gloo spawn builds the same model with FSDP1 and with the bridge, drives
both through the same FSDP1 code (``model.state_dict()``, ``FSDP.state_dict_type``
with each config, ``FSDP.optim_state_dict`` and ``optim_state_dict_to_load``,
``clip_grad_norm_``, ``no_sync``) with the class calls going to
``FSDP1Api`` for the bridge, and compares what each returns, on every rank. FSDP1's
``offload_to_cpu`` hangs on CPU ranks, so the configs offload only where the ranks have
GPUs (NCCL, two GPUs).
"""

from __future__ import annotations

import functools
import io
from typing import Any, Callable

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn

from compat.checkpointing import clean_name
from compat.fsdp2.availability import fsdp2_on_cpu
from tests import distributed
from tests.models import Block, batch, make_model

if not fsdp2_on_cpu():
    pytest.skip("the bridge's CPU runs need torch >= 2.7", allow_module_level=True)

from torch.distributed.fsdp import (  # noqa: E402
    FullOptimStateDictConfig,
    FullStateDictConfig,
    FullyShardedDataParallel,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    StateDictType,
)
from torch.distributed.fsdp.wrap import ModuleWrapPolicy  # noqa: E402

from compat.fsdp2 import FSDP1Api, fully_shard_like_fsdp1  # noqa: E402


def _plain(value: Any) -> Any:
    """A state dict's tensors as this rank's plain CPU tensors (shards as local rows)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_local"):  # a DTensor: this rank's chunk
        value = value.to_local()
    elif hasattr(value, "local_shards"):  # FSDP1's ShardedTensor: this rank's chunk
        shards = value.local_shards()
        value = shards[0].tensor if shards else torch.empty(0)
    if isinstance(value, torch.Tensor) and not value.numel():
        return ("tensor", str(value.device), torch.empty(0))  # a rank with no rows
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.device), value.detach().clone().cpu())
    return value


def _step(model: nn.Module, optim: torch.optim.Optimizer, rank: int, step: int) -> float:
    x, y = batch(rank, step, distributed.device_for(rank))
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optim.step()
    optim.zero_grad()
    return loss.item()


def _sharded_round_trip(
    model: nn.Module, optim: torch.optim.Optimizer, api: Any, rank: int, checkpoint: str
) -> tuple[list[float], list[float]]:
    """torch's recipe for FSDP1's sharded checkpoints, resumed after two more steps.

    The optimizer comes back through ``load_sharded_optimizer_state_dict``, which gives
    FSDP1's ``ShardedTensor`` rows, and ``optim_state_dict_to_load``.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.optimizer import load_sharded_optimizer_state_dict

    with api.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = {"model": model.state_dict(), "optim": api.optim_state_dict(model, optim)}
        dcp.save(state, checkpoint_id=checkpoint)
    drifted = [_step(model, optim, rank, s) for s in range(20, 22)]
    with api.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = {"model": model.state_dict()}
        dcp.load(state, checkpoint_id=checkpoint)
        model.load_state_dict(state["model"])
        loaded = load_sharded_optimizer_state_dict(
            model_state_dict=state["model"],
            optimizer_key="optim",
            storage_reader=dcp.FileSystemReader(checkpoint),
        )
        optim.load_state_dict(api.optim_state_dict_to_load(model, optim, loaded["optim"]))
    return drifted, [_step(model, optim, rank, s) for s in range(20, 22)]


def _drive(model: nn.Module, api: Any, rank: int, checkpoint: str) -> dict[str, Any]:
    """The same FSDP1 code on either model: what each call gave."""
    out: dict[str, Any] = {"default": _plain(model.state_dict())}
    optim = torch.optim.Adam(model.parameters(), lr=0.01)
    out["losses"] = [_step(model, optim, rank, s) for s in range(2)]
    # Gradients accumulated over two backward passes, the first without reduction.
    with model.no_sync():
        x, y = batch(rank, 5, distributed.device_for(rank))
        nn.functional.mse_loss(model(x), y).backward()
    x, y = batch(rank, 6, distributed.device_for(rank))
    nn.functional.mse_loss(model(x), y).backward()
    out["norm"] = float(model.clip_grad_norm_(0.05))
    optim.step()
    optim.zero_grad()
    # FSDP1's offload_to_cpu hangs on CPU ranks (gloo): offloading is a GPU-only case.
    offload = next(model.parameters()).device.type == "cuda"
    configs = {
        "full-rank0": (
            StateDictType.FULL_STATE_DICT,
            FullStateDictConfig(offload_to_cpu=offload, rank0_only=True),
            FullOptimStateDictConfig(offload_to_cpu=offload, rank0_only=True),
        ),
        "full-all": (
            StateDictType.FULL_STATE_DICT,
            FullStateDictConfig(offload_to_cpu=offload),
            FullOptimStateDictConfig(offload_to_cpu=offload),
        ),
        "sharded": (
            StateDictType.SHARDED_STATE_DICT,
            ShardedStateDictConfig(offload_to_cpu=offload),
            ShardedOptimStateDictConfig(offload_to_cpu=offload),
        ),
    }
    for name, (kind, config, optim_config) in configs.items():
        with api.state_dict_type(model, kind, config, optim_config):
            out[name] = _plain(model.state_dict())
            out[f"{name}-optim"] = _plain(api.optim_state_dict(model, optim))
    out["sharded-rows"] = _plain(api.sharded_optim_state_dict(model, optim))
    out["full-legacy"] = _plain(api.full_optim_state_dict(model, optim))
    out["full-legacy-all"] = _plain(api.full_optim_state_dict(model, optim, rank0_only=False))
    out["type-after"] = str(api.get_state_dict_type(model).state_dict_type)
    # A full checkpoint of both, loaded back after two more steps: training resumes
    # from it exactly (the model's and the optimizer's state).
    full = FullStateDictConfig(offload_to_cpu=offload)
    full_optim = FullOptimStateDictConfig(offload_to_cpu=offload)
    with api.state_dict_type(model, StateDictType.FULL_STATE_DICT, full, full_optim):
        saved, saved_optim = model.state_dict(), api.optim_state_dict(model, optim)
    out["drifted"] = [_step(model, optim, rank, s) for s in range(10, 12)]
    previous = api.set_state_dict_type(model, StateDictType.FULL_STATE_DICT, full, full_optim)
    out["previous"] = str(previous.state_dict_type)
    model.load_state_dict(saved)
    optim.load_state_dict(api.optim_state_dict_to_load(model, optim, saved_optim))
    out["resumed"] = [_step(model, optim, rank, s) for s in range(10, 12)]
    out["sharded-drifted"], out["sharded-resumed"] = _sharded_round_trip(
        model, optim, api, rank, checkpoint
    )
    # The whole parameters in place, written to, and kept after the block (writeback).
    with api.summon_full_params(model):
        out["summoned"] = {clean_name(n): _plain(p) for n, p in model.named_parameters()}
        with torch.no_grad():
            # The same write on every rank (where ranks write differently, each keeps its
            # own part: FSDP1 a slice of its flat parameter, the bridge its rows).
            model.embed.weight.add_(0.5)
    out["written-back"] = _plain(model.state_dict())
    out.update(_local(model, api, rank, "local", resume=False))
    return out


def _saved(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` as a checkpoint file gives it back (FSDP1's local tensors are views)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def _local(model: nn.Module, api: Any, rank: int, name: str, resume: bool) -> dict[str, Any]:
    """FSDP1's local state dict: what it holds, and a resume from it after two steps.

    FSDP1 cannot load its own with ``use_orig_params=True`` (torch 2.13: unexpected
    ``_flat_param`` keys), so there ``resume`` is False and only what it holds counts.
    """
    optim = torch.optim.SGD(model.parameters(), lr=0.05)
    with api.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        local = _saved(model.state_dict())
    out = {
        name: _plain(local),
        f"{name}-sizes": {k: tuple(v.size()) for k, v in local.items()},
        f"{name}-offsets": {
            k: [s.metadata.shard_offsets for s in v.local_shards()]
            for k, v in local.items()
            if hasattr(v, "local_shards")
        },
        f"{name}-drifted": [_step(model, optim, rank, s) for s in range(30, 32)],
    }
    if resume:
        with api.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
            model.load_state_dict(local)
    out[f"{name}-resumed"] = [_step(model, optim, rank, s) for s in range(30, 32)] if resume else []
    with api.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        state = api.optim_state_dict(model, optim)  # FSDP1's sharded one
    # The group lists its names in the order of FSDP1's flat parameters (the root's
    # last) where use_orig_params is False: the set is what both keep.
    groups = [sorted(group["params"]) for group in state["param_groups"]]
    out[f"{name}-optim"] = {"state": _plain(state["state"]), "names": groups}
    return out


def _scatter(model: nn.Module, api: Any, rank: int) -> dict[str, Any]:
    """FSDP1's legacy pair: the full state on rank 0, scattered back, then loaded.

    As real checkpoint handlers call it: no ``optim=``, FSDP1's default state dict.
    """
    optim = torch.optim.Adam(model.parameters(), lr=0.01)
    out = {"scatter-trained": [_step(model, optim, rank, s) for s in range(2)]}
    saved, full_optim = model.state_dict(), api.full_optim_state_dict(model, optim)
    out["scatter-drifted"] = [_step(model, optim, rank, s) for s in range(14, 17)]
    model.load_state_dict(saved)
    given = full_optim if rank == 0 else None
    optim.load_state_dict(api.scatter_full_optim_state_dict(given, model))
    out["scatter-resumed"] = [_step(model, optim, rank, s) for s in range(14, 17)]
    out.update(_local(model, api, rank, "local-flat", resume=True))
    return out


def _both(rank: int, world_size: int, folder: str) -> dict[str, Any]:
    policy = ModuleWrapPolicy({Block})
    sides: dict[str, Callable[[nn.Module], nn.Module]] = {
        "fsdp1": functools.partial(FullyShardedDataParallel, use_orig_params=True),
        "bridge": functools.partial(fully_shard_like_fsdp1, use_orig_params=True),
    }
    apis = {"fsdp1": FullyShardedDataParallel, "bridge": FSDP1Api}
    results = {}
    device = distributed.device_for(rank)  # a GPU per rank where there are two
    for side, shard in sides.items():
        model = shard(make_model(), auto_wrap_policy=policy, device_id=device)
        results[side] = _drive(model, apis[side], rank, f"{folder}/{side}")
    # FSDP1's legacy optimizer loads hold only with its default flat parameters.
    for side, shard in (("fsdp1", FullyShardedDataParallel), ("bridge", fully_shard_like_fsdp1)):
        model = shard(make_model(), auto_wrap_policy=policy, device_id=device)
        results[side].update(_scatter(model, apis[side], rank))
    # A local checkpoint FSDP1 wrote loads into a bridged model (its own flat layout).
    fsdp1 = FullyShardedDataParallel(make_model(), auto_wrap_policy=policy, device_id=device)
    optim = torch.optim.SGD(fsdp1.parameters(), lr=0.05)
    [_step(fsdp1, optim, rank, s) for s in range(2)]
    with FullyShardedDataParallel.state_dict_type(fsdp1, StateDictType.LOCAL_STATE_DICT):
        written = _saved(fsdp1.state_dict())
    bridged = fully_shard_like_fsdp1(make_model(seed=3), auto_wrap_policy=policy, device_id=device)
    with FSDP1Api.state_dict_type(bridged, StateDictType.LOCAL_STATE_DICT):
        bridged.load_state_dict(written)
    results["fsdp1-local-written"] = _plain(fsdp1.state_dict())  # both full, by default
    results["bridge-local-read"] = _plain(bridged.state_dict())
    # torch's own functions still see FSDP2's state dict on a bridged model.
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    model = fully_shard_like_fsdp1(make_model(), auto_wrap_policy=policy, device_id=device)
    sharded = get_model_state_dict(model)
    results["torch-sees-shards"] = all(hasattr(v, "to_local") for v in sharded.values())
    # FSDP1's own class calls are torch's, unpatched: on a bridged model they find no
    # FSDP1 unit (FSDP1Api's are the ones that take it).
    previous = FullyShardedDataParallel.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)
    results["fsdp1s-class-finds-nothing"] = previous.state_dict_type is None
    # On an inner unit (no bridged root in it) FSDP1's own summon runs, as before the
    # rewrite: it finds no FSDP1 unit there and leaves the DTensors as they are.
    with FSDP1Api.summon_full_params(model.blocks[0]):
        results["inner-summoned"] = type(model.blocks[0].fc1.weight).__name__
    with FullyShardedDataParallel.summon_full_params(model.blocks[0]):
        results["inner-summoned-by-fsdp1"] = type(model.blocks[0].fc1.weight).__name__
    results["rank"] = dist.get_rank()
    return results


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("checkpoints")
    return distributed.run(_both, str(folder), world_size=2, timeout=300)


def _same(one: Any, other: Any, where: str = "") -> None:
    if isinstance(one, dict):
        assert isinstance(other, dict) and one.keys() == other.keys(), where
        for key in one:
            _same(one[key], other[key], f"{where}.{key}")
    elif isinstance(one, list):
        assert isinstance(other, list) and len(one) == len(other), where
        for i, (a, b) in enumerate(zip(one, other)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(one, tuple) and one and one[0] == "tensor":
        assert other[1] == one[1], f"{where}: device {other[1]} vs FSDP1's {one[1]}"
        torch.testing.assert_close(other[2], one[2], atol=1e-6, rtol=1e-5, msg=where)
    elif isinstance(one, float):
        assert other == pytest.approx(one, rel=1e-5, abs=1e-7), where
    else:
        assert other == one, where


LOCAL_PARTS = ("", "-sizes", "-offsets", "-drifted", "-resumed", "-optim")
ENTRIES = [
    "default",
    "losses",
    "norm",
    "full-rank0",
    "full-rank0-optim",
    "full-all",
    "full-all-optim",
    "sharded",
    "sharded-rows",
    "type-after",
    "drifted",
    "previous",
    "resumed",
    "scatter-trained",
    "scatter-drifted",
    "scatter-resumed",
    *(f"{name}{part}" for name in ("local", "local-flat") for part in LOCAL_PARTS),
    "sharded-drifted",
    "sharded-resumed",
    "summoned",
    "written-back",
]


@pytest.mark.distributed
@pytest.mark.parametrize("entry", ENTRIES)
def test_fsdp1_code_gets_what_fsdp1_gives(runs, entry):
    for result in runs:
        _same(result["fsdp1"][entry], result["bridge"][entry], entry)


@pytest.mark.distributed
def test_rank0_only_leaves_other_ranks_empty_and_the_rest_full(runs):
    by_rank = {r["rank"]: r["bridge"] for r in runs}
    assert by_rank[1]["full-rank0"] == {} and by_rank[0]["full-rank0"]
    assert by_rank[0]["full-all"].keys() == by_rank[1]["full-all"].keys()
    assert by_rank[0]["resumed"] == pytest.approx(by_rank[0]["drifted"])
    for bridge in by_rank.values():
        assert bridge["scatter-resumed"] == pytest.approx(bridge["scatter-drifted"])


@pytest.mark.distributed
def test_the_legacy_full_optimizer_state_is_the_full_state_on_rank_0(runs):
    # FSDP1's own legacy call is held against its current one: with use_orig_params=True
    # (torch 2.13) it hands out exp_avg equal to exp_avg_sq, one buffer gathered twice.
    for result in runs:
        bridge = result["bridge"]
        _same(result["fsdp1"]["full-all-optim"], bridge["full-legacy-all"], "all ranks")
        expected = result["fsdp1"]["full-all-optim"] if result["rank"] == 0 else {}
        _same(expected, bridge["full-legacy"], "rank 0 only")


@pytest.mark.distributed
def test_a_sharded_checkpoint_resumes_training_exactly(runs):
    for result in runs:
        bridge = result["bridge"]
        assert bridge["sharded-resumed"] == pytest.approx(bridge["sharded-drifted"])


@pytest.mark.distributed
def test_sharded_optimizer_state_holds_fsdp1s_rows(runs):
    for result in runs:
        fsdp1, bridge = result["fsdp1"]["sharded-optim"], result["bridge"]["sharded-optim"]
        assert fsdp1["state"].keys() == bridge["state"].keys()
        for name, values in fsdp1["state"].items():
            for key in ("exp_avg", "exp_avg_sq"):
                _same(values[key], bridge["state"][name][key], f"{name}.{key}")


@pytest.mark.distributed
def test_a_local_state_dict_resumes_training_exactly(runs):
    for result in runs:
        bridge = result["bridge"]
        assert bridge["local-flat-resumed"] == pytest.approx(bridge["local-flat-drifted"])
        assert any(key.endswith("_flat_param") for key in bridge["local-flat"])


@pytest.mark.distributed
def test_a_local_checkpoint_fsdp1_wrote_loads_into_a_bridged_model(runs):
    for result in runs:
        _same(result["fsdp1-local-written"], result["bridge-local-read"], "local")


@pytest.mark.distributed
def test_summoning_an_inner_unit_is_fsdp1s_own(runs):
    for result in runs:
        assert result["inner-summoned"] == result["inner-summoned-by-fsdp1"] == "DTensor"


@pytest.mark.distributed
def test_torch_sees_fsdp2s_state_dict(runs):
    for result in runs:
        assert result["torch-sees-shards"]


@pytest.mark.distributed
def test_fsdp1s_own_class_calls_are_torchs_and_find_no_fsdp1_unit(runs):
    for result in runs:
        assert result["fsdp1s-class-finds-nothing"]


def test_the_rewrite_targets_exactly_the_calls_fsdp1api_has():
    from codemods.rules.fsdp401.kept import FSDP1_API
    from compat.fsdp2.fsdp1_api import CLASS_CALLS

    assert sorted(FSDP1_API) == sorted(CLASS_CALLS)


def _kept_after_a_step(rank: int, world_size: int) -> dict[str, bool]:
    """Per side, whether a full state dict taken before a step still holds its values."""
    kept = {}
    for side, wrap, api in (
        ("fsdp1", FullyShardedDataParallel, FullyShardedDataParallel),
        ("bridge", fully_shard_like_fsdp1, FSDP1Api),
    ):
        torch.manual_seed(0)
        device = distributed.device_for(rank)
        model = wrap(make_model(), auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=device)
        optim = torch.optim.SGD(model.parameters(), lr=0.1)
        _step(model, optim, rank, 0)
        with api.state_dict_type(model, StateDictType.FULL_STATE_DICT):
            saved = model.state_dict()
        before = {k: v.detach().clone() for k, v in saved.items()}
        _step(model, optim, rank, 1)
        kept[side] = bool(saved) and all(torch.equal(saved[k], before[k]) for k in saved)
    return kept


@pytest.mark.distributed
def test_a_full_state_dict_on_one_rank_is_a_copy_as_fsdp1s():
    """On one rank torch's function hands out the parameters' own memory; FSDP1 copies."""
    (kept,) = distributed.run(_kept_after_a_step, world_size=1)
    assert kept == {"fsdp1": True, "bridge": True}
