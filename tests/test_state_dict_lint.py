"""FSDP1's state-dict API (FSDP115-FSDP118): one finding per use, at the use.

The source below uses every deprecated spelling the rules answer, in the ways real
checkpointing code does; each line says with ``# expect:`` which codes it must get.
"""

from __future__ import annotations

import collections
import re

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SOURCE = """\
import torch.distributed.fsdp as fsdp
from torch.distributed.fsdp import (
    FullStateDictConfig,
    OptimStateKeyType,
    ShardingStrategy,
    StateDictType,
)
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from compat.fsdp import FullyShardedDataParallel as CompatFSDP
from lightning.fabric.strategies import FSDPStrategy


def build(module, replicate):
    strategy = ShardingStrategy.NO_SHARD  # expect: FSDP118
    if not replicate:
        strategy = fsdp.ShardingStrategy.FULL_SHARD
    return FSDP(module, sharding_strategy=fsdp.ShardingStrategy.NO_SHARD)  # expect: FSDP118


def fabric_strategy(replicate):
    if replicate:
        return FSDPStrategy(sharding_strategy="NO_SHARD")  # expect: FSDP118
    return FSDPStrategy(sharding_strategy="FULL_SHARD")


def save(model, optimizer, p):
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):  # expect: FSDP115
        state = model.state_dict()
    FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)  # expect: FSDP115
    with CompatFSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):  # expect: FSDP115
        state = model.state_dict()
    full = FSDP.full_optim_state_dict(model, optimizer)  # expect: FSDP116
    full = FSDP.full_optim_state_dict(model, optimizer, optim_input=p)  # expect: FSDP116 FSDP117
    full = FSDP.full_optim_state_dict(model, optimizer, p)  # expect: FSDP116 FSDP117
    local = FSDP.sharded_optim_state_dict(model, optimizer)  # expect: FSDP116
    return state, full, local


def load(model, optimizer, full, local, params):
    a = FSDP.shard_full_optim_state_dict(full, model, optim=optimizer)  # expect: FSDP116
    b = FSDP.flatten_sharded_optim_state_dict(local, model, optimizer)  # expect: FSDP116
    c = fsdp.FullyShardedDataParallel.scatter_full_optim_state_dict(  # expect: FSDP116
        full, model, optim_input=params  # expect: FSDP117
    )
    d = FSDP.rekey_optim_state_dict(  # not deprecated itself
        full, OptimStateKeyType.PARAM_ID, model, optim_input=params  # expect: FSDP117
    )
    e = FSDP.rekey_optim_state_dict(full, OptimStateKeyType.PARAM_NAME, model, optim=optimizer)
    f = FSDP.optim_state_dict_to_load(model, optimizer, FSDP.optim_state_dict(model, optimizer))
    return a, b, c, d, e, f
"""

_CODES = ("FSDP115", "FSDP116", "FSDP117", "FSDP118")


def _expected() -> collections.Counter:
    found: collections.Counter = collections.Counter()
    for number, line in enumerate(SOURCE.splitlines(), 1):
        match = re.search(r"# expect: (.*)$", line)
        for code in match.group(1).split() if match else ():
            found[(number, code)] += 1
    return found


@pytest.mark.parametrize("fix", [False, True], ids=["lint", "migrate"])
def test_one_finding_per_use(fix: bool):
    outcome = run(SOURCE.encode(), Settings(fix=fix, unsafe_fixes=fix, select=_CODES))
    found = collections.Counter((f.line, f.code) for f in outcome.findings)
    assert found == _expected()


_SAVE_AND_LOAD = """\
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType


def save(model):
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        state = model.state_dict()
    return state


def load(model, state):
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        model.load_state_dict(state)
"""


@pytest.mark.parametrize(
    ("target", "rewritten"),
    [
        # Not deprecated before 2.4: no finding, no fix (2.2's set_model_state_dict would
        # refuse a model that has not run a forward yet, when checkpoints are loaded).
        ("2.2", None),
        ("2.4", {"get_model_state_dict", "set_model_state_dict"}),
        (None, {"get_model_state_dict", "set_model_state_dict"}),
    ],
)
def test_fsdp115_fixes_follow_the_target_torch(target, rewritten):
    outcome = run(
        _SAVE_AND_LOAD.encode(),
        Settings(select=("FSDP115",), fix=True, releases=Releases.parse(torch=target)),
    )
    new = (outcome.new_source or _SAVE_AND_LOAD.encode()).decode()
    if rewritten is None:
        assert (outcome.findings, new) == ([], _SAVE_AND_LOAD)
        return
    done = {name for name in ("get_model_state_dict", "set_model_state_dict") if name in new}
    assert done == rewritten
    assert new.count("state_dict_type(") == 2 - len(rewritten)
    assert len(outcome.findings) == 2
    assert sum(f.fixed for f in outcome.findings) == len(rewritten)


_SUBGROUP_SAVE = """\
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save(model, group):
    model = {wrap}
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
    return state
"""


@pytest.mark.parametrize(
    ("wrap", "withheld"),
    [
        ("FSDP(model, process_group=group)", True),
        ("FSDP(model, device_mesh=group)", True),
        ("FSDP(model, sharding_strategy=fsdp.ShardingStrategy.HYBRID_SHARD)", True),
        ("FSDP(model)", False),
    ],
)
def test_a_rank0_only_save_on_a_subgroup_is_left_for_a_human(wrap, withheld):
    """FSDP1's rank0_only is rank 0 of the model's group; cpu_offload=True the global one."""
    from codemods.astlint.lint import lint

    source = _SUBGROUP_SAVE.format(wrap=wrap).encode()
    settings = Settings(
        select=("FSDP115",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch="2.4")
    )
    outcome = run(source, settings)
    (finding,) = outcome.findings
    assert finding.fixed is not withheld
    assert ("the model is sharded on a group of its own (line 6)" in (finding.no_fix or "")) is (
        withheld
    )
    assert (
        lint(source, settings.replace(fix=False))
        == run(source, settings.replace(fix=False)).findings
    )


_YIELDING = """\
from contextlib import contextmanager
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType


@contextmanager
def full_state_dict_context(module):
    with FSDP.state_dict_type(module, StateDictType.FULL_STATE_DICT):
        {body}
"""


@pytest.mark.parametrize(
    ("body", "yields"),
    [
        ("yield", True),
        ("yield from other()", False),
        ("state = module.state_dict()\n        yield", False),
        ("module.eval(); yield", False),
        ("yield  # the caller saves", True),
        ("state = module.state_dict()\n        yield state", False),
        ("state = module.state_dict()", False),
    ],
)
def test_a_block_that_yields_says_its_caller_takes_the_state_dicts(body, yields):
    """A context manager's block (Lightning's state-dict contexts): its caller moves."""
    from codemods.astlint.lint import lint
    from codemods.rules.fsdp115 import YIELDS

    source, torch = _YIELDING.format(body=body).encode(), Releases.parse(torch="2.4")
    (finding,) = run(source, Settings(select=("FSDP115",), releases=torch)).findings
    assert lint(source, Settings(select=("FSDP115",), releases=torch)) == [finding]
    said = finding.message.endswith(f"({YIELDS})")
    assert said is yields
    assert finding.no_fix is None or not yields  # the text says why: nothing more to add
    assert finding.fixable is (body == "state = module.state_dict()")
    assert not (yields and finding.fixable)


def test_below_the_fixs_release_the_yield_is_still_said():
    from codemods.rules.fsdp115 import YIELDS

    source = _YIELDING.format(body="yield").encode()
    settings = Settings(select=("FSDP115",), releases=Releases.parse(torch="1.13.."))
    (finding,) = run(source, settings).findings
    assert finding.message.endswith(f"({YIELDS})")
    assert finding.no_fix == "no fix runs on torch 1.13..latest: it needs torch 2.2"
