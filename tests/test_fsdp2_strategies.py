"""FSDP401 on sharding strategies FSDP2 has no keyword for, and on run-time choices.

``NO_SHARD``, the hybrid strategies without a mesh, a strategy chosen at run time and a
``cpu_offload`` bound at run time become ``fully_shard`` code: the mesh of the ranks
FSDP1 used (``mesh_like_fsdp1``, written once in the file), whether the strategy
reshards (``reshards_like_fsdp1``), the offload policy read from the value. The runs
compare the rewrites of ``tests/fixtures/fsdp2/strategies_at_run_time.py`` with the
FSDP1 originals by the port checker: 2 gloo ranks, and 4 for the hybrid 2-D mesh.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from codemods.engine.run import run
from codemods.settings import Settings
from compat.features import current

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import ShardingStrategy\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n"
)
SETTINGS = Settings(fix=True, unsafe_fixes=True, select=("FSDP401",))
FIXTURE = Path(__file__).parent / "fixtures" / "fsdp2" / "strategies_at_run_time.py"
needs_fsdp2 = pytest.mark.skipif(
    not current().fsdp2_on_cpu and not torch.cuda.is_available(),
    reason="this torch runs FSDP2 only on CUDA",
)


def _migrate(body: str) -> tuple[str | None, object]:
    outcome = run((HEAD + textwrap.dedent(body)).encode(), SETTINGS)
    new = None if outcome.new_source is None else outcome.new_source.decode()
    (finding,) = [f for f in outcome.findings if f.code == "FSDP401"]
    return new, finding


@pytest.mark.parametrize(
    ("arguments", "mesh", "said"),
    [
        (
            "sharding_strategy=ShardingStrategy.NO_SHARD",
            "mesh_like_fsdp1(ShardingStrategy.NO_SHARD, model)",
            "each rank keeps the whole model",
        ),
        (  # dolomite's shape: a data-parallel mesh of its own
            "sharding_strategy=ShardingStrategy.NO_SHARD, device_mesh=dp_mesh",
            "mesh_like_fsdp1(ShardingStrategy.NO_SHARD, model, mesh=dp_mesh)",
            "each rank keeps the whole model",
        ),
        (  # LLaMA-Adapter's shape: a data-parallel group
            "sharding_strategy=ShardingStrategy.NO_SHARD, process_group=dp_group",
            "mesh_like_fsdp1(ShardingStrategy.NO_SHARD, model, group=dp_group)",
            "each rank keeps the whole model",
        ),
        (
            "sharding_strategy=ShardingStrategy._HYBRID_SHARD_ZERO2, device_id=device",
            "mesh_like_fsdp1(ShardingStrategy._HYBRID_SHARD_ZERO2, model, device=device)",
            "FSDP1 fell back to training each rank alone",
        ),
        (  # an unnamed 2-D mesh gets the names FSDP2 asks for
            "sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_mesh=mesh_2d",
            "mesh_like_fsdp1(ShardingStrategy.HYBRID_SHARD, model, mesh=mesh_2d)",
            "rebuilt from its groups",
        ),
    ],
    ids=["no-shard", "no-shard-mesh", "no-shard-group", "zero2", "hybrid-mesh"],
)
def test_a_strategy_without_an_fsdp2_keyword_gets_fsdp1s_ranks_as_a_mesh(arguments, mesh, said):
    new, finding = _migrate(
        f"def shard(model, device, dp_mesh, dp_group, mesh_2d):\n"
        f"    return FSDP(model, {arguments})\n"
    )
    assert finding.fixed, finding.message
    assert f"mesh={mesh}" in new
    assert new.count("def mesh_like_fsdp1(") == 1 and "def reshards_like_fsdp1(" not in new
    reshards = "True" if "HYBRID_SHARD," in arguments else "False"
    assert f"reshard_after_forward={reshards}" in new
    assert said in finding.message


def test_a_hybrid_strategy_with_fsdp1s_pair_of_groups_shards_on_their_grid():
    new, finding = _migrate(
        "def shard(model, intra, inter):\n"
        "    return FSDP(model, sharding_strategy=ShardingStrategy.HYBRID_SHARD,\n"
        "                process_group=(intra, inter))\n"
    )
    assert finding.fixed, finding.message
    assert "mesh_like_fsdp1(ShardingStrategy.HYBRID_SHARD, model, group=(intra, inter))" in new
    assert "DeviceMesh.from_group(" not in new.split("def shard")[1]  # not the 1-D form
    assert "the 2-D mesh they form" in finding.message


def test_calls_sharing_a_file_share_one_copy_of_each_helper():
    new, findings = None, None
    outcome = run(FIXTURE.read_bytes(), SETTINGS)
    new = outcome.new_source.decode()
    findings = [f for f in outcome.findings if f.code == "FSDP401"]
    assert len(findings) == 6 and all(f.fixed for f in findings)
    assert new.count("def mesh_like_fsdp1(") == 1
    assert new.count("def reshards_like_fsdp1(") == 1
    # the strategy a table picks is read once, for both keywords
    assert new.count('"ddp": ShardingStrategy.NO_SHARD') == 1
    assert "mesh_like_fsdp1(strategy_, model, device=rank_device(), group=group)" in new


@needs_fsdp2
@pytest.mark.distributed
def test_the_rewrites_train_as_the_fsdp1_calls(tmp_path):
    """NO_SHARD, a chosen strategy and a table with a group equal FSDP1 on 2 gloo ranks."""
    from compat.portcheck import PortCase, check_ports

    outcome = run(FIXTURE.read_bytes(), SETTINGS)
    port = tmp_path / FIXTURE.name
    port.write_bytes(outcome.new_source)
    batch = "tests.portcheck_ports:batch"
    names = ("build_no_shard", "build_ddp", "build_zero2", "build_in_a_table")
    cases = {name: PortCase(f"{FIXTURE}:{name}", f"{port}:{name}", batch) for name in names}
    reports = check_ports(cases, world_size=2, timeout=600)
    for report in reports.values():
        report.assert_passed()
        # the one difference the findings name: DTensor state dicts
        assert {f.cause for f in report.findings} <= {"state-dict-kind"}, report.render()
    assert [row.name for row in reports["build_ddp"].units] == ["", "layers.0", "layers.1"]


@needs_fsdp2
@pytest.mark.distributed
def test_a_hybrid_strategy_trains_as_fsdp1_on_its_node_groups(tmp_path):
    """4 gloo ranks, 2 a node: FSDP1's hybrid groups (its own, or a pair passed) and the
    rewrite's 2-D mesh agree;
    with 1 a node FSDP1 trains each rank alone, the rewrite does not (as its finding says)."""
    from compat.portcheck import PortCase, check_ports

    outcome = run(FIXTURE.read_bytes(), SETTINGS)
    port = tmp_path / FIXTURE.name
    port.write_bytes(outcome.new_source)
    batch = "tests.portcheck_ports:batch"
    names = ("build_hybrid", "build_hybrid_pair", "build_hybrid_alone")
    cases = {name: PortCase(f"{FIXTURE}:{name}", f"{port}:{name}", batch) for name in names}
    reports = check_ports(cases, world_size=4, timeout=600)
    for name in ("build_hybrid", "build_hybrid_pair"):
        reports[name].assert_passed()
        assert {f.cause for f in reports[name].findings} <= {"state-dict-kind"}
    alone = reports["build_hybrid_alone"]
    assert not alone.passed  # FSDP1's silent fallback is not reproduced
    assert {f.topic for f in alone.failing()} & {"weights", "loss"}, alone.render()


def test_the_mesh_helper_names_torch_alone():
    """OLMo's shape: `init_device_mesh` imported inside a function is no name at module
    level, where the helper is written: it reaches torch's functions through `torch`."""
    new, finding = _migrate(
        "def shard(model, cfg, hybrid):\n"
        "    kw = {}\n"
        "    if hybrid:\n"
        "        from torch.distributed.device_mesh import init_device_mesh\n"
        '        kw["device_mesh"] = init_device_mesh("cuda", (2, 4))\n'
        "    return FSDP(model, sharding_strategy=cfg.strategy, **kw)\n"
    )
    assert finding.fixed, finding.message
    helper = new[new.index("def mesh_like_fsdp1(") : new.index("def shard(")]
    assert "init_device_mesh(" not in helper.replace("dist.device_mesh.init_device_mesh", "")
    assert 'mesh=kw.get("device_mesh")' in new


def test_a_strategy_chosen_between_tables_is_read_at_run_time():
    """dolomite's shape: one table for full sharding, another for hybrid sharding."""
    new, finding = _migrate(
        "def shard(model, stage, replicas):\n"
        "    strategy = FULL[stage] if replicas == 1 else HYBRID[stage]\n"
        "    return FSDP(model, sharding_strategy=strategy)\n"
    )
    assert finding.fixed, finding.message
    assert "reshard_after_forward=reshards_like_fsdp1(strategy)" in new
    assert "mesh=mesh_like_fsdp1(strategy, model)" in new


@pytest.mark.parametrize("value", ['"FULL_SHARD"', "[S.FULL_SHARD]"])
def test_a_literal_that_is_no_strategy_stays_for_a_human(value):
    new, finding = _migrate(f"model = FSDP(model, sharding_strategy={value})\n")
    assert new is None and "not a `ShardingStrategy` member" in finding.message
