"""FSDP401's form of FSDP1's optimizer-state load, plain and dual stack.

Shapes of our own writing after real fine-tuning recipes: a setup that converts a full
optimizer state with ``FSDP.optim_state_dict_to_load`` and loads the result into the
optimizer. The text tests pin what is written and where the pair is kept FSDP1; the run
(one spawn of two gloo ranks) resumes training from the same state with FSDP1, the plain
rewrite and both branches of the dual rewrite, and compares the models after two steps.
"""

from __future__ import annotations

import traceback
import warnings

import pytest
import torch
import torch.distributed.fsdp
from torch import nn

from codemods.engine.run import run
from tests import distributed
from tests.test_fsdp2_checkpoint_blocks import RUNS_REWRITES, _settings, fsdp401_run, rewrites
from tests.test_fsdp2_checkpoint_forms import _Unit

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from model import Net\n\n\n"
)


def _migrate(body: str, torch_range: str = "2.6..") -> tuple[str | None, list]:
    return fsdp401_run(HEAD, body, _settings(torch_range))


def _setup(conversion: str, load: str = "optim.load_state_dict(state)", before: str = "") -> str:
    return (
        "def setup(state):\n"
        "    model = FSDP(Net())\n"
        "    optim = torch.optim.AdamW(model.parameters())\n"
        f"{before}"
        "    if state:\n"
        f"        state = {conversion}\n"
        f"        {load}\n"
        "    return model, optim\n"
    )


CONVERSIONS = [
    "FSDP.optim_state_dict_to_load(model, optim, state)",
    "FSDP.optim_state_dict_to_load(model=model, optim=optim, optim_state_dict=state)",
    "FSDP.optim_state_dict_to_load(model, optim, optim_state_dict=state)",
]


CONV_LOAD = "optim.load_state_dict(state)"


@pytest.mark.parametrize("conversion", CONVERSIONS, ids=["positional", "keywords", "mixed"])
def test_the_pair_becomes_one_set_optimizer_state_dict(conversion):
    new, (finding,) = _migrate(_setup(conversion))
    assert finding.fixed, finding.withheld
    assert new.endswith(
        "    if state:\n"
        "        set_optimizer_state_dict(\n"
        "            model, optim, state, options=StateDictOptions(full_state_dict=True)\n"
        "        )\n"
        "    return model, optim\n"
    )
    assert "FSDP" not in new.replace("FSDP2", "")
    assert (
        "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
        "set_optimizer_state_dict\n"
    ) in new
    # the differences the finding names
    assert "`set_optimizer_state_dict(model, optim, state, options=" in finding.message
    assert "every rank still passes the full FQN-keyed state" in finding.message
    assert "DTensor shard of each state" in finding.message
    assert "keeps the `step` tensors of the dict passed" in finding.message


def test_in_the_dual_stack_the_pair_dispatches_on_has_fsdp2():
    new, (finding,) = _migrate(_setup(CONVERSIONS[0]), "2.0..")
    assert finding.fixed, finding.withheld
    assert (
        "    if state:\n"
        "        if HAS_FSDP2:\n"
        "            set_optimizer_state_dict(\n"
        "                model, optim, state, options=StateDictOptions(full_state_dict=True)\n"
        "            )\n"
        "        else:\n"
        "            state = FSDP.optim_state_dict_to_load(model, optim, state)\n"
        "            optim.load_state_dict(state)\n"
        "    return model, optim\n"
    ) in new
    block = new[new.index("try:") : new.index("HAS_FSDP2 =")]
    assert "set_optimizer_state_dict" in block and "StateDictOptions" in block


def test_from_torch_2_2_the_dual_stack_imports_dcp_once_at_the_top():
    body = _setup(CONVERSIONS[0]) + "\n\ndef save(model, optim):\n"
    new, findings = _migrate(body + "    return FSDP.optim_state_dict(model, optim)\n", "2.2..")
    assert [f.fixed for f in findings] == [True]
    assert new.count("StateDictOptions") == 3  # the import and the two calls
    assert "import StateDictOptions, get_optimizer_state_dict, set_optimizer_state_dict\n" in new
    assert "        fully_shard = None\n" in new  # the `try` imports FSDP2 alone
    assert "        if HAS_FSDP2:\n            set_optimizer_state_dict(\n" in new


def test_a_second_run_changes_nothing():
    for torch_range in ("2.6..", "2.0.."):
        new, _ = _migrate(_setup(CONVERSIONS[0]), torch_range)
        assert run(new.encode(), _settings(torch_range)).new_source is None


@pytest.mark.parametrize(
    ("conversion", "load", "before"),
    [
        # the converted state is read again after the load
        (CONVERSIONS[0], "optim.load_state_dict(state)\n        print(state)", ""),
        # another optimizer loads it
        (CONVERSIONS[0], "other.load_state_dict(state)", ""),
        # no load of it follows
        (CONVERSIONS[0], "print(state)", ""),
        # FSDP1's other parameters: no FSDP2 form
        ("FSDP.optim_state_dict_to_load(model, optim, state, load_directly=True)", "pass", ""),
        # a comment on the load's line would go with it
        (CONVERSIONS[0], "optim.load_state_dict(state)  # resume", ""),
        # or one inside the conversion
        ("FSDP.optim_state_dict_to_load(  # full\n    model, optim, state)", CONV_LOAD, ""),
        # in a loop, a read on an earlier line may see the converted state
        (CONVERSIONS[0], "optim.load_state_dict(state)", "    for _ in range(2):\n"),
    ],
    ids=[
        "read-after",
        "other-optimizer",
        "no-load",
        "load-directly",
        "comment",
        "comment-in-call",
        "loop",
    ],
)
def test_other_shapes_keep_the_file_fsdp1_with_the_recipe(conversion, load, before):
    source = _setup(conversion, load, before)
    if before:  # the `if` goes in the loop
        source = source.replace("    if state:\n", "        if state:\n")
        source = source.replace("        state = FSDP", "            state = FSDP")
        source = source.replace("        optim.load", "            optim.load")
    new, (finding,) = _migrate(source)
    assert new is None
    assert "optim_state_dict_to_load" in finding.withheld
    assert "in place of the conversion and the optimizer's own load" in finding.withheld


#: FSDP1 code of our own writing that resumes from a full optimizer state.
SCRIPT = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


def resume(model, unit, device, state, batches):
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    if state:
        state = FSDP.optim_state_dict_to_load(model, optim, state)
        optim.load_state_dict(state)
    for batch in batches:
        model(batch).sum().backward()
        optim.step()
        optim.zero_grad()
    return model(batches[0]).detach()
"""


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2))


def _full_state() -> dict:
    """A full optimizer state keyed by name, as FSDP1's `optim_state_dict` gives it."""
    model = _model()
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    for seed in (7, 8):
        model(torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))).sum().backward()
        optim.step()
        optim.zero_grad()
    names = [name for name, _ in model.named_parameters()]
    saved = optim.state_dict()
    return {
        "state": {names[i]: value for i, value in saved["state"].items()},
        "param_groups": [
            {**group, "params": [names[i] for i in group["params"]]}
            for group in saved["param_groups"]
        ],
    }


def _resumed(rank: int, source: str, state: dict | None, hide_fsdp2: bool = False) -> dict:
    from tests.test_fsdp2_dual_stack import _load, _without_fsdp2

    batches = [torch.randn(4, 8, generator=torch.Generator().manual_seed(rank + s)) for s in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hide_fsdp2:
            with _without_fsdp2():
                module = _load(source, "old_torch")
        else:
            module = _load(source, "this_torch")
        out = module.resume(_model(), _Unit, distributed.device_for(rank), state, batches)
    steps = sorted({float(e["step"]) for e in state["state"].values()}) if state else None
    return {"out": out, "fsdp2": getattr(module, "HAS_FSDP2", None), "steps": steps}


def _all(rank: int, world_size: int, scripts: dict[str, str]) -> dict:
    try:
        # each its own state: FSDP2's optimizer counts steps in the one it was given
        out = {form: _resumed(rank, source, _full_state()) for form, source in scripts.items()}
        out["dual-forced"] = _resumed(rank, scripts["dual"], _full_state(), hide_fsdp2=True)
        out["fresh"] = _resumed(rank, scripts["old"], None)
        return out
    except Exception:  # noqa: BLE001 - the test reports it
        return {"error": traceback.format_exc()}


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@RUNS_REWRITES
def test_the_loaded_optimizer_trains_as_fsdp1s_did():
    scripts = rewrites(SCRIPT)
    assert "optim_state_dict_to_load" not in scripts["plain"]
    ranks = distributed.run(_all, scripts, backend="gloo", world_size=2, timeout=300)
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
        old = result["old"]["out"]
        # the load matters: without it the two steps end elsewhere
        assert not torch.allclose(result["fresh"]["out"], old, rtol=1e-3, atol=1e-4)
        assert result["dual"]["fsdp2"] is True and result["dual-forced"]["fsdp2"] is False
        for form in ("plain", "dual"):
            assert torch.allclose(result[form]["out"], old, rtol=1e-5, atol=1e-6), form
        # FSDP1's branch is FSDP1 itself: the same numbers exactly
        assert torch.equal(result["dual-forced"]["out"], old)
        # as the finding says: FSDP1's conversion copied the step counts, FSDP2's optimizer
        # keeps the loaded dict's (2 steps saved, 2 more taken)
        assert result["old"]["steps"] == result["dual-forced"]["steps"] == [2.0]
        assert result["plain"]["steps"] == result["dual"]["steps"] == [4.0]
