"""The port checker on FSDP2 ports of our own writing (``tests/portcheck_ports.py``).

One spawn of 2 gloo ranks (NCCL where there is a GPU per rank) runs every case: clean
ports must pass, and each port carrying a run-time bug of ``FSDP2-PORTS.md`` section 8
must fail with that bug's cause named. The command and the pytest helper each cost one
more spawn. On a GPU machine (``.ci/gpu.sh``) the same cases run again on NCCL, one
rank per GPU (a 2-rank spawn there is gloo's where the machine has one GPU).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from compat.fsdp2.availability import fsdp2_on_cpu
from compat.portcheck import (
    CAUSES,
    PortCase,
    api,
    assert_port_matches,
    check_port,
    check_ports,
    default_loss,
)
from compat.portcheck.launch import RankError, on_ranks
from compat.portcheck.spec import resolve

P = "tests.portcheck_ports:"
runs_fsdp2 = pytest.mark.skipif(
    not fsdp2_on_cpu() and not torch.cuda.is_available(),
    reason="FSDP2 runs on CPU ranks from torch 2.7",
)


def _fsdp2_refuses_split_ties() -> bool:
    """Whether FSDP2 refuses at its first forward a parameter that two of its groups hold.

    torch 2.13 checks it ("already managed by another FSDP group"); 2.9 and 2.11 do not,
    and train the copies apart.
    """
    try:
        from torch.distributed.fsdp._fully_shard._fsdp_state import FSDPState
    except ImportError:  # FSDP2's home before torch 2.6
        from torch.distributed._composable.fsdp._fsdp_state import FSDPState

    return hasattr(FSDPState, "_validate_no_duplicate_params")


def _case(before: str, after: str, **options) -> PortCase:
    return PortCase(P + before, P + after, P + "batch", **options)


CLEAN = {
    "fp32": _case("fsdp1", "fsdp2"),
    "meta-then-load": _case("fsdp1", "fsdp2_meta"),
    "bf16-root-only-casting": _case("fsdp1_bf16", "fsdp2_bf16"),
    "fp32-accumulation": _case("fsdp1", "fsdp2", accumulate=2),
    "fp32-use-orig-params": _case("fsdp1_orig_params", "fsdp2"),
    "shard-grad-op-checkpointed": _case(
        "fsdp1_shard_grad_op_checkpointed", "fsdp2_no_reshard_checkpointed"
    ),
    "tied-in-the-root": _case("fsdp1_tied", "fsdp2_tied"),
    "dropout-after-other-draws": _case("fsdp1_dropout", "fsdp2_dropout_after_drawing"),
    "fp32-clipped-own-loss": _case("fsdp1", "fsdp2", max_norm=0.5, loss=P + "smoothed_loss"),
}
#: Each bug: its case, the cause the report must name, and the finding's severity.
BUGS = {
    "children-left-on-meta": (_case("fsdp1", "children_left_on_meta"), "left-on-meta", "hazard"),
    "root-without-unit-arguments": (
        _case("fsdp1_bf16", "root_without_unit_arguments"),
        "root-arguments",
        "hazard",
    ),
    "unit-filter-matched-nothing": (
        _case("fsdp1", "unit_filter_matched_nothing"),
        "unit-filter",
        "difference",
    ),
    "buffer-left-after-to-empty": (
        _case("fsdp1", "buffer_left_after_to_empty"),
        "non-persistent-buffer",
        "difference",
    ),
    "optimizer-before-sharding": (
        _case("fsdp1", "optimizer_before_sharding"),
        "optimizer-before-sharding",
        "hazard",
    ),
    "tied-weights-split": (
        _case("fsdp1_tied", "tied_weights_split"),
        "tied-weights-split",
        "difference",
    ),
    "per-unit-input-casting": (
        _case("fsdp1_positions_bf16", "per_unit_input_casting"),
        "input-casting",
        "difference",
    ),
    "missed-rank0-broadcast": (
        _case("fsdp1_rank0_load", "missed_rank0_broadcast", distinct_seeds=True),
        "missed-broadcast",
        "difference",
    ),
    "optimizer-groups-per-module": (
        _case("fsdp1_grouped", "groups_per_module"),
        "optimizer-groups",
        "difference",
    ),
    "bf16-accumulation": (
        _case("fsdp1_bf16", "fsdp2_bf16", accumulate=2),
        "accumulation-dtype",
        "difference",
    ),
}


@pytest.fixture(scope="module")
def reports():
    cases = {**CLEAN, **{name: case for name, (case, _, _) in BUGS.items()}}
    return check_ports(cases, world_size=2, timeout=600)


@pytest.mark.distributed
@runs_fsdp2
@pytest.mark.parametrize("name", list(CLEAN))
def test_a_clean_port_passes(reports, name):
    report = reports[name]
    report.assert_passed()
    assert (report.before.engine, report.after.engine) == ("FSDP1", "FSDP2")
    assert report.before.units == report.after.units == ["", "layers.0", "layers.1"]
    assert len(report.step_rows) == 3
    for row in report.step_rows:
        assert row.loss_after == pytest.approx(row.loss_before, abs=1e-5)
        assert row.grad_norm_after == pytest.approx(row.grad_norm_before, abs=1e-5)
        assert row.weight_diff is not None and row.weight_diff <= 1e-5
    # FSDP2's state_dict() gives shards: accepted, and said.
    assert [f.cause for f in report.findings] == ["state-dict-kind"]


@pytest.mark.distributed
@runs_fsdp2
@pytest.mark.parametrize("name", list(BUGS))
def test_each_port_bug_is_caught_and_named(reports, name):
    _, cause, severity = BUGS[name]
    report = reports[name]
    assert not report.passed
    named = [f for f in report.findings if f.cause == cause]
    assert named, report.render()
    assert any(f.severity == severity for f in named), report.render()
    assert CAUSES[cause].title in report.render()


@pytest.mark.distributed
@runs_fsdp2
def test_what_each_finding_points_at(reports):
    meta = next(f for f in reports["children-left-on-meta"].findings if f.topic == "meta")
    assert "layers.0.fc1.weight" in meta.message and meta.side == "after"
    assert reports["unit-filter-matched-nothing"].after.units == [""]
    buffer = next(f for f in reports["buffer-left-after-to-empty"].findings if f.topic == "buffers")
    assert buffer.where == "rope" and "non-persistent" in buffer.message
    casting = [f for f in reports["per-unit-input-casting"].findings if f.topic == "inputs"]
    assert [f.where for f in casting] == ["layers.0", "layers.1"]
    assert "bfloat16/float32" in casting[0].message  # FSDP1 left the positions fp32
    root = [f for f in reports["root-without-unit-arguments"].failing() if f.topic == "arguments"]
    assert {f.where for f in root} == {""}
    tied = reports["tied-weights-split"]
    assert any("embed.weight and head.weight" in f.message for f in tied.findings)
    assert "optimizer-groups" not in tied.causes  # the untied head is the ties' finding
    errors = [f for f in tied.findings if f.topic == "error"]
    if _fsdp2_refuses_split_ties():
        (error,) = errors
        assert "already managed by another FSDP group" in error.message
    else:  # this torch trains the split ties: the finding on the two weights names them
        assert errors == []
    optimizer = reports["optimizer-before-sharding"]
    assert any(f.topic == "weights" and "did not change" in f.message for f in optimizer.findings)
    broadcast = next(f for f in reports["missed-rank0-broadcast"].findings if f.topic == "weights")
    assert "rank 0's part" in broadcast.message and broadcast.step is None
    table = next(f for f in reports["missed-rank0-broadcast"].findings if f.topic == "buffers")
    assert table.where == "rope" and table.cause == "missed-broadcast"
    assert "on rank 1 " in table.message  # rank 0 has the right table


@pytest.mark.distributed
@runs_fsdp2
def test_the_report_as_text_and_json(reports):
    report = reports["buffer-left-after-to-empty"]
    text = report.render()
    assert text.startswith("port check: before (FSDP1, 3 units) vs after (FSDP2, 3 units)")
    assert "unit by unit:" in text and "step by step" in text and "FAILED" in text
    data = json.loads(report.to_json())
    assert data["passed"] is False and "non-persistent-buffer" in data["causes"]
    assert data["step_rows"][0]["loss_after"] == [None, None]  # NaN losses, as JSON nulls
    assert {f["topic"] for f in data["findings"]} >= {"buffers", "loss", "weights"}


@pytest.mark.distributed
@runs_fsdp2
def test_the_pytest_helper_fails_with_the_report(reports):
    with pytest.raises(AssertionError, match="the port differs") as caught:
        reports["unit-filter-matched-nothing"].assert_passed()
    assert "a unit filter that matched nothing" in str(caught.value)
    with pytest.raises(AssertionError, match="unit by unit"):
        assert_port_matches(P + "fsdp1", P + "unit_filter_matched_nothing", P + "batch", steps=1)


@pytest.mark.distributed
@runs_fsdp2
def test_the_command(tmp_path):
    out = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "compat.portcheck",
        P + "fsdp1",
        P + "optimizer_before_sharding",
    ]
    command += ["--batch", P + "batch", "--steps", "2", "--json", "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert "optimizer-before-sharding" in data["causes"] and len(data["step_rows"]) == 2
    assert json.loads(out.read_text()) == data


#: The bugs one rank shows: a missed broadcast from rank 0 needs a second rank to differ.
ONE_RANK_BUGS = {name: bug for name, bug in BUGS.items() if name != "missed-rank0-broadcast"}


@pytest.mark.gpu
@pytest.mark.distributed
def test_every_case_is_judged_alike_on_nccl_with_a_rank_per_gpu(tmp_path):
    """The cases above on NCCL: CUDA tensors, NCCL's collectives, FSDP1's and FSDP2's
    CUDA streams. Clean ports pass, each bug is named; then the command, on NCCL too."""
    world_size = torch.cuda.device_count()
    bugs = BUGS if world_size > 1 else ONE_RANK_BUGS
    cases = {**CLEAN, **{name: case for name, (case, _, _) in bugs.items()}}
    reports = check_ports(cases, world_size=world_size, backend="nccl", timeout=600)
    for name in CLEAN:
        report = reports[name]
        report.assert_passed()
        assert (report.backend, report.world_size) == ("nccl", world_size)
        assert [f.cause for f in report.findings] == ["state-dict-kind"], name
    for name, (_, cause, severity) in bugs.items():
        report = reports[name]
        assert not report.passed, name
        assert any(f.cause == cause and f.severity == severity for f in report.findings), (
            report.render()
        )
    out = tmp_path / "report.json"
    command = [sys.executable, "-m", "compat.portcheck", P + "fsdp1", P + "fsdp2"]
    command += ["--batch", P + "batch", "--backend", "nccl", "--world-size", str(world_size)]
    done = subprocess.run(
        [*command, "--json", "--output", str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(out.read_text())["backend"] == "nccl"


@pytest.mark.distributed
@runs_fsdp2
def test_four_ranks_on_a_2d_mesh():
    """HYBRID_SHARD on a (2, 2) mesh against its FSDP2 port; a root left on the 1-D mesh."""
    reports = check_ports(
        {
            "port": _case("fsdp1_hybrid", "fsdp2_hybrid"),
            "root-off-the-mesh": _case("fsdp1_hybrid", "hybrid_root_on_the_whole_world"),
        },
        world_size=4,
        timeout=600,
    )
    reports["port"].assert_passed()
    assert [row.before for row in reports["port"].units] == ["HYBRID_SHARD"] * 3
    assert [row.after for row in reports["port"].units] == ["mesh 2x2"] * 3
    assert len(reports["port"].step_rows[0].loss_after) == 4
    off = reports["root-off-the-mesh"]
    assert not off.passed and off.causes[0] == "root-arguments"
    (hazard,) = off.failing()  # the numbers agree here: the mesh is the finding
    assert "mesh" in hazard.message and "('replicate', 'shard')" in hazard.message


def fail_on_rank_1(rank: int, world_size: int) -> int:
    if rank == 1:
        raise ValueError("rank 1 gives up")
    return rank


@pytest.mark.distributed
def test_a_rank_that_raises_stops_the_run_with_its_traceback():
    with pytest.raises(RankError, match="rank 1 gives up"):
        on_ranks(fail_on_rank_1, world_size=2, backend="gloo", timeout=120)


def _inside_a_group(rank: int, world_size: int) -> dict:
    # Under torchrun the process group exists before the checker is called.
    reports = check_ports({"clean": _case("fsdp1", "fsdp2", steps=1)})
    return {"rank": rank, "passed": reports["clean"].passed, "ranks": reports["clean"].world_size}


@pytest.mark.distributed
@runs_fsdp2
def test_inside_a_process_group_it_uses_its_ranks_and_every_rank_gets_the_report():
    seen = on_ranks(_every_rank, world_size=2, backend="gloo", timeout=300)
    assert seen == [
        {"rank": 0, "passed": True, "ranks": 2},
        {"rank": 1, "passed": True, "ranks": 2},
    ]


def _every_rank(rank: int, world_size: int) -> list:
    import torch.distributed as dist

    mine = _inside_a_group(rank, world_size)
    every = [None] * world_size
    dist.all_gather_object(every, mine)
    return every


def test_the_command_refuses_a_spec_that_names_nothing(monkeypatch, capfd):
    # The command's own function, in this process (test_the_command runs the command
    # whole): a fresh interpreter cost 2.7 s of CPU, importing torch again.
    from compat.portcheck.__main__ import main

    monkeypatch.setattr(sys, "path", list(sys.path))  # main() puts the directory first
    code = main([P + "fsdp1", P + "fsdp2", "--batch", P + "no_such_function"])
    assert code == 2
    assert "no_such_function" in capfd.readouterr().err


def test_a_torch_without_fsdp2_on_cpu_gets_a_clear_error(monkeypatch):
    if fsdp2_on_cpu():  # this torch has it: pretend it has not
        monkeypatch.setattr(api, "fsdp2_on_cpu", lambda: False)
    with pytest.raises((RuntimeError, ImportError), match=r"torch >= 2\.[47]"):
        check_port(P + "fsdp1", P + "fsdp2", P + "batch", backend="gloo")


def test_a_file_spec_imports_the_files_beside_it(tmp_path):
    (tmp_path / "model_parts.py").write_text("WIDTH = 7\n")
    (tmp_path / "my_ports.py").write_text(
        "import model_parts\n\ndef width(rank, world_size):\n    return model_parts.WIDTH\n"
    )
    assert resolve(f"{tmp_path / 'my_ports.py'}:width")(0, 1) == 7
    with pytest.raises(ImportError, match="no such file"):
        resolve(f"{tmp_path / 'missing.py'}:width")


def test_a_lambda_cannot_reach_the_ranks():
    with pytest.raises(TypeError, match="module-level function"):
        PortCase(lambda rank, world: None, P + "fsdp2", P + "batch").check()


@pytest.mark.parametrize("bad", [{"steps": 0}, {"accumulate": 0}])
def test_counts_must_be_positive(bad):
    with pytest.raises(ValueError, match=">= 1"):
        PortCase(P + "fsdp1", P + "fsdp2", P + "batch", **bad).check()


@pytest.mark.parametrize(
    ("batch", "expected"),
    [
        ((torch.ones(2, 3), torch.zeros(2, 2)), "mse"),
        ((torch.ones(2, 3), torch.tensor([0, 1])), "cross-entropy"),
        ({"x": torch.ones(2, 3)}, "square"),
        (torch.ones(2, 3), "square"),
    ],
)
def test_the_default_loss(batch, expected):
    torch.manual_seed(0)
    linear = nn.Linear(3, 2)

    class Keyword(nn.Module):
        def forward(self, x):
            return linear(x)

    model = Keyword() if isinstance(batch, dict) else linear
    loss = default_loss(model, batch)
    out = linear(torch.ones(2, 3))
    wanted = {
        "mse": lambda: nn.functional.mse_loss(out, torch.zeros(2, 2)),
        "cross-entropy": lambda: nn.functional.cross_entropy(out, torch.tensor([0, 1])),
        "square": lambda: out.square().mean(),
    }[expected]()
    assert loss.item() == pytest.approx(wanted.item())


def test_the_guide_lists_every_cause():
    guide = (Path(__file__).parents[1] / "docs" / "fsdp2.md").read_text(encoding="utf-8")
    section = guide.split("\n## The port checker\n", 1)[1].split("\n## ", 1)[0]
    for code in CAUSES:
        assert f"| `{code}`" in section


def test_fsdp_state_this_torch_hides_is_skipped_and_said(monkeypatch):
    """The units' arguments come from FSDP's private state: a torch that moves it costs
    that one comparison, named in a note, not the check."""
    from compat.portcheck import compare, engines, observe

    def moved(model, engine):
        raise AttributeError("'FSDPState' object has no attribute '_mp_policy'")

    monkeypatch.setattr(engines, "unit_settings", moved)
    seen = observe.SideObservation("after")
    model = nn.Linear(2, 2)
    observe._setup(seen, model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert seen.settings == {} and "_mp_policy" in seen.unread[0]
    report = compare.compare(
        observe.SideObservation("before"), seen, PortCase("", "", ""), 1, "gloo"
    )
    (note,) = report.findings
    assert note.severity == "note" and "the units' arguments" in note.message and report.passed
