"""FSDP401's forms of FSDP1's checkpoint calls on a converted model.

The text tests pin what is written (and what is not). The run (one spawn of two gloo
ranks) migrates a script of FSDP1 checkpoint code, then trains the FSDP1 original and
the FSDP2 rewrite from the same start and compares what each checkpoint call gives:
the full state dict, the sharded one (each rank's shard of each parameter) and the
optimizer's full state.
"""

from __future__ import annotations

import textwrap
import traceback
import warnings

import pytest
import torch
import torch.distributed.fsdp
from torch import nn

from codemods.engine.run import run
from codemods.settings import Settings
from compat.features import current
from tests import distributed

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import FullStateDictConfig, ShardedStateDictConfig\n"
    "from torch.distributed.fsdp import StateDictType\n"
    "from model import Net\n\n"
)
SETTINGS = Settings(fix=True, unsafe_fixes=True, select=("FSDP4",))


def _migrate(body: str, settings: Settings = SETTINGS) -> tuple[str | None, list]:
    """The code after the imports, migrated (None where unchanged), and FSDP401's findings."""
    outcome = run((HEAD + textwrap.dedent(body)).encode(), settings)
    new = None if outcome.new_source is None else outcome.new_source.decode()
    return new and new.partition("from model import Net\n")[2], [
        f for f in outcome.findings if f.code == "FSDP401"
    ]


FULL_SAVE = """\
def save():
    model = FSDP(Net())
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
    return state
"""


def test_a_full_block_becomes_fsdp115s_form_without_fsdp115_selected():
    new, (finding,) = _migrate(FULL_SAVE)
    assert finding.fixed
    assert new.endswith(
        "    model = fully_shard(model)\n    state = get_model_state_dict(\n"
        "        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
        "    )\n    return state\n"
    )
    assert "an empty dict on all but the global rank 0" in finding.message


def test_a_full_block_written_once_with_fsdp115_selected_too():
    settings = Settings(fix=True, unsafe_fixes=True, select=("FSDP4", "FSDP115"))
    new, _ = _migrate(FULL_SAVE, settings)
    assert new.count("get_model_state_dict(") == 1 and "cfg =" not in new


def test_a_full_load_becomes_set_model_state_dict():
    new, (finding,) = _migrate(
        "model = FSDP(Net())\n"
        "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
        "    model.load_state_dict(torch.load('full.pt'))\n"
    )
    assert finding.fixed
    assert new.endswith(
        "set_model_state_dict(\n    model, torch.load('full.pt'), "
        "options=StateDictOptions(full_state_dict=True)\n)\n"
    )


@pytest.mark.parametrize("config", ["", ", ShardedStateDictConfig()"])
def test_a_sharded_block_loses_its_with(config):
    new, (finding,) = _migrate(
        "model = FSDP(Net())\n"
        "# the shards\n"
        f"with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT{config}):\n"
        "    state = model.state_dict()\n"
        "    torch.save(state, 'shard.pt')\n"
        "print(state)\n"
    )
    assert finding.fixed and "DTensors where FSDP1 gave ShardedTensors" in finding.message
    assert new.endswith(
        "model = fully_shard(model)\n# the shards\n"
        "state = model.state_dict()\ntorch.save(state, 'shard.pt')\nprint(state)\n"
    )


def test_the_optimizer_state_becomes_get_optimizer_state_dict():
    new, (finding,) = _migrate(
        "model = FSDP(Net())\noptim = torch.optim.Adam(model.parameters())\n"
        "full = FSDP.optim_state_dict(model, optim)\n"
    )
    assert finding.fixed
    assert new.endswith(
        "full = get_optimizer_state_dict(model, optim, "
        "options=StateDictOptions(full_state_dict=True))\n"
    )


def test_the_optimizer_state_in_a_sharded_block_stays_sharded():
    new, (finding,) = _migrate(
        "model = FSDP(Net())\noptim = torch.optim.Adam(model.parameters())\n"
        "with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):\n"
        "    state = {'model': model.state_dict(), 'optim': FSDP.optim_state_dict(model, optim)}\n"
    )
    assert finding.fixed and "DTensor where FSDP1 gave ShardedTensors" in finding.message
    assert new.endswith(
        "state = {'model': model.state_dict(), 'optim': get_optimizer_state_dict(model, optim)}\n"
    )


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (  # FSDP1's flat shards: no FSDP2 form
            "with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):\n"
            "    state = model.state_dict()\n",
            "LOCAL_STATE_DICT",
        ),
        (  # another model's optimizer state in a sharded block
            "with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):\n"
            "    osd = FSDP.optim_state_dict(other, optim)\n",
            "SHARDED_STATE_D",
        ),
        (  # a config with values has no certain form
            "with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT, "
            "ShardedStateDictConfig(offload_to_cpu=True)):\n"
            "    state = model.state_dict()\n",
            "FSDP.state_dict_type",
        ),
        ("osd = FSDP.optim_state_dict_to_load(model, optim, osd)\n", "optim_state_dict_to_load"),
        ("with FSDP.summon_full_params(model):\n    model.weight.zero_()\n", "summon_full_params"),
        ("FSDP.set_state_dict_type(model, StateDictType.FULL_STATE_DICT)\n", "set_state_dict"),
    ],
    ids=["local", "optim-in-sharded", "sharded-config", "to-load", "summon", "set-type"],
)
def test_what_has_no_certain_form_keeps_the_file_fsdp1(body, why):
    new, (finding,) = _migrate("model = FSDP(Net())\noptim = None\n" + body)
    assert new is None and not finding.fixed
    assert why in finding.withheld


#: FSDP1 checkpoint code of our own writing; the run executes it and its rewrite.
SCRIPT = """\
import torch
import torch.distributed.fsdp
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


def wrap(model, unit, device):
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    return model


def full(model):
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        state = model.state_dict()
    return state


def sharded(model):
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = model.state_dict()
    return state


def optimizer_state(model, optim):
    return FSDP.optim_state_dict(model, optim)


def sharded_optimizer_state(model, optim):
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = FSDP.optim_state_dict(model, optim)
    return state
"""


class _Unit(nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(size, size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def _checkpoints(rank: int, source: str) -> dict:
    """Build, wrap (as ``source`` does), train two Adam steps, take every checkpoint."""
    from tests.state_dicts import plain

    device = distributed.device_for(rank)
    namespace: dict = {}
    exec(compile(source, "<script>", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["wrap"](nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2)), _Unit, device)
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    for step in range(2):
        torch.manual_seed(10 * rank + step)
        model(torch.randn(4, 8)).sum().backward()
        optim.step()
        optim.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "full": plain(namespace["full"](model)),
            "sharded": plain(namespace["sharded"](model)),
            "optim": plain(namespace["optimizer_state"](model, optim)),
            "sharded_optim": plain(namespace["sharded_optimizer_state"](model, optim)),
        }


def _both(rank: int, world_size: int, old: str, new: str) -> dict:
    try:
        return {"old": _checkpoints(rank, old), "new": _checkpoints(rank, new)}
    except Exception:  # noqa: BLE001 - the test reports it
        return {"error": traceback.format_exc()}


def _local(value):
    """A sharded entry's tensor on this rank (FSDP1: its one shard; FSDP2: its local part)."""
    if "shards" in value:
        return value["shards"][0][1] if value["shards"] else torch.empty(0)
    return value["local"]


@pytest.mark.distributed
@pytest.mark.skipif(
    not distributed.fsdp1_optimizer_state_gathers_here(),
    reason="this torch's FSDP1 gathers a full optimizer state only on CUDA",
)
@pytest.mark.skipif(
    not hasattr(torch.distributed.fsdp, "fully_shard")
    or not (current().fsdp2_on_cpu or torch.cuda.is_available()),
    reason="the rewrite imports FSDP2 from torch.distributed.fsdp (torch 2.6+), run where it runs",
)
def test_the_fsdp2_forms_give_what_fsdp1_gave():
    from tests.state_dicts import assert_same

    outcome = run(SCRIPT.encode(), SETTINGS)
    new = outcome.new_source.decode()
    assert [f.fixed for f in outcome.findings if f.code == "FSDP401"] == [True]
    assert "FSDP" not in new.replace("fully_shard", "").replace("FSDPModule", "")
    ranks = distributed.run(_both, SCRIPT, new, backend="gloo", world_size=2)
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
        old, rewritten = result["old"], result["new"]
        assert assert_same(old["full"], rewritten["full"], f"rank {rank} full") > 0
        assert assert_same(old["optim"]["state"], rewritten["optim"]["state"], "optim") > 0
        # The groups list the same names, in the optimizer's order where FSDP1 listed
        # them by flat parameter (the finding says so); loading goes by name.
        for group, other in zip(old["optim"]["param_groups"], rewritten["optim"]["param_groups"]):
            assert sorted(group.pop("params")) == sorted(other.pop("params"))
            assert group == other
        # Sharded: the same names, and each rank holds the same part of each parameter.
        assert list(old["sharded"]) == list(rewritten["sharded"])
        for name, value in old["sharded"].items():
            assert torch.equal(_local(value), _local(rewritten["sharded"][name])), name
        # The optimizer's sharded state: the same parameters and states, the same parts.
        state, other = old["sharded_optim"]["state"], rewritten["sharded_optim"]["state"]
        assert sorted(state) == sorted(other) and state
        for name, entries in state.items():
            assert sorted(entries) == sorted(other[name]), name
            for key, value in entries.items():
                mine = other[name][key]
                if isinstance(value, dict):  # a sharded entry (exp_avg, exp_avg_sq)
                    assert torch.equal(_local(value), _local(mine)), f"{name}.{key}"
                else:
                    assert_same(value, mine, f"{name}.{key}")
