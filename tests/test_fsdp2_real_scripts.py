"""Three real training scripts' shapes, migrated to plain FSDP2 and proven by the port checker.

``tests/fixtures/fsdp2_real/`` holds three reductions of our own writing (each names the
public script it is modelled on): a rank-0-load recipe with meta init on the other
ranks, a framework worker with a device mesh and a strategy and a policy read from its
config, and a script that wraps by hand and accumulates in bf16 under ``no_sync``.
FSDP401 rewrites each whole to plain FSDP2 code (no ``compat`` import), each finding
naming what FSDP2 does otherwise; the port checker then runs the FSDP1 original and the
rewrite side by side (2 gloo ranks; the worker's 2-D mesh on 4): every number equal,
and the only findings the notes of differences the findings name (DTensor state dicts).
The nested script's own loop, with its rewritten ``no_sync``, runs too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from codemods.engine.run import run
from codemods.settings import Settings
from compat.features import current

FIXTURES = Path(__file__).parent / "fixtures" / "fsdp2_real"
SCRIPTS = {
    "rank0": "rank0_load_meta_init.py",
    "worker": "worker_mesh_config.py",
    "nested": "nested_no_sync_bf16.py",
}
SETTINGS = Settings(fix=True, unsafe_fixes=True, select=("FSDP4",))
#: What each script's findings must say FSDP2 does otherwise (or FSDP1's step written).
NAMED = {
    "rank0": [
        "materialised just before its `fully_shard`",
        "rank 0's parameters and buffers (non-persistent ones included) are broadcast",
        "`sharding_strategy` is one of several strategies chosen at run time",
        "`mixed_precision` is read at run time",
        "`state_dict()` gives DTensor shards",
    ],
    "worker": [
        "`buffer_dtype` dropped",
        "rebuilt from its groups with the names (`replicate`, `shard`) FSDP2 needs",
        "`forward_prefetch` dropped",
        "rank 0's parameters and buffers (non-persistent ones included) are broadcast",
        "the optimizer gets each original parameter",
    ],
    "nested": ["a unit wrapped by hand inside `model`", "`state_dict()` gives DTensor shards"],
}
#: The plain FSDP2 idiom each rewrite must hold.
WRITTEN = {
    "rank0": [
        "def materialize_like_fsdp1(unit, device, init_fn=None):",
        "            broadcast_like_fsdp1(unit, unit_device, mesh)",
        "    shard_like_fsdp1(\n        model,\n        wrapping_policy,",
        "    prepare_unit(model)\n    model = fully_shard(",
    ],
    "worker": [
        "sharding_strategy, module, device=rank_device(), mesh=self.device_mesh\n",
        "            broadcast_like_fsdp1(unit, unit_device, mesh)",
        "reshard_after_forward = reshards_like_fsdp1(sharding_strategy)",
        'offload_policy = (\n            OffloadPolicy()\n            if (self.role == "actor")\n',
    ],
    "nested": [
        "cast_forward_inputs=False),",
        'reshard_after_forward={"fsdp": True, "sdp": False}[DATA_PARALLEL]',
        'model.set_requires_gradient_sync(not (DATA_PARALLEL in ["sdp", "hsdp"] and not last))',
        "            finally:\n                model.set_requires_gradient_sync(True)\n",
    ],
}


def _migrated(name: str) -> tuple[str, list]:
    outcome = run((FIXTURES / SCRIPTS[name]).read_bytes(), SETTINGS)
    assert outcome.new_source is not None, [f.message for f in outcome.findings]
    return outcome.new_source.decode(), outcome.findings


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_each_script_becomes_plain_fsdp2_with_its_differences_named(name):
    new, findings = _migrated(name)
    assert findings and all(f.fixed for f in findings), [f.message for f in findings]
    assert "FullyShardedDataParallel" not in new and "compat.fsdp2" not in new
    said = " ".join(f.message for f in findings)
    for text in NAMED[name]:
        assert text in said, text
    for text in WRITTEN[name]:
        assert text in new, text
    again = run(new.encode(), SETTINGS)  # a second run has nothing to do
    assert again.new_source is None and again.findings == []


needs_fsdp2 = pytest.mark.skipif(
    not current().fsdp2_on_cpu and not torch.cuda.is_available(),
    reason="this torch runs FSDP2 only on CUDA",
)


#: Forms of our own for FSDP401's other steps, run in the same ranks.
OWN = {
    "group": FIXTURES.parent / "fsdp2" / "process_group_sync.py",
    "meta": FIXTURES.parent / "fsdp2" / "meta_units_recipe.py",
}


@pytest.fixture(scope="module")
def ported(tmp_path_factory) -> tuple[dict, dict]:
    folder = tmp_path_factory.mktemp("ported")
    paths = {**{name: FIXTURES / file for name, file in SCRIPTS.items()}, **OWN}
    originals, ports = {}, {}
    for name, path in paths.items():
        outcome = run(path.read_bytes(), SETTINGS)
        assert outcome.new_source is not None and all(f.fixed for f in outcome.findings)
        originals[name], ports[name] = str(path), str(folder / path.name)
        Path(ports[name]).write_text(outcome.new_source.decode())
    return originals, ports


@pytest.fixture(scope="module")
def on_two_ranks(ported) -> dict:
    from compat.portcheck.launch import on_ranks
    from tests.fsdp2_real_runs import two_ranks

    return on_ranks(two_ranks, *ported, world_size=2, timeout=600)


def _only_named_notes(report) -> None:
    report.assert_passed()
    assert {f.cause for f in report.findings} <= {"state-dict-kind"}, report.render()


@needs_fsdp2
@pytest.mark.distributed
def test_rank0_load_with_meta_elsewhere_trains_as_fsdp1(on_two_ranks):
    """Rank 0's weights and its non-persistent buffer reach the meta ranks, as with FSDP1."""
    report = on_two_ranks["reports"]["rank0-load"]
    _only_named_notes(report)
    assert [row.name for row in report.units] == ["", "layers.0", "layers.1"]
    for row in report.step_rows:
        assert row.loss_after == row.loss_before


@needs_fsdp2
@pytest.mark.distributed
@pytest.mark.parametrize("case", ["group-sync", "meta-default"])
def test_a_groups_mesh_and_broadcast_and_meta_units_train_as_fsdp1(on_two_ranks, case):
    """``process_group`` + ``sync_module_states``; meta units without ``param_init_fn``."""
    report = on_two_ranks["reports"][case]
    _only_named_notes(report)
    assert report.units[0].initial == 0  # the same initial weights


@needs_fsdp2
@pytest.mark.distributed
def test_the_worker_on_a_1d_mesh_trains_as_fsdp1(on_two_ranks):
    _only_named_notes(on_two_ranks["reports"]["worker-1d"])


@needs_fsdp2
@pytest.mark.distributed
def test_the_hand_wrapped_bf16_script_accumulates_as_fsdp1(on_two_ranks):
    """bf16 reduced in bf16: FSDP2 accumulates in bf16 too, so every step is bit-equal."""
    report = on_two_ranks["reports"]["nested-bf16"]
    _only_named_notes(report)
    for row in report.step_rows:
        assert row.loss_after == row.loss_before
    (before_losses, before), (after_losses, after) = (
        on_two_ranks["loops"]["before"],
        on_two_ranks["loops"]["after"],
    )
    assert after_losses == before_losses  # the script's own loop, its no_sync rewritten
    assert before.keys() == after.keys()
    for key in before:
        assert torch.equal(before[key], after[key]), key


@needs_fsdp2
@pytest.mark.distributed
@pytest.mark.slow
def test_the_worker_on_a_2d_mesh_shards_hybrid_as_fsdp1(ported):
    """``fsdp_size=2`` of 4 ranks: FSDP1's HYBRID_SHARD and FSDP2's 2-D mesh, equal."""
    from compat.portcheck import PortCase, check_ports
    from tests.fsdp2_real_runs import SYNCED

    originals, ports = ported
    case = PortCase(
        "tests.fsdp2_real_runs:worker_fsdp1",
        f"{ports['worker']}:build",
        "tests.portcheck_ports:batch",
        distinct_seeds=True,  # rank 0's weights reach all 4 ranks, over both dimensions
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SYNCED, json.dumps(originals))
        report = check_ports({"worker-2d": case}, world_size=4, timeout=600)["worker-2d"]
    _only_named_notes(report)
    assert "HYBRID_SHARD" in report.render()  # FSDP1's side: hybrid on the 2-D mesh
