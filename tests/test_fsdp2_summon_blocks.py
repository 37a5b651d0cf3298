"""FSDP401's form of ``FSDP.summon_full_params`` blocks that only read the model.

The shape, of our own writing after checkpoint tests: two models' parameters compared
inside one ``with`` of two ``summon_full_params`` items. Each item becomes the helper
``summon_full_params_like_fsdp1(model)`` (each unit unsharded for the block). The text
tests pin what is written, plain and in the dual stack, and which blocks keep the file
FSDP1; the run (one spawn of two gloo ranks) compares what the block reads, and the
model after it, with FSDP1's.
"""

from __future__ import annotations

import textwrap
import traceback
import warnings

import pytest
import torch
from torch import nn

from tests import distributed
from tests.test_fsdp2_checkpoint_blocks import RUNS_REWRITES, _settings, fsdp401_run, rewrites
from tests.test_fsdp2_checkpoint_forms import _Unit

HEAD = "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
HELPER = "summon_full_params_like_fsdp1"


def _migrate(body: str, torch_range: str = "2.6..") -> tuple[str | None, list]:
    return fsdp401_run(HEAD, body, _settings(torch_range))


def _check(block: str, items: str = "FSDP.summon_full_params(a), FSDP.summon_full_params(b)"):
    return (
        "def check(make):\n"
        "    a = FSDP(make())\n    b = FSDP(make())\n"
        f"    with {items}:\n"
        f"{textwrap.indent(block, ' ' * 8)}"
        "    return a\n"
    )


READS = "torch.testing.assert_close(a.weight, b.weight)\nsame = a.bias.sum() == b.bias.sum()\n"


def test_each_item_becomes_the_helper_written_once():
    items = "FSDP.summon_full_params(a, recurse=True), FSDP.summon_full_params(b)"
    new, (first, second) = _migrate(_check(READS, items))
    assert first.fixed and second.fixed, first.withheld
    assert new.count(f"def {HELPER}(module):") == 1
    assert f"    with {HELPER}(a), {HELPER}(b):\n" in new
    assert "        unit.unshard()\n" in new and "            unit.reshard()\n" in new
    assert "import contextlib\n" in new and "FSDPModule" in new and "FSDP(" not in new
    assert "nothing the block changes is written back" in first.message


def test_in_the_dual_stack_each_item_chooses_by_the_flag():
    new, (first, _) = _migrate(_check(READS), "2.1..")
    assert first.fixed, first.withheld
    assert (
        f"    with (\n        {HELPER}(a)\n        if HAS_FSDP2\n"
        "        else FSDP.summon_full_params(a)\n    ), (\n"
    ) in new
    block = new[new.index("try:") : new.index("HAS_FSDP2 =")]
    assert "FSDPModule" in block  # the helper's class: None on releases without FSDP2


@pytest.mark.parametrize(
    ("block", "items"),
    [
        ("a.weight.zero_()\n", None),  # a method on a parameter may change it
        ("a.weight = b.weight\n", None),  # assigned: FSDP1 writes it back
        ("a.weight[0] += 1\n", None),
        ("state = a.state_dict()\n", None),  # DTensor shards on FSDP2 even here
        ("grads = a.weight.grad\n", None),  # FSDP1's `with_grads`
        ("torch.save(a, 'a.pt')\n", None),  # the model itself, passed on
        (READS, "FSDP.summon_full_params(a, rank0_only=True)"),
        (READS, "FSDP.summon_full_params(a, recurse=False)"),
        (READS, "FSDP.summon_full_params(a) as full"),
    ],
    ids=["method", "assign", "augassign", "state-dict", "grad", "passed", "rank0", "shallow", "as"],
)
def test_a_block_that_may_do_more_than_read_keeps_the_file_fsdp1(block, items):
    new, findings = _migrate(_check(block, items or "FSDP.summon_full_params(a)"))
    assert new is None and "summon_full_params" in findings[0].withheld


#: FSDP1 code of our own writing; the run executes it and its rewrites.
SCRIPT = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


def train(model, unit, device, batch):
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    model(batch).sum().backward()
    optim.step()
    with FSDP.summon_full_params(model):
        inner = model[0].linear.weight.detach().clone()
        last = model[2].weight.detach().clone()
    kinds = {type(parameter).__name__ for parameter in model.parameters()}
    return inner, last, kinds, model(batch).detach()
"""


def _read(rank: int, source: str, hide_fsdp2: bool = False) -> dict:
    from tests.test_fsdp2_optim_full_block import load_script

    torch.manual_seed(0)
    model = nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2))
    batch = torch.randn(4, 8, generator=torch.Generator().manual_seed(rank))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = load_script(source, hide_fsdp2)
        inner, last, kinds, out = module.train(model, _Unit, distributed.device_for(rank), batch)
    return {"inner": inner, "last": last, "out": out, "kinds": kinds}


def _all(rank: int, world_size: int, scripts: dict[str, str]) -> dict:
    try:
        out = {form: _read(rank, source) for form, source in scripts.items()}
        out["dual-forced"] = _read(rank, scripts["dual"], hide_fsdp2=True)
        return out
    except Exception:  # noqa: BLE001 - the test reports it
        return {"error": traceback.format_exc()}


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@RUNS_REWRITES
def test_the_block_reads_what_fsdp1_gave():
    scripts = rewrites(SCRIPT)
    assert "summon_full_params(model)" not in scripts["plain"]
    ranks = distributed.run(_all, scripts, backend="gloo", world_size=2, timeout=300)
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
        old = result["old"]
        assert old["inner"].shape == (8, 8) and old["last"].shape == (2, 8)  # full, in a unit
        for form in ("plain", "dual", "dual-forced"):
            new = result[form]
            # the same full parameters inside the block, on every rank
            assert torch.allclose(new["inner"], old["inner"], rtol=1e-5, atol=1e-6), form
            assert torch.allclose(new["last"], old["last"], rtol=1e-5, atol=1e-6), form
            assert torch.allclose(new["out"], old["out"], rtol=1e-5, atol=1e-6), form
        # after the block every unit is sharded again: DTensors on FSDP2
        assert result["plain"]["kinds"] == {"DTensor"} and result["dual"]["kinds"] == {"DTensor"}
