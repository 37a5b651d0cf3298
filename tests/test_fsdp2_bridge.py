"""compat.fsdp2's bridge: an FSDP1 constructor call carried out with FSDP2 (issue 31).

Proven against real FSDP1 on real process groups (gloo), in two spawns: one of 2 ranks
for every 2-rank feature, one of 4 ranks for hybrid sharding, 2-D meshes and
sub-groups. Each case builds the same model for FSDP1 and for the bridge and compares
the units, the initial full state dict, the loss at every step on every rank and the
final full state dict. Preconditions the bridge refuses are checked without a spawn
where a 1-rank group is enough, and inside the spawns where they need more ranks.
FSDP1's ``sync_module_states`` refuses CPU tensors: its comparison runs on a GPU
(``gpu`` marker); on CPU the bridge's broadcast is checked against rank 0's values.
The 2-rank spawn also carries the runs of ``fully_shard_by_policy`` (the bridge's
policy-first spelling) that ``tests/test_fsdp2.py`` had in a spawn of its own.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import warnings
from typing import Any, Callable

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn

from compat.fsdp2.availability import fsdp2_on_cpu
from tests import distributed
from tests.models import Block, Head, Net, make_model, train

# Not compat.features.current(): it imports Lightning, a second in every spawned rank.
if not fsdp2_on_cpu():
    pytest.skip("the bridge's CPU runs need torch >= 2.7", allow_module_level=True)

from torch.distributed.fsdp import (  # noqa: E402
    FullyShardedDataParallel,
    MixedPrecision,
    ShardingStrategy,
)
from torch.distributed.fsdp.wrap import (  # noqa: E402
    CustomPolicy,
    ModuleWrapPolicy,
    size_based_auto_wrap_policy,
)

from compat.fsdp2 import (  # noqa: E402
    RankMismatchWarning,
    fsdp2_unit_names,
    fully_shard_like_fsdp1,
)

CPU = torch.device("cpu")
STEPS = 3


# Models ----------------------------------------------------------------------------------


class NormNet(Net):
    """Net with a BatchNorm: FSDP1 keeps it out of mixed precision, as a unit of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.embed(x))
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class BufferedBlock(Block):
    """A Block with a persistent and a non-persistent buffer, both used in forward."""

    def __init__(self, width: int = 16) -> None:
        super().__init__(width)
        self.register_buffer("scale", torch.rand(width) + 0.5)
        self.register_buffer("shift", torch.randn(width), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * self.scale + self.shift


class BufferedNet(Net):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(BufferedBlock() for _ in range(3))
        self.register_buffer("offset", torch.randn(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + self.offset


def seeded(cls: type[nn.Module], seed: int = 0) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(seed)
        return cls()

    return build


def on_meta() -> nn.Module:
    with torch.device("meta"):
        return Net()


def init_normal(module: nn.Module) -> None:
    """A param_init_fn drawing from the global RNG, so that the order of units shows."""
    module.to_empty(device=CPU, recurse=False)
    with torch.no_grad():
        for param in module.parameters(recurse=False):
            param.normal_(std=0.2)


def head_apart(module: nn.Module) -> Any:
    if isinstance(module, Head):
        return {"sharding_strategy": ShardingStrategy.SHARD_GRAD_OP}
    return isinstance(module, Block)


# What runs inside the ranks ----------------------------------------------------------------


def _full_state(model: nn.Module) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=False)  # FSDP1 on CPU ranks
    state = get_model_state_dict(model, options=options)
    return {k: v.detach().float().cpu().clone() for k, v in state.items()}


def _units(model: nn.Module) -> list[str]:
    from compat.checkpointing import clean_name

    fsdp1 = [n for n, m in model.named_modules() if isinstance(m, FullyShardedDataParallel)]
    if fsdp1:
        return sorted(clean_name(n) for n in fsdp1)
    return sorted(fsdp2_unit_names(model))


def _mesh_of(model: nn.Module) -> Any:
    """An FSDP2 model's mesh as (global ranks, dimension names); None for FSDP1."""
    mesh = getattr(model.embed.weight, "device_mesh", None)
    return None if mesh is None else (mesh.mesh.tolist(), mesh.mesh_dim_names)


def _run(model: nn.Module, rank: int, foreach: bool | None = None) -> dict[str, Any]:
    initial = _full_state(model)
    optimizer = functools.partial(torch.optim.SGD, lr=0.1, foreach=foreach)
    losses = train(model, [rank], STEPS, optimizer=optimizer)
    return {
        "units": _units(model),
        "mesh": _mesh_of(model),
        "initial": initial,
        "losses": losses,
        "final": _full_state(model),
    }


def _error(call: Callable[[], Any]) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the test reads the message
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@dataclasses.dataclass(frozen=True)
class Case:
    """One FSDP1 call, made with FSDP1 and with the bridge on the same fresh model."""

    build: Callable[[], nn.Module]
    kwargs: Callable[[nn.Module], dict[str, Any]]
    seed: int = 1  # the global seed at the call (meta initialisation draws from it)
    foreach: bool | None = None


def _side_by_side(case: Case, rank: int) -> dict[str, Any]:
    sides = {}
    for side, shard in (("fsdp1", FullyShardedDataParallel), ("bridge", fully_shard_like_fsdp1)):
        model = case.build()
        torch.manual_seed(case.seed)
        sides[side] = _run(shard(model, device_id=CPU, **case.kwargs(model)), rank, case.foreach)
    return sides


def _precision() -> MixedPrecision:
    # FSDP1's defaults otherwise: the root casts its inputs, other units do not.
    return MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


def _kept_out() -> MixedPrecision:
    # The BatchNorm (the default) and the Head run in fp32, fed and read in bf16 by hooks.
    return dataclasses.replace(_precision(), _module_classes_to_ignore=(nn.BatchNorm1d, Head))


TWO_RANK_CASES = {
    "module-wrap-policy": Case(
        seeded(Net), lambda m: {"auto_wrap_policy": ModuleWrapPolicy({Block, Head})}
    ),
    "size-based-shard-grad-op": Case(
        seeded(Net),
        lambda m: {
            "auto_wrap_policy": functools.partial(size_based_auto_wrap_policy, min_num_params=500),
            "sharding_strategy": ShardingStrategy.SHARD_GRAD_OP,
        },
    ),
    "custom-policy-per-unit-strategy": Case(
        seeded(Net), lambda m: {"auto_wrap_policy": CustomPolicy(head_apart)}
    ),
    "meta-reset-parameters": Case(
        on_meta, lambda m: {"auto_wrap_policy": ModuleWrapPolicy({Block})}
    ),
    "meta-param-init-fn": Case(
        on_meta,
        lambda m: {"auto_wrap_policy": ModuleWrapPolicy({Block}), "param_init_fn": init_normal},
    ),
    "no-shard": Case(
        seeded(Net),
        lambda m: {
            "auto_wrap_policy": ModuleWrapPolicy({Block}),
            "sharding_strategy": ShardingStrategy.NO_SHARD,
        },
    ),
    "mixed-precision-kept-out": Case(
        seeded(NormNet),
        lambda m: {"auto_wrap_policy": ModuleWrapPolicy({Block}), "mixed_precision": _kept_out()},
    ),
    "ignored-modules": Case(
        seeded(Net),
        lambda m: {"auto_wrap_policy": ModuleWrapPolicy({Block}), "ignored_modules": [m.head]},
        foreach=False,
    ),
    "no-op-arguments": Case(
        seeded(Net),
        lambda m: {
            "auto_wrap_policy": ModuleWrapPolicy({Block}),
            "backward_prefetch": None,
            "forward_prefetch": True,
            "limit_all_gathers": False,
            "use_orig_params": True,
        },
    ),
}


def _buffers(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: b.detach().clone() for name, b in model.named_buffers()}


# fully_shard_by_policy, the policy-first spelling (these runs were test_fsdp2.py's) ---------

BY_POLICY_STEPS = 5
BY_POLICY = (
    "classes",
    "module-wrap-policy",
    "custom-policy",
    "size-based",
    "size-based-small",
    "legacy-callable",
)


def _by_policy_forms() -> dict[str, Any]:
    import compat.fsdp.wrap as cw
    from tests.models import is_block, legacy_policy

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


def _by_policy(rank: int) -> dict[str, Any]:
    from compat.checkpointing import apply_activation_checkpointing
    from compat.fsdp2 import fully_shard_by_policy
    from compat.policies import normalize_policy
    from tests.equivalence import native_fsdp

    def steps(model: nn.Module) -> list[float]:
        return train(model, [rank], BY_POLICY_STEPS)

    results: dict[str, Any] = {}
    for name, policy in _by_policy_forms().items():
        fsdp1 = native_fsdp(make_model(), auto_wrap_policy=normalize_policy(policy))
        fsdp2 = fully_shard_by_policy(make_model(), policy, device_id=CPU)
        results[name] = {
            "fsdp1_units": _units(fsdp1),
            "fsdp2_units": _units(fsdp2),
            "fsdp1_losses": steps(fsdp1),
            "fsdp2_losses": steps(fsdp2),
        }
    # Activation checkpointing on both sharded models.
    fsdp1 = native_fsdp(make_model(), auto_wrap_policy=normalize_policy({Block}))
    fsdp2 = fully_shard_by_policy(
        make_model(), {Block}, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP, device_id=CPU
    )
    results["checkpointed"] = {
        "fsdp1": apply_activation_checkpointing(fsdp1, Block),
        "fsdp2": apply_activation_checkpointing(fsdp2, Block),
        "fsdp1_again": apply_activation_checkpointing(fsdp1, Block),
        "fsdp1_losses": steps(fsdp1),
        "fsdp2_losses": steps(fsdp2),
    }
    return results


def _two_ranks(rank: int, world_size: int) -> dict[str, Any]:
    from torch.distributed.fsdp import fully_shard

    results: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FSDP1's NO_SHARD and CPU notes
        for name, case in TWO_RANK_CASES.items():
            results[name] = _side_by_side(case, rank)
        results["by-policy"] = _by_policy(rank)
        # sync_module_states on CPU: every rank ends with rank 0's values, buffers included.
        model = seeded(BufferedNet, seed=10 + rank)()
        fully_shard_like_fsdp1(
            model, auto_wrap_policy={Block}, device_id=CPU, sync_module_states=True
        )
        results["sync"] = {"state": _full_state(model), "buffers": _buffers(model)}
        # Without it, ranks that differ are refused: FSDP1 and FSDP2 split them differently.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = fully_shard_like_fsdp1(
                seeded(Net, seed=rank)(), auto_wrap_policy={Block}, device_id=CPU
            )
        results["unsynced"] = [
            (w.filename, str(w.message)) for w in caught if w.category is RankMismatchWarning
        ]
        results["unsynced-units"] = fsdp2_unit_names(model)
        fsdp1 = FullyShardedDataParallel(seeded(Net, seed=rank)(), device_id=CPU)
        fsdp2 = fully_shard(seeded(Net, seed=rank)(), mesh=_mesh((world_size,)))
        results["why-unsynced"] = {"fsdp1": _full_state(fsdp1), "fsdp2": _full_state(fsdp2)}
        results["hybrid-no-group"] = _error(
            lambda: fully_shard_like_fsdp1(
                make_model(),
                auto_wrap_policy={Block},
                sharding_strategy="HYBRID_SHARD",
                device_id=CPU,
            )
        )
    return results


def _groups(rank: int, layout: list[list[int]]) -> Any:
    """This rank's group among ``layout`` (every rank creates every group)."""
    mine = None
    for ranks in layout:
        group = dist.new_group(ranks)
        if rank in ranks:
            mine = group
    return mine


def _four_ranks(rank: int, world_size: int) -> dict[str, Any]:
    from torch.distributed.device_mesh import init_device_mesh

    intra = _groups(rank, [[0, 1], [2, 3]])
    inter = _groups(rank, [[0, 2], [1, 3]])
    crossed = _groups(rank, [[0, 3], [1, 2]])
    unnamed = init_device_mesh("cpu", (2, 2))
    hybrid, zero2 = ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2
    arguments = {
        "hybrid-pair": {"sharding_strategy": hybrid, "process_group": (intra, inter)},
        "hybrid-zero2-pair": {"sharding_strategy": zero2, "process_group": (intra, inter)},
        "hybrid-unnamed-mesh": {"sharding_strategy": hybrid, "device_mesh": unnamed},
        "process-group": {"process_group": intra},
    }
    results: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, given in arguments.items():
            case = Case(
                seeded(Net),
                lambda m, given=given: {"auto_wrap_policy": ModuleWrapPolicy({Block}), **given},
            )
            results[name] = _side_by_side(case, rank)
        model = seeded(BufferedNet, seed=10 + rank)()
        fully_shard_like_fsdp1(
            model,
            process_group=(intra, inter),
            sharding_strategy=ShardingStrategy.HYBRID_SHARD,
            auto_wrap_policy={Block},
            device_id=CPU,
            sync_module_states=True,
        )
        results["hybrid-sync"] = {"state": _full_state(model), "buffers": _buffers(model)}
        results["hybrid-local"] = _hybrid_local_states(intra, inter)
        results["no-shard-sub-group"] = _error(
            lambda: fully_shard_like_fsdp1(
                make_model(),
                process_group=intra,
                sharding_strategy=ShardingStrategy.NO_SHARD,
                device_id=CPU,
            )
        )
        results["not-a-grid"] = _error(
            lambda: fully_shard_like_fsdp1(
                make_model(),
                process_group=(intra, crossed),
                sharding_strategy=ShardingStrategy.HYBRID_SHARD,
                device_id=CPU,
            )
        )
    return results


def _hybrid_local_states(intra: Any, inter: Any) -> dict[str, Any]:
    """A bridged model's LOCAL_STATE_DICT under HYBRID_SHARD, and a resume from it.

    FSDP1's own fails there on torch 2.13 (its ``ShardedTensor`` names the shard
    group's rank where a global one is checked), so there is no FSDP1 reference: each
    replica holds the same parts, and a model loaded from them holds the same values.
    """
    from torch.distributed.fsdp import StateDictType

    from compat.fsdp2 import FSDP1Api

    def bridged(seed: int) -> nn.Module:
        return fully_shard_like_fsdp1(
            make_model(seed=seed),
            process_group=(intra, inter),
            sharding_strategy=ShardingStrategy.HYBRID_SHARD,
            auto_wrap_policy=ModuleWrapPolicy({Block}),
            device_id=CPU,
        )

    model, other = bridged(0), bridged(3)
    with FSDP1Api.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        state = model.state_dict()
    with FSDP1Api.state_dict_type(other, StateDictType.LOCAL_STATE_DICT):
        other.load_state_dict(state)
    parts = {
        key: value.local_shards()[0].tensor.clone()
        for key, value in state.items()
        if hasattr(value, "local_shards") and value.local_shards()
    }
    return {"parts": parts, "saved": _full_state(model), "loaded": _full_state(other)}


@pytest.fixture(scope="module")
def two_ranks() -> list[dict[str, Any]]:
    return distributed.run(_two_ranks, world_size=2, timeout=300)


@pytest.fixture(scope="module")
def four_ranks() -> list[dict[str, Any]]:
    return distributed.run(_four_ranks, world_size=4, timeout=300)


def _same_state(one: dict, other: dict, exact: bool = False) -> None:
    assert one.keys() == other.keys() and one
    tolerance = 0 if exact else 1e-6  # reductions may add in another order
    for key in one:
        torch.testing.assert_close(other[key], one[key], atol=tolerance, rtol=tolerance, msg=key)


def _assert_like_fsdp1(result: dict[str, Any]) -> None:
    fsdp1, bridge = result["fsdp1"], result["bridge"]
    assert bridge["units"] == fsdp1["units"] and len(fsdp1["units"]) > 1
    _same_state(fsdp1["initial"], bridge["initial"], exact=True)
    assert bridge["losses"] == pytest.approx(fsdp1["losses"], rel=1e-6, abs=1e-6)
    _same_state(fsdp1["final"], bridge["final"])


@pytest.mark.distributed
@pytest.mark.parametrize("case", list(TWO_RANK_CASES))
def test_the_bridge_trains_like_fsdp1_on_two_ranks(two_ranks, case):
    for rank_result in two_ranks:
        _assert_like_fsdp1(rank_result[case])


@pytest.mark.distributed
def test_meta_units_are_materialised_in_fsdp1s_order(two_ranks):
    # Units materialised in another order draw other values from the RNG.
    result = two_ranks[0]["meta-param-init-fn"]["bridge"]
    torch.manual_seed(1)
    model = on_meta()
    for module in reversed(list(model.modules())):
        init_normal(module)
    other = {k: v.float() for k, v in model.state_dict().items()}
    assert any(not torch.equal(other[k], result["initial"][k]) for k in other)


@pytest.mark.distributed
def test_no_shard_replicates_over_the_world_on_one_rank_shards(two_ranks):
    for rank_result in two_ranks:
        mesh = rank_result["no-shard"]["bridge"]["mesh"]
        assert mesh == ([[0], [1]], ("replicate", "shard"))


@pytest.mark.distributed
def test_classes_kept_out_of_mixed_precision_are_units_of_their_own(two_ranks):
    assert {"norm", "head"} <= set(two_ranks[0]["mixed-precision-kept-out"]["bridge"]["units"])


def _rank0_reference() -> tuple[dict, dict]:
    model = seeded(BufferedNet, seed=10)()
    state = {k: v.float() for k, v in model.state_dict().items()}
    return state, _buffers(model)


@pytest.mark.distributed
def test_sync_module_states_gives_every_rank_rank0s_values_on_cpu(two_ranks):
    state, buffers = _rank0_reference()
    for rank_result in two_ranks:
        _same_state(state, rank_result["sync"]["state"], exact=True)
        _same_state(buffers, rank_result["sync"]["buffers"], exact=True)  # non-persistent too
    assert set(buffers) - set(state) == {
        "offset",
        "blocks.0.shift",
        "blocks.1.shift",
        "blocks.2.shift",
    }


@pytest.mark.distributed
def test_ranks_that_differ_without_sync_module_states_are_reported(two_ranks):
    for rank_result in two_ranks:
        ((filename, message),) = rank_result["unsynced"]  # once, pointing at the call
        assert filename == __file__
        assert message.startswith("sync_module_states=False, but the ranks hold different")
        assert rank_result["unsynced-units"] == ["", "blocks.0", "blocks.1", "blocks.2"]
        # Why: from the same differing ranks FSDP1 and FSDP2 build different models.
        why = rank_result["why-unsynced"]
        assert any(not torch.equal(why["fsdp1"][k], why["fsdp2"][k]) for k in why["fsdp1"])


@pytest.mark.distributed
def test_hybrid_shard_without_groups_on_one_device_per_node_is_refused(two_ranks):
    # FSDP1 sizes shard groups by torch.cpu.device_count() == 1 here, not LOCAL_WORLD_SIZE
    # (2 in these ranks), and would fall back to NO_SHARD within one rank.
    for rank_result in two_ranks:
        message = rank_result["hybrid-no-group"]
        assert message.startswith("ValueError: sharding_strategy=HYBRID_SHARD")
        assert "device_count()" in message and "NO_SHARD" in message


@pytest.mark.distributed
@pytest.mark.parametrize("policy", BY_POLICY)
def test_fully_shard_by_policy_matches_fsdp1(two_ranks, policy):
    for rank_result in two_ranks:
        result = rank_result["by-policy"][policy]
        assert result["fsdp2_units"] == result["fsdp1_units"] and len(result["fsdp1_units"]) > 1
        assert result["fsdp2_losses"] == pytest.approx(result["fsdp1_losses"], abs=1e-5)


@pytest.mark.distributed
def test_activation_checkpointing_on_fsdp1_and_fsdp2_models(two_ranks):
    for rank_result in two_ranks:
        result = rank_result["by-policy"]["checkpointed"]
        assert result["fsdp1"] == result["fsdp2"] == ["blocks.0", "blocks.1", "blocks.2"]
        assert result["fsdp1_again"] == []
        assert result["fsdp2_losses"] == pytest.approx(result["fsdp1_losses"], abs=1e-5)


@pytest.mark.distributed
@pytest.mark.parametrize(
    "case", ["hybrid-pair", "hybrid-zero2-pair", "hybrid-unnamed-mesh", "process-group"]
)
def test_the_bridge_trains_like_fsdp1_on_four_ranks(four_ranks, case):
    for rank_result in four_ranks:
        _assert_like_fsdp1(rank_result[case])


@pytest.mark.distributed
def test_the_bridges_meshes_are_fsdp1s_groups(four_ranks):
    grid = [[0, 1], [2, 3]]  # rows: the intra-node (shard) groups
    for rank, rank_result in enumerate(four_ranks):
        for case in ("hybrid-pair", "hybrid-zero2-pair", "hybrid-unnamed-mesh"):
            assert rank_result[case]["bridge"]["mesh"] == (grid, ("replicate", "shard")), case
        assert rank_result["process-group"]["bridge"]["mesh"] == (grid[rank // 2], None)
    # The two pairs trained apart, each on its own ranks' data.
    final = [rank_result["process-group"]["bridge"]["final"] for rank_result in four_ranks]
    _same_state(final[0], final[1], exact=True)
    assert any(not torch.equal(final[0][k], final[2][k]) for k in final[0])


@pytest.mark.distributed
def test_a_hybrid_local_state_dict_is_laid_out_in_each_shard_group(four_ranks):
    # Ranks 0 and 2 (1 and 3) hold the same rows of each unit in their shard groups,
    # and a model loads them back (no parameter gathered: an all-to-all per group).
    parts = [rank_result["hybrid-local"]["parts"] for rank_result in four_ranks]
    assert parts[0] and any(key.endswith("_flat_param") for key in parts[0])
    _same_state(parts[0], parts[2], exact=True)
    _same_state(parts[1], parts[3], exact=True)
    for rank_result in four_ranks:
        local = rank_result["hybrid-local"]
        _same_state(local["saved"], local["loaded"], exact=True)


@pytest.mark.distributed
def test_hybrid_sync_module_states_gives_every_rank_rank0s_values(four_ranks):
    state, buffers = _rank0_reference()
    for rank_result in four_ranks:
        _same_state(state, rank_result["hybrid-sync"]["state"], exact=True)
        _same_state(buffers, rank_result["hybrid-sync"]["buffers"], exact=True)


@pytest.mark.distributed
def test_no_shard_over_a_sub_group_and_groups_off_a_grid_are_refused(four_ranks):
    for rank_result in four_ranks:
        assert rank_result["no-shard-sub-group"].startswith(
            "ValueError: sharding_strategy=NO_SHARD over a sub-group"
        )
        assert rank_result["not-a-grid"].startswith(
            "ValueError: process_group=(intra, inter) do not form a rank grid"
        )


# FSDP1's sync_module_states itself (GPU: it refuses CPU tensors) ---------------------------


def _gpu_sync(rank: int, world_size: int) -> dict[str, Any]:
    device = distributed.device_for(rank)
    results = {}
    for side, shard in (("fsdp1", FullyShardedDataParallel), ("bridge", fully_shard_like_fsdp1)):
        model = seeded(BufferedNet, seed=10 + rank)()
        model = shard(
            model,
            auto_wrap_policy=ModuleWrapPolicy({Block}),
            device_id=device,
            sync_module_states=True,
        )
        initial, buffers = _full_state(model), _buffers(model)
        losses = train(model, [rank], STEPS, device=device)
        results[side] = {
            "initial": initial,
            "buffers": {k: v.cpu() for k, v in buffers.items()},
            "losses": losses,
            "final": _full_state(model),
        }
    return results


@pytest.mark.gpu
@pytest.mark.distributed
@pytest.mark.skipif(
    distributed.choose_backend(2) != "nccl",
    reason="needs two GPUs: FSDP1's sync_module_states broadcasts GPU tensors, NCCL takes "
    "one rank per GPU, and gloo ranks sharing one GPU hang in FSDP1's collectives",
)
def test_sync_module_states_matches_fsdp1_on_a_gpu():
    runs = distributed.run(_gpu_sync, world_size=2, timeout=300)
    state, buffers = _rank0_reference()
    for rank_result in runs:
        fsdp1, bridge = rank_result["fsdp1"], rank_result["bridge"]
        _same_state(state, fsdp1["initial"], exact=True)
        _same_state(fsdp1["initial"], bridge["initial"], exact=True)
        _same_state(fsdp1["buffers"], bridge["buffers"], exact=True)
        _same_state(buffers, bridge["buffers"], exact=True)
        assert bridge["losses"] == pytest.approx(fsdp1["losses"], rel=1e-5, abs=1e-5)
        _same_state(fsdp1["final"], bridge["final"])


# No spawn: the signature, and what a 1-rank group is enough to check ---------------------


def test_the_signature_is_fsdp1s():
    fsdp1 = list(inspect.signature(FullyShardedDataParallel.__init__).parameters.values())[1:]
    bridge = list(inspect.signature(fully_shard_like_fsdp1).parameters.values())
    assert [(p.name, p.kind, p.default) for p in bridge] == [
        (p.name, p.kind, p.default) for p in fsdp1
    ]


@pytest.fixture
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _no_reset(module: nn.Module) -> None:
    raise AssertionError("never called")


class Scaled(nn.Module):
    """Holds a parameter of its own and has no reset_parameters()."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


def _mesh(shape: tuple[int, ...], names: tuple[str, ...] | None = None) -> Any:
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", shape, mesh_dim_names=names)


def _head_only(decision: Any) -> CustomPolicy:
    return CustomPolicy(lambda m: decision if isinstance(m, Head) else False)


#: Arguments (built inside a 1-rank group), the error, the start of its message.
REFUSED: dict[str, tuple[Callable[[], dict[str, Any]], type[Exception], str]] = {
    "group-and-mesh": (
        lambda: {"process_group": dist.group.WORLD, "device_mesh": _mesh((1,))},
        ValueError,
        "Cannot pass both process_group and device_mesh",
    ),
    "hybrid-without-policy-or-group": (
        lambda: {"sharding_strategy": ShardingStrategy.HYBRID_SHARD},
        ValueError,
        "Manual wrapping with HYBRID_SHARD requires explicit specification",
    ),
    "hybrid-1d-mesh": (
        lambda: {"sharding_strategy": ShardingStrategy.HYBRID_SHARD, "device_mesh": _mesh((1,))},
        ValueError,
        "sharding_strategy=HYBRID_SHARD expects a 2-D device_mesh",
    ),
    "2d-mesh-non-hybrid": (
        lambda: {"device_mesh": _mesh((1, 1), ("a", "b"))},
        ValueError,
        "device_mesh is 2-D with sharding_strategy=FULL_SHARD",
    ),
    "pair-non-hybrid": (
        lambda: {"process_group": (dist.group.WORLD, dist.group.WORLD)},
        TypeError,
        "process_group=(intra, inter) needs a hybrid sharding_strategy",
    ),
    "single-group-hybrid": (
        lambda: {"process_group": dist.group.WORLD, "sharding_strategy": "HYBRID_SHARD"},
        ValueError,
        "sharding_strategy=HYBRID_SHARD expects process_group to be None or a tuple",
    ),
    "keep-low-precision-grads": (
        lambda: {"mixed_precision": MixedPrecision(keep_low_precision_grads=True)},
        NotImplementedError,
        "mixed_precision.keep_low_precision_grads=True",
    ),
    "persistent-buffer-dtype": (
        lambda: {"mixed_precision": MixedPrecision(buffer_dtype=torch.bfloat16)},
        NotImplementedError,
        "mixed_precision.buffer_dtype=torch.bfloat16: FSDP1 computes with the persistent "
        "buffer 'blocks.0.scale'",
    ),
    "both-ignored-arguments": (
        lambda: {"ignored_modules": [], "ignored_states": []},
        ValueError,
        "Cannot pass both ignored_modules and ignored_states",
    ),
    "ignored-mix": (
        lambda: {"ignored_states": [nn.Linear(1, 1), nn.Parameter(torch.ones(1))]},
        ValueError,
        "ignored_states expects all nn.Parameter or all nn.Module elements",
    ),
    "per-unit-process-group": (
        lambda: {
            "auto_wrap_policy": _head_only({"process_group": dist.new_group([0])}),
            "process_group": dist.group.WORLD,
        },
        NotImplementedError,
        "the auto_wrap_policy gives unit 'head' its own process_group",
    ),
    "per-unit-no-shard": (
        lambda: {"auto_wrap_policy": _head_only({"sharding_strategy": ShardingStrategy.NO_SHARD})},
        NotImplementedError,
        "the auto_wrap_policy gives unit 'head' sharding_strategy=NO_SHARD under a FULL_SHARD",
    ),
    "param-init-fn-not-callable": (
        lambda: {"param_init_fn": 3, "_meta": True},
        ValueError,
        "param_init_fn=3 is not callable",
    ),
    "not-a-strategy": (
        lambda: {"sharding_strategy": "SHARD_EVERYTHING"},
        ValueError,
        "sharding_strategy='SHARD_EVERYTHING' is no FSDP1 ShardingStrategy",
    ),
    "full-precision-in-eval": (
        lambda: {"mixed_precision": _precision(), "_env": "FSDP_USE_FULL_PREC_IN_EVAL"},
        NotImplementedError,
        "FSDP_USE_FULL_PREC_IN_EVAL=1: FSDP1 computes in full precision in eval mode",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_preconditions_are_checked_before_sharding(one_rank, monkeypatch, case):
    arguments, error, message = REFUSED[case]
    kwargs = arguments()
    model = on_meta() if kwargs.pop("_meta", False) else seeded(BufferedNet)()
    if "_env" in kwargs:
        monkeypatch.setenv(kwargs.pop("_env"), "1")
    with pytest.raises(error, match="^" + re.escape(message)):
        fully_shard_like_fsdp1(model, device_id=CPU, **kwargs)
    assert fsdp2_unit_names(model) == []  # nothing was sharded


class NonPersistentNet(Net):
    """Net with one non-persistent floating buffer (never in a state dict)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("offset", torch.randn(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + self.offset


class AttentionNet(nn.Module):
    """An embedding, multi-head attention (a size policy's forced leaf) and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.attn = nn.MultiheadAttention(16, 2)
        self.head = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        return self.head(self.attn(x, x, x)[0])


def _meta_with_ignored() -> tuple[nn.Module, dict[str, Any]]:
    model = on_meta()
    return model, {
        "auto_wrap_policy": ModuleWrapPolicy({Block}),
        "ignored_modules": [model.blocks[0].fc1],
    }


#: What a 1-rank group is enough to compare with FSDP1: (model and arguments, what to compare).
ONE_RANK = {
    # FSDP1 passes its children no ignored modules: a unit materialises one inside it.
    "meta-ignored-module-inside-a-unit": _meta_with_ignored,
    # FSDP1 casts a non-persistent buffer to buffer_dtype; the bridge does so before sharding.
    "non-persistent-buffer-dtype": lambda: (
        seeded(NonPersistentNet)(),
        {"mixed_precision": dataclasses.replace(_precision(), buffer_dtype=torch.bfloat16)},
    ),
    # With mixed precision FSDP1's size policy enters even a forced leaf (attention) and
    # wraps its output projection.
    "mixed-precision-enters-forced-leaves": lambda: (
        seeded(AttentionNet)(),
        {
            "auto_wrap_policy": functools.partial(size_based_auto_wrap_policy, min_num_params=200),
            "mixed_precision": _precision(),
        },
    ),
}


@pytest.mark.parametrize("case", list(ONE_RANK))
def test_like_fsdp1_on_one_rank(one_rank, case):
    from compat.checkpointing import clean_name

    outcomes = []
    for shard in (FullyShardedDataParallel, fully_shard_like_fsdp1):
        torch.manual_seed(1)
        model, kwargs = ONE_RANK[case]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FSDP1 on one rank: NO_SHARD
            model = shard(model, device_id=CPU, **kwargs)
        # (FSDP1's wrapped attention cannot run forward: its output projection is a unit
        # whose forward attention never calls. Its units are what counts here.)
        out = None if case.endswith("forced-leaves") else model(torch.randn(4, 8))
        buffers = {clean_name(k): v for k, v in _buffers(model).items()}
        outcomes.append((_units(model), out, buffers, _full_state(model)))
    (units1, out1, buffers1, state1), (units2, out2, buffers2, state2) = outcomes
    assert units2 == units1
    torch.testing.assert_close(out2, out1, atol=0, rtol=0)
    assert buffers2.keys() == buffers1.keys()
    for name, buffer in buffers1.items():
        torch.testing.assert_close(buffers2[name], buffer, atol=0, rtol=0)
    _same_state(state1, state2, exact=True)
    expected_units = {
        "meta-ignored-module-inside-a-unit": ["", "blocks.0", "blocks.1", "blocks.2"],
        "non-persistent-buffer-dtype": [""],
        "mixed-precision-enters-forced-leaves": ["", "attn", "attn.out_proj"],
    }
    assert units2 == expected_units[case]
    if case == "non-persistent-buffer-dtype":
        assert buffers2["offset"].dtype == torch.bfloat16


def test_a_module_without_reset_parameters_on_meta_is_refused(one_rank):
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 4), Scaled())
    with pytest.raises(
        AttributeError, match="param_init_fn=None: unit '\\(the root\\)' holds meta"
    ):
        fully_shard_like_fsdp1(model, device_id=CPU)


def test_sharded_models_and_tensor_parallel_parameters_are_refused(one_rank):
    from torch.distributed.tensor import distribute_tensor

    sharded = fully_shard_like_fsdp1(make_model(), device_id=CPU, use_orig_params=True)
    with pytest.raises(ValueError, match=r"already FSDP2 units: '\(the root\)'"):
        fully_shard_like_fsdp1(sharded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = FullyShardedDataParallel(make_model(), device_id=CPU)
    with pytest.raises(ValueError, match="already FSDP1 units"):
        fully_shard_like_fsdp1(wrapped)
    model = make_model()
    weight = distribute_tensor(model.head.proj.weight.detach(), _mesh((1,)))
    model.head.proj.weight = nn.Parameter(weight)
    with pytest.raises(NotImplementedError, match="'head.proj.weight' is already a DTensor"):
        fully_shard_like_fsdp1(model, device_id=CPU)


def test_a_torch_without_the_bridge_is_told_so(monkeypatch):
    from compat.fsdp2 import availability

    composable = __import__("torch.distributed._composable.fsdp", fromlist=["x"])
    monkeypatch.setattr(availability, "_find_fsdp2", lambda: composable)
    with pytest.raises(
        ImportError, match=r"needs torch.distributed.fsdp.fully_shard \(torch >= 2.6\)"
    ):
        availability.require_bridge(CPU)
    monkeypatch.setattr(availability, "_find_fsdp2", lambda: None)
    with pytest.raises(ImportError, match=r"FSDP2 \(fully_shard\) needs torch >= 2.4"):
        fully_shard_like_fsdp1(make_model())
    monkeypatch.undo()
    monkeypatch.setattr(availability, "torch_version", lambda: availability.Version("2.6.0"))
    with pytest.raises(ImportError, match="FSDP2 on CPU ranks \\(gloo\\) needs torch >= 2.7"):
        availability.require_bridge(CPU)
