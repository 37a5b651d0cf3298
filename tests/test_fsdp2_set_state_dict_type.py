"""FSDP401's form of ``FSDP.set_state_dict_type(model, SHARDED_STATE_DICT)`` on a converted model.

The shape, of our own writing after rollout tests: the type is set once after wrapping,
then the model's ``state_dict()`` / ``load_state_dict()`` are sharded. FSDP2's are
sharded already, so the statement goes (dual stack: it stays for FSDP1 under ``if not
HAS_FSDP2:``) and the calls stay as written. The text tests pin what is written and
what keeps the file FSDP1; the run (one spawn of two gloo ranks) compares FSDP1's
sharded state dict and load with the rewrite's: keys, tensor kinds, each rank's part
and the loaded model's output.
"""

from __future__ import annotations

import traceback
import warnings

import pytest
import torch
from torch import nn

from codemods.engine.run import run
from tests import distributed
from tests.test_fsdp2_checkpoint_blocks import RUNS_REWRITES, _settings, fsdp401_run
from tests.test_fsdp2_checkpoint_forms import _local, _Unit

HEAD = (
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import FullStateDictConfig, ShardedStateDictConfig\n"
    "from torch.distributed.fsdp import StateDictType\n\n\n"
)
SET = "FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT{config})"


def _migrate(body: str, torch_range: str = "2.6..") -> tuple[str | None, list]:
    return fsdp401_run(HEAD, body, _settings(torch_range))


def _prepare(config: str = ", ShardedStateDictConfig()", after: str = "") -> str:
    return (
        "def prepare(model):\n"
        "    model = FSDP(model)\n"
        f"    {SET.format(config=config)}\n"
        f"{after}"
        "    return model\n"
    )


@pytest.mark.parametrize("config", ["", ", ShardedStateDictConfig()"], ids=["none", "default"])
def test_the_set_goes_and_later_state_dicts_stay(config):
    after = "    state = model.state_dict()\n    model.load_state_dict(state)\n"
    new, (finding,) = _migrate(_prepare(config, after))
    assert finding.fixed, finding.withheld
    assert new.endswith(
        f"def prepare(model):\n    model = fully_shard(model)\n{after}    return model\n"
    )
    assert "from torch.distributed.fsdp import StateDictType\n" not in new  # unused now
    assert "FSDP2's `state_dict()` is sharded already" in finding.message


def test_in_the_dual_stack_fsdp1_still_sets_it():
    new, (finding,) = _migrate(_prepare(), "2.0..")
    assert finding.fixed, finding.withheld
    assert (
        "    if not HAS_FSDP2:\n"
        f"        {SET.format(config=', ShardedStateDictConfig()')}\n"
        "    return model\n"
    ) in new


@pytest.mark.parametrize(
    "body",
    [
        # the model's state dict before the set: FSDP1's full one there
        _prepare().replace("    FSDP.set", "    state = model.state_dict()\n    FSDP.set"),
        # another function reads it: the type may hold there, or not
        _prepare() + "\n\ndef save(model):\n    return model.state_dict()\n",
        # a config with values: no FSDP2 form keeps them
        _prepare(", ShardedStateDictConfig(offload_to_cpu=True)"),
        # a full type set for later calls
        _prepare().replace("SHARDED_STATE_DICT, ShardedStateDictConfig()", "FULL_STATE_DICT"),
        # a comment on the statement would be lost
        _prepare().replace("    FSDP.set", "    # sharded checkpoints\n    FSDP.set"),
    ],
    ids=["state-dict-before", "other-function", "config-values", "full-type", "comment"],
)
def test_what_is_not_certain_keeps_the_file_fsdp1(body):
    new, (finding,) = _migrate(body)
    assert new is None and "set_state_dict_type" in finding.withheld


#: FSDP1 code of our own writing; the run executes it and its rewrite.
SCRIPT = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardedStateDictConfig, StateDictType
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


def train(model, fresh, unit, device, batches):
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig())
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    for batch in batches:
        model(batch).sum().backward()
        optim.step()
        optim.zero_grad()
    state = model.state_dict()
    other = FSDP(fresh, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    FSDP.set_state_dict_type(other, StateDictType.SHARDED_STATE_DICT)
    other.load_state_dict(state)
    return state, model(batches[0]).detach(), other(batches[0]).detach()
"""


def _trained(rank: int, source: str) -> dict:
    from tests.state_dicts import plain
    from tests.test_fsdp2_dual_stack import _load

    torch.manual_seed(0)
    model = nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2))
    fresh = nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2))
    batches = [torch.randn(4, 8, generator=torch.Generator().manual_seed(rank + s)) for s in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = _load(source, "script")
        state, out, loaded = module.train(
            model, fresh, _Unit, distributed.device_for(rank), batches
        )
    kinds = {name: type(value).__name__ for name, value in state.items()}
    return {"state": plain(state), "kinds": kinds, "out": out, "loaded": loaded}


def _both(rank: int, world_size: int, scripts: dict[str, str]) -> dict:
    try:
        return {form: _trained(rank, source) for form, source in scripts.items()}
    except Exception:  # noqa: BLE001 - the test reports it
        return {"error": traceback.format_exc()}


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@RUNS_REWRITES
def test_the_rewrite_gives_fsdp1s_sharded_state_dict_and_load():
    outcome = run(SCRIPT.encode(), _settings("2.6.."))
    assert [f.fixed for f in outcome.findings if f.code == "FSDP401"] == [True, True]
    new = outcome.new_source.decode()
    assert "set_state_dict_type" not in new and "model.state_dict()" in new
    scripts = {"old": SCRIPT, "new": new}
    ranks = distributed.run(_both, scripts, backend="gloo", world_size=2, timeout=300)
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
        old, rewritten = result["old"], result["new"]
        # the same names; ShardedTensors become DTensors (the finding says so)
        assert list(old["state"]) == list(rewritten["state"])
        assert set(old["kinds"].values()) == {"ShardedTensor"}
        assert set(rewritten["kinds"].values()) == {"DTensor"}
        for name, value in old["state"].items():  # each rank holds the same part
            assert torch.equal(_local(value), _local(rewritten["state"][name])), name
        assert torch.allclose(old["out"], rewritten["out"], rtol=1e-5, atol=1e-6)
        # loading the sharded state into a fresh model gives the trained one, both ways
        assert torch.equal(old["loaded"], old["out"])
        assert torch.equal(rewritten["loaded"], rewritten["out"])


def test_a_converting_test_s_set_holds_no_library_file_without_the_bridge(tmp_path):
    """The test's class call becomes nothing (not ``FSDP1Api``'s): the library needs no bridge."""
    import json

    from codemods.migrate import main as migrate
    from tests.test_fsdp2_across_files import LIBRARY, _project

    test = HEAD + "import lib\n\n\n" + _prepare(after="    state = model.state_dict()\n")
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_rollout.py": test})
    report = tmp_path / "report.json"
    flags = ["--check", "--unsafe-fixes", "--extend-select", "FSDP4", "--report", str(report)]
    migrate([*flags, str(tmp_path)])
    files = {f["path"]: f["findings"] for f in json.loads(report.read_text())["files"]}
    found = {
        path: [x for x in findings if x["code"] == "FSDP401"] for path, findings in files.items()
    }
    assert [x["fixed"] for x in found[str(tmp_path / "lib.py")]] == [True]
    assert [x["fixed"] for x in found[str(tmp_path / "tests" / "test_rollout.py")]] == [True]
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", str(tmp_path)])
    assert "FSDP1Api" not in (tmp_path / "tests" / "test_rollout.py").read_text()
    assert "fully_shard(model" in (tmp_path / "lib.py").read_text()
