"""FSDP401's forms of ``state_dict_type`` blocks with more in them, plain and dual stack.

Shapes of our own writing after real training scripts: a ``FULL_STATE_DICT`` block that
takes the state dict and then saves it on rank 0 (more statements than FSDP115's one);
a ``LOCAL_STATE_DICT`` block around the optimizer's own ``state_dict()`` (its statements
ask the model nothing); and both where the project's releases start before FSDP2 (the
dual stack). The text tests pin what is written; the run (one spawn of two gloo ranks)
trains the FSDP1 original, the plain rewrite and both branches of the dual rewrite from
the same start and compares what each block gives.
"""

from __future__ import annotations

import ast
import textwrap
import traceback
import warnings

import pytest
import torch
import torch.distributed.fsdp
from pyflakes.checker import Checker
from torch import nn

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings
from compat.features import current
from tests import distributed
from tests.test_fsdp2_checkpoint_forms import _Unit

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n\n\n"
)


def _settings(torch_range: str) -> Settings:
    return Settings(
        fix=True, unsafe_fixes=True, select=("FSDP4",), releases=Releases.parse(torch=torch_range)
    )


def fsdp401_run(head: str, body: str, settings: Settings) -> tuple[str | None, list]:
    """The new source of ``head`` + ``body`` (None: unchanged) and its FSDP401 findings."""
    outcome = run((head + textwrap.dedent(body)).encode(), settings)
    new = None if outcome.new_source is None else outcome.new_source.decode()
    return new, [f for f in outcome.findings if f.code == "FSDP401"]


def _migrate(body: str, torch_range: str = "2.6..") -> tuple[str | None, list]:
    return fsdp401_run(HEAD, body, _settings(torch_range))


SAVE = """\
def save(model, path, rank):
    model = FSDP(model)
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
        if rank == 0:
            torch.save(state, path)
    optim = torch.optim.Adam(model.parameters())
    with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        torch.save(optim.state_dict(), f"{path}.{rank}")
"""


def test_a_full_block_with_more_statements_keeps_them_after_the_dcp_call():
    new, (finding,) = _migrate(SAVE)
    assert finding.fixed, finding.withheld
    assert new.endswith(
        "    model = fully_shard(model)\n"
        "    state = get_model_state_dict(\n"
        "        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
        "    )\n"
        "    if rank == 0:\n        torch.save(state, path)\n"
        "    optim = torch.optim.Adam(model.parameters())\n"
        '    torch.save(optim.state_dict(), f"{path}.{rank}")\n'
    )
    assert "cfg =" not in new and "StateDictType" not in new
    assert "whose statements ask the model nothing loses its `with`" in finding.message


def test_in_the_dual_stack_only_the_state_dict_call_dispatches():
    new, (finding,) = _migrate(SAVE, "2.0..")
    assert finding.fixed, finding.withheld
    assert (
        "    if HAS_FSDP2:\n"
        "        state = get_model_state_dict(\n"
        "            model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
        "        )\n"
        "    else:\n"
        "        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
        "            state = model.state_dict()\n"
        "    if rank == 0:\n        torch.save(state, path)\n"
    ) in new
    # FSDP1's branch still passes the config; the inert block loses its `with` on both
    assert "    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n" in new
    assert (
        '    optim = torch.optim.Adam(model.parameters())\n    torch.save(optim.state_dict(), f"'
        in new
    )
    block = new[new.index("try:") : new.index("HAS_FSDP2 =")]
    assert "get_model_state_dict" in block and "StateDictOptions" in block


def test_a_dual_load_block_dispatches_even_before_dcp_loads_fsdp1():
    new, (finding,) = _migrate(
        "def load(model, state):\n    model = FSDP(model)\n"
        "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
        "        model.load_state_dict(state)\n",
        "2.2..",
    )
    assert finding.fixed, finding.withheld
    assert (
        "    if HAS_FSDP2:\n        set_model_state_dict(\n"
        "            model, state, options=StateDictOptions(full_state_dict=True)\n"
        "        )\n    else:\n"
    ) in new


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (  # the model again after the state-dict call: its layout is the block's
            "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
            "    state = model.state_dict()\n    model.eval()\n",
            "FSDP.state_dict_type",
        ),
        (  # a function of the file may ask the model for its state dict
            "def keep():\n    pass\n\n\n"
            "with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):\n    keep()\n",
            "LOCAL_STATE_DICT",
        ),
        (  # an optimizer passed in may be anything
            "with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):\n"
            "    state = optim.state_dict()\n",
            "LOCAL_STATE_DICT",
        ),
    ],
    ids=["model-after", "local-function", "unknown-optimizer"],
)
def test_a_block_that_may_ask_the_model_keeps_the_file_fsdp1(body, why):
    new, (finding,) = _migrate("model = FSDP(model)\noptim = make()\n" + body)
    assert new is None and why in finding.withheld


def _pyflakes(source: str) -> set[str]:
    return {m.message % m.message_args for m in Checker(ast.parse(source)).messages}


@pytest.mark.parametrize("torch_range", ["2.6..", "2.0.."])
def test_a_second_run_changes_nothing_and_pyflakes_finds_nothing_new(torch_range):
    new, _ = _migrate(SAVE, torch_range)
    again = run(new.encode(), _settings(torch_range))
    assert again.new_source is None
    assert _pyflakes(new) <= _pyflakes(HEAD + SAVE)


#: FSDP1 checkpoint code of our own writing; the run executes it and its rewrites.
SCRIPT = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


def train(model, unit, device, batches):
    start = {name: value.clone() for name, value in model.state_dict().items()}
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    for batch in batches:
        model(batch).sum().backward()
        optim.step()
        optim.zero_grad()
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        full = model.state_dict()
        names = sorted(full)
    with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        saved = optim.state_dict()
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        model.load_state_dict(start)
        loaded = True
    return full, names, saved, loaded, model(batches[0]).detach()
"""


def _norms(saved: dict) -> dict[str, float]:
    """Each kind of optimizer state's squared norm over every parameter and rank.

    Whatever the layout (FSDP1's flat parameters, FSDP2's DTensor shards), the numbers
    are the same; and the step count.
    """
    out: dict[str, torch.Tensor] = {}
    for entries in saved["state"].values():
        for key, value in entries.items():
            local = value.to_local() if hasattr(value, "to_local") else value
            if key != "step":
                total = local.detach().double().pow(2).sum().reshape(1)
                out[key] = out.get(key, torch.zeros(1, dtype=torch.float64)) + total
    for total in out.values():
        torch.distributed.all_reduce(total)
    steps = {float(e["step"]) for e in saved["state"].values()}
    return {**{key: total.item() for key, total in out.items()}, "steps": max(steps)}


def _trained(rank: int, source: str, hide_fsdp2: bool = False) -> dict:
    from tests.state_dicts import plain
    from tests.test_fsdp2_dual_stack import _load, _without_fsdp2

    torch.manual_seed(0)
    model = nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2))
    batches = [torch.randn(4, 8, generator=torch.Generator().manual_seed(rank + s)) for s in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hide_fsdp2:
            with _without_fsdp2():
                module = _load(source, "old_torch")
        else:
            module = _load(source, "this_torch")
        full, names, saved, loaded, out = module.train(
            model, _Unit, distributed.device_for(rank), batches
        )
    return {
        "full": plain(full),
        "names": names,
        "norms": _norms(saved),
        "loaded": loaded,
        "out": out,
        "fsdp2": getattr(module, "HAS_FSDP2", None),
    }


def _all(rank: int, world_size: int, scripts: dict[str, str]) -> dict:
    try:
        out = {form: _trained(rank, source) for form, source in scripts.items()}
        out["dual-forced"] = _trained(rank, scripts["dual"], hide_fsdp2=True)
        return out
    except Exception:  # noqa: BLE001 - the test reports it
        return {"error": traceback.format_exc()}


#: Where the rewrites run: they import FSDP2 from torch.distributed.fsdp (torch 2.6+).
RUNS_REWRITES = pytest.mark.skipif(
    not hasattr(torch.distributed.fsdp, "fully_shard")
    or not (current().fsdp2_on_cpu or torch.cuda.is_available()),
    reason="the rewrite imports FSDP2 from torch.distributed.fsdp (torch 2.6+), run where it runs",
)


def rewrites(script: str) -> dict[str, str]:
    """``script`` as written (``"old"``), its plain rewrite and its dual-stack one."""
    scripts = {"old": script}
    for form, torch_range in (("plain", "2.6.."), ("dual", "2.0..")):
        outcome = run(script.encode(), _settings(torch_range))
        assert [f.fixed for f in outcome.findings if f.code == "FSDP401"] == [True], form
        scripts[form] = outcome.new_source.decode()
    return scripts


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@RUNS_REWRITES
def test_the_block_forms_give_what_fsdp1_gave():
    from tests.state_dicts import assert_same

    scripts = rewrites(SCRIPT)
    assert "state_dict_type" not in scripts["plain"]
    ranks = distributed.run(_all, scripts, backend="gloo", world_size=2, timeout=300)
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
        old = result["old"]
        assert result["dual"]["fsdp2"] is True and result["dual-forced"]["fsdp2"] is False
        for form in ("plain", "dual", "dual-forced"):
            new = result[form]
            assert assert_same(old["full"], new["full"], f"rank {rank} {form} full") > 0
            assert new["names"] == old["names"] and new["loaded"] is True
            assert torch.allclose(new["out"], old["out"], rtol=1e-5, atol=1e-6), form
            # the optimizer's own state: DTensor shards per parameter where FSDP1 (without
            # `use_orig_params`) held flat ones, as the finding says; the same numbers
            assert new["norms"] == pytest.approx(old["norms"], rel=1e-5), form
            assert new["norms"]["steps"] == 2 and new["norms"]["exp_avg"] > 0
        # FSDP1's branch is FSDP1 itself: the same numbers exactly
        assert torch.equal(result["dual-forced"]["out"], old["out"])
