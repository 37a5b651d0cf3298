"""compat.fairscale's ZeRO stack: FairScale's ``OSS`` / ``ShardedDataParallel`` / scaler on torch's.

The argument handling is checked in-process; one 2-rank gloo run trains the same model
twice from the same seed, once through FairScale's spelling (``ShardedDataParallel``,
``OSS``, ``ShardedGradScaler``, ``OSS.clip_grad_norm``, ``consolidate_state_dict``) and
once with torch's own classes, and the two must agree at every step.
"""

from __future__ import annotations

import inspect
import re
import sys
import warnings

import pytest
import torch
import torch.nn as nn
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from compat import FSDPDeprecationWarning
from compat import fairscale as fs
from tests import distributed

STEPS = 4
#: torch's sharded scaler runs on CPU after 2.2 (its ``device``); before, both runs use its
#: CUDA scaler, which turns itself off on a CPU host (the ZeRO stack is still compared).
CPU_SCALER = (
    {"device": "cpu"}
    if "device" in inspect.signature(ShardedGradScaler.__init__).parameters
    else {}
)


def _messages(build):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = build()
    return built, [str(w.message) for w in caught if issubclass(w.category, FSDPDeprecationWarning)]


def test_oss_names_the_arguments_torch_has_no_use_for():
    params = [nn.Parameter(torch.ones(2))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # torch's own need (RuntimeError before torch 2.2)
        with pytest.raises((ValueError, RuntimeError), match="init_process_group"):
            fs.OSS(params, optim=torch.optim.SGD, lr=0.1, broadcast_fp16=True)
    messages = [str(w.message) for w in caught if issubclass(w.category, FSDPDeprecationWarning)]
    assert any("`broadcast_fp16`: no torch meaning (dropped)" in m for m in messages)
    assert all(m.endswith("[FSDP307]") for m in messages)


def test_sharded_ddp_refuses_what_ddp_cannot_do():
    with pytest.raises(ValueError, match="sync_models_at_startup"):
        _messages(lambda: fs.ShardedDataParallel(nn.Linear(2, 2), sync_models_at_startup=False))
    with pytest.raises(TypeError, match="bucket_cap_mb"):
        _messages(lambda: fs.ShardedDataParallel(nn.Linear(2, 2), bucket_cap_mb=25))


@pytest.mark.skipif(
    not CPU_SCALER and not torch.cuda.is_available(),
    reason="torch 2.2 and older scale on CUDA only: without CUDA the scaler turns itself "
    "off and keeps none of its arguments",
)
def test_the_grad_scaler_takes_fairscales_order():
    scaler, messages = _messages(lambda: fs.ShardedGradScaler(8.0, 3.0, 0.25, 7, **CPU_SCALER))
    assert type(scaler) is ShardedGradScaler
    assert (scaler.get_scale(), scaler.get_growth_factor(), scaler.get_backoff_factor()) == (
        8.0,
        3.0,
        0.25,
    )
    assert scaler.get_growth_interval() == 7
    assert [m.rsplit("[", 1)[1] for m in messages] == ["FSDP309]"]


@pytest.mark.skipif(bool(CPU_SCALER), reason="torch after 2.2 scales on any device")
def test_up_to_torch_2_2_a_cpu_scaler_is_refused_by_name():
    with pytest.raises(ValueError, match="scales on CUDA only"):
        _messages(lambda: fs.ShardedGradScaler(device="cpu"))


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)
    )


def _train(rank: int, world_size: int, legacy: bool) -> dict:
    from torch.distributed.optim import ZeroRedundancyOptimizer

    model = _model()
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        if legacy:  # FairScale's spelling, through compat
            optimizer = fs.OSS(model.parameters(), optim=torch.optim.AdamW, lr=0.05)
            model = fs.ShardedDataParallel(model, optimizer, reduce_buffer_size=0)
            scaler = fs.ShardedGradScaler(init_scale=2.0**10, **CPU_SCALER)
        else:
            optimizer = ZeroRedundancyOptimizer(
                model.parameters(), optimizer_class=torch.optim.AdamW, lr=0.05
            )
            model = nn.parallel.DistributedDataParallel(model)
            scaler = ShardedGradScaler(init_scale=2.0**10, **CPU_SCALER)
        caught += [str(w.message) for w in record if issubclass(w.category, FSDPDeprecationWarning)]
    losses, norms = [], []
    for step in range(STEPS):
        torch.manual_seed(100 + 10 * step + rank)  # each rank its own batch
        x, y = torch.randn(8, 6), torch.randn(8, 1)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        if legacy:
            norm = optimizer.clip_grad_norm(0.5)
        else:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        norms.append(float(norm))
    if legacy:
        optimizer.consolidate_state_dict(recipient_rank=0)
    else:
        optimizer.consolidate_state_dict(to=0)
    state = optimizer.state_dict() if rank == 0 else None
    return {
        "params": {k: v.detach().clone() for k, v in model.module.state_dict().items()},
        "losses": losses,
        "norms": norms,
        "optimizer steps": None
        if state is None
        else sorted(int(s["step"]) for s in state["state"].values()),
        "codes": sorted({m.rsplit("[", 1)[1].rstrip("]") for m in caught if m.endswith("]")}),
        "scale": scaler.get_scale(),
    }


@pytest.mark.distributed
def test_fairscale_zero_trains_as_torchs_own_on_two_ranks():
    legacy = distributed.run(_train, True, world_size=2, backend="gloo")
    native = distributed.run(_train, False, world_size=2, backend="gloo")
    start = _model().state_dict()
    for rank in range(2):
        assert legacy[rank]["codes"] == ["FSDP307", "FSDP308", "FSDP309"]
        assert native[rank]["codes"] == []
        assert legacy[rank]["losses"] == pytest.approx(native[rank]["losses"], rel=1e-6)
        assert legacy[rank]["norms"] == pytest.approx(native[rank]["norms"], rel=1e-6)
        assert legacy[rank]["scale"] == native[rank]["scale"]
        for name, value in native[rank]["params"].items():
            torch.testing.assert_close(legacy[rank]["params"][name], value, msg=name)
            # it trained, and the ranks hold the same model (ZeRO broadcasts the shards)
            assert not torch.equal(value, start[name])
            torch.testing.assert_close(legacy[rank]["params"][name], legacy[0]["params"][name])
    # the consolidated state is on rank 0: every parameter stepped STEPS times
    assert legacy[0]["optimizer steps"] == native[0]["optimizer steps"] == [STEPS] * 6
    assert legacy[1]["optimizer steps"] is None


def _step_broadcasts(rank: int, world_size: int) -> list[int]:
    """How many references each tensor OSS's step broadcasts has once the step is done."""
    import torch.distributed as dist

    model = nn.Linear(4, 3)  # two parameters: one shard each
    optimizer = fs.OSS(model.parameters(), optim=torch.optim.SGD, lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    sent: list[torch.Tensor] = []
    broadcast = dist.broadcast

    def spy(tensor, *args, **kwargs):  # torch's own broadcast, the tensor kept
        sent.append(tensor)
        return broadcast(tensor, *args, **kwargs)

    dist.broadcast = spy
    try:
        optimizer.step()
    finally:
        dist.broadcast = broadcast
    held = []
    while sent:
        tensor = sent.pop()
        held.append(sys.getrefcount(tensor) - 2)  # less `tensor` and the call's argument
    return held


@pytest.mark.distributed
def test_the_step_broadcasts_tensors_the_optimizer_keeps():
    """A temporary left to gloo's worker thread hung torch 2.2 at destroy_process_group.

    torch's ZeRO broadcasts ``param.data`` temporaries unless the parameters are bucket
    views (FairScale's OSS packed them so too): the worker thread then frees the last one
    and waits for the GIL that the destroying thread holds while it joins the worker.
    """
    for held in distributed.run(_step_broadcasts, world_size=2, backend="gloo"):
        assert held and all(count >= 1 for count in held), held


_LEGACY_SCRIPT = """\
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from fairscale.nn.data_parallel import ShardedDataParallel as ShardedDDP
from fairscale.optim.oss import OSS


def run(rank, world_size, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = OSS(model.parameters(), optim=torch.optim.SGD, lr=0.1)
    model = ShardedDDP(model, optimizer)
    torch.manual_seed(rank)
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
    # One write per line: the two ranks share the pipe, and an unbuffered print writes
    # its newline apart (PYTHONUNBUFFERED), which let the lines run together.
    sys.stdout.write(f"rank {rank}: {model.module.weight.detach().sum().item():.6f}\\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1]), nprocs=2)
"""


@pytest.mark.slow
@pytest.mark.distributed
def test_an_unmodified_fairscale_zero_script_trains_under_python_m_compat(tmp_path):
    """FairScale is not installed: its imports find compat, the spawned ranks too."""
    from tests.test_dropin_runner import run

    (tmp_path / "legacy_zero.py").write_text(_LEGACY_SCRIPT)
    done = run(["-m", "compat", "legacy_zero.py", str(distributed.free_port())], tmp_path)
    assert done.returncode == 0, done.stderr
    # The script's own lines: torch 2.9's gloo writes its connection lines to stdout too.
    weights = sorted(re.findall(r"^rank \d: (\S+)$", done.stdout, re.MULTILINE))
    assert len(weights) == 2 and weights[0] == weights[1]  # the ranks agree after the step
    assert "legacy_zero.py:17: FSDPDeprecationWarning" in done.stderr  # OSS(...), FSDP307
    assert "legacy_zero.py:18: FSDPDeprecationWarning" in done.stderr  # ShardedDDP, FSDP308
    assert "FutureWarning" not in done.stderr
