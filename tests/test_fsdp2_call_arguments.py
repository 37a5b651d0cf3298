"""FSDP401 on wrapper calls passing FSDP1's arguments by position or as ``**kwargs``.

A dict built in the call's function with constant keys reads as the keywords it holds
(:mod:`codemods.rules.fsdp401.spread`); FSDP1's positional arguments read by FSDP1's
order; keywords that cannot be known statically keep the call FSDP1 with that reason.
The run compares the rewrites of ``tests/fixtures/fsdp2/keywords_in_a_dict.py`` with the
FSDP1 original on 2 gloo ranks by the port checker.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings
from compat.features import current

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import ShardingStrategy\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n"
)
SETTINGS = Settings(fix=True, unsafe_fixes=True, select=("FSDP4",))
FIXTURE = Path(__file__).parent / "fixtures" / "fsdp2" / "keywords_in_a_dict.py"


def _migrate(body: str, settings: Settings = SETTINGS) -> tuple[str | None, list]:
    outcome = run((HEAD + textwrap.dedent(body)).encode(), settings)
    new = None if outcome.new_source is None else outcome.new_source.decode()
    return new, [f for f in outcome.findings if f.code == "FSDP401"]


@pytest.mark.parametrize(
    ("body", "written"),
    [
        (  # a display, every key set once on every path: its values as written
            "def shard(model, flag):\n"
            '    kw = {"sharding_strategy": ShardingStrategy.SHARD_GRAD_OP,\n'
            '          "use_orig_params": True}\n'
            "    return FSDP(model, **kw)\n",
            "    return fully_shard(model, reshard_after_forward=False)\n",
        ),
        (  # `dict(...)` with a key `update` adds on every path
            "def shard(model, mesh):\n"
            "    kw = dict(use_orig_params=True)\n"
            "    kw.update(device_mesh=mesh)\n"
            "    return FSDP(model, **kw)\n",
            "    return fully_shard(model, mesh=mesh)\n",
        ),
        (  # a key set on some paths only: read from the dict, None where absent
            "def shard(model, mesh, hybrid):\n"
            "    kw: dict = {}\n"
            "    if hybrid:\n"
            '        kw["device_mesh"] = mesh\n'
            '    print("FSDP keywords", kw)\n'
            "    return FSDP(model, **kw)\n",
            '    return fully_shard(model, mesh=kw.get("device_mesh"))\n',
        ),
        (  # a value a later line rebinds: what the dict holds at the call
            "def shard(model, mesh):\n"
            '    kw = {"device_mesh": mesh}\n'
            "    mesh = None\n"
            "    return FSDP(model, **kw)\n",
            '    return fully_shard(model, mesh=kw["device_mesh"])\n',
        ),
        (  # a key set twice: what the dict holds at the call
            "def shard(model, flag):\n"
            '    kw = {"sharding_strategy": ShardingStrategy.FULL_SHARD}\n'
            "    if flag:\n"
            '        kw["sharding_strategy"] = ShardingStrategy.SHARD_GRAD_OP\n'
            "    return FSDP(model, **kw)\n",
            # FSDP1's default or either member: read once, answered as FSDP1 would
            'strategy = kw["sharding_strategy"]\n'
            "    return fully_shard(\n"
            "        model,\n"
            "        reshard_after_forward=reshards_like_fsdp1(strategy),\n"
            "        mesh=mesh_like_fsdp1(strategy, model),\n",
        ),
        (  # a path sets a hybrid strategy: its mesh chosen at run time, as FSDP1's
            "def shard(model, hybrid):\n    kw = {}\n    if hybrid:\n"
            '        kw["sharding_strategy"] = ShardingStrategy.HYBRID_SHARD\n'
            "    return FSDP(model, **kw)\n",
            'strategy = kw.get("sharding_strategy")\n',
        ),
        (  # FSDP1's order: process_group, sharding_strategy, cpu_offload, auto_wrap_policy
            "def shard(model):\n"
            "    return FSDP(model, None, ShardingStrategy.SHARD_GRAD_OP, None, {Block})\n",
            "            fully_shard(submodule, reshard_after_forward=False)\n",
        ),
        (  # the same name bound in another branch: not the dict this call sees
            "def prepare(model, kind, mesh):\n"
            "    if kind == 'ddp':\n"
            "        kw = ddp_kwargs()\n"
            "        model = DDP(model, **kw)\n"
            "    elif kind == 'fsdp':\n"
            '        kw = {"device_mesh": mesh}\n'
            "        model = FSDP(model, **kw)\n"
            "    return model\n",
            "    elif kind == 'fsdp':\n        model = fully_shard(model, mesh=mesh)\n",
        ),
        (  # keywords after the dict's, and a change after the call FSDP1 never sees
            "def shard(model):\n"
            '    kw = {"use_orig_params": True}\n'
            "    model = FSDP(model, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP, **kw)\n"
            '    kw.pop("use_orig_params")\n'
            "    return model\n",
            "    model = fully_shard(model, reshard_after_forward=False)\n",
        ),
    ],
)
def test_the_keywords_a_call_passes_are_read_as_written(body, written):
    new, (finding,) = _migrate(body)
    assert finding.fixed, finding.message
    assert written in new
    assert "FSDP(" not in new
    again = run(new.encode(), SETTINGS)  # a second run has nothing to do
    assert again.new_source is None


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (
            "def shard(model, **kwargs):\n    return FSDP(model, **kwargs)\n",
            "`**kwargs`: the arguments `shard` was called with, passed on: keywords unknown "
            "statically",
        ),
        (
            "def shard(model, *args):\n    return FSDP(model, *args)\n",
            "`*args`: the arguments `shard` was called with, passed on: keywords unknown",
        ),
        (
            "class Strategy:\n    def shard(self, model):\n        return FSDP(model, **self.kw)\n",
            "`**self.kw`: read from `self.kw`, set elsewhere: keywords unknown statically",
        ),
        (
            "def shard(model, fsdp_kwargs):\n"
            "    def wrap(module):\n        return FSDP(module, **fsdp_kwargs)\n"
            "    return wrap(model)\n",
            "`**fsdp_kwargs`: a parameter of `shard`, given by its callers: keywords unknown",
        ),
        (
            "def shard(model):\n    kw, _ = make_kwargs(model)\n    return FSDP(model, **kw)\n",
            "`**kw`: built by `make_kwargs(...)` at line 8: keywords unknown statically",
        ),
        (
            "def shard(model):\n    kw = {}\n    configure(kw)\n    return FSDP(model, **kw)\n",
            "`configure(kw)` at line 9 may change `kw` first: keywords unknown statically",
        ),
        (
            "def shard(model, key):\n    kw = {}\n    kw[key] = True\n"
            "    return FSDP(model, **kw)\n",
            "`kw[key] = ...` sets a key: keywords unknown statically",
        ),
        (
            "def shard(models):\n    kw = {}\n    for m in models:\n        FSDP(m, **kw)\n"
            '        kw["use_orig_params"] = True\n',
            "`kw` at line 11 changes the dict after the call, in a loop that calls again",
        ),
        (
            "def shard(model, flag, pg):\n    kw = {}\n    if flag:\n"
            '        kw["process_group"] = pg\n    return FSDP(model, **kw)\n',
            "`process_group` is set in `kw` on some paths only (line 10)",
        ),
        (  # an alias may change it unseen
            "def shard(model):\n    kw = {}\n    other = kw\n"
            '    other["use_orig_params"] = True\n    return FSDP(model, **kw)\n',
            "`other = kw` at line 9 may change `kw` first: keywords unknown statically",
        ),
        (
            'def shard(model):\n    kw = {"use_orig_params": True}\n'
            "    return FSDP(model, use_orig_params=False, **kw)\n",
            "`use_orig_params` is passed twice",
        ),
    ],
)
def test_keywords_not_known_exactly_keep_the_call_and_say_why(body, why):
    new, (finding,) = _migrate(body)
    assert new is None and not finding.fixed
    assert why in finding.message, finding.message


def test_a_dict_only_the_call_read_goes_with_it():
    """Its values written into ``fully_shard``'s call, the dict (and its imports) are dead."""
    new, (finding,) = _migrate(
        "def shard(model):\n"
        "    kw = dict(sharding_strategy=ShardingStrategy.SHARD_GRAD_OP, use_orig_params=True)\n"
        "    return FSDP(model, **kw)\n"
    )
    assert finding.fixed
    assert new.endswith(
        "def shard(model):\n    return fully_shard(model, reshard_after_forward=False)\n"
    )
    assert "ShardingStrategy" not in new


@pytest.mark.parametrize(
    ("body", "left"),
    [
        (  # entries written into the call go; the key read back stays, as it was set
            "def shard(model, mesh, hybrid):\n"
            "    kw = {\n"
            '        "sharding_strategy": ShardingStrategy.SHARD_GRAD_OP,\n'
            '        "use_orig_params": True,\n'
            "    }\n"
            "    kw.update(limit_all_gathers=True)\n"
            "    if hybrid:\n"
            '        kw["device_mesh"] = mesh\n'
            "    return FSDP(model, **kw)\n",
            "    kw = {}\n    if hybrid:\n",
        ),
        (  # two calls, one dict: gone once neither reads it
            "def shard(model, mesh):\n"
            '    kw = {"use_orig_params": True}\n'
            '    kw["device_mesh"] = mesh\n'
            "    model.encoder = FSDP(model.encoder, **kw)\n"
            "    return FSDP(model, **kw)\n",
            "def shard(model, mesh):\n    model.encoder = fully_shard(model.encoder, mesh=mesh)\n",
        ),
        (  # an entry with a comment stays, as the comment may say more than the code
            "def shard(model):\n"
            "    kw = dict(\n"
            "        use_orig_params=True,\n"
            "        sync_module_states=True,  # rank 0 loaded the weights\n"
            "    )\n"
            "    return FSDP(model, **kw)\n",
            "    kw = dict(\n        sync_module_states=True,  # rank 0 loaded the weights\n",
        ),
        (  # a log line reads it: the dict stays whole
            "def shard(model, mesh):\n"
            '    kw = {"use_orig_params": True, "device_mesh": mesh}\n'
            '    print("FSDP keywords", kw)\n'
            "    return FSDP(model, **kw)\n",
            '    kw = {"use_orig_params": True, "device_mesh": mesh}\n    print(',
        ),
    ],
)
def test_in_plain_code_the_entries_no_one_reads_go(body, left):
    new, findings = _migrate(body)
    assert findings and all(f.fixed for f in findings)
    assert left in new
    if "ShardingStrategy." in body:  # the import only a removed entry used goes
        assert "ShardingStrategy" not in new
    assert run(new.encode(), SETTINGS).new_source is None


def test_fsdp1s_defaults_by_position_write_nothing():
    new, (finding,) = _migrate("def shard(model):\n    return FSDP(model, None, None, None)\n")
    assert finding.fixed and new.endswith("    return fully_shard(model)\n")


def test_by_position_before_torch_1_12_stays_for_a_human():
    """torch 1.11 took ``cpu_offload`` third, where 1.12 on take ``sharding_strategy``."""
    settings = Settings(
        fix=True, unsafe_fixes=True, select=("FSDP4",), releases=Releases.parse(torch="1.11..")
    )
    body = "def shard(model, pg):\n    return FSDP(model, pg, ShardingStrategy.SHARD_GRAD_OP)\n"
    new, (finding,) = _migrate(body, settings)
    assert new is None
    assert "`sharding_strategy` passed by position: torch 1.11 read" in finding.message


def test_the_dual_stack_keeps_the_dict_for_the_fsdp1_call():
    """Below torch 2.4 the FSDP1 branch passes the same dict, built as before."""
    settings = Settings(
        fix=True, unsafe_fixes=True, select=("FSDP4",), releases=Releases.parse(torch="2.1..")
    )
    body = (
        "def shard(model, mesh, hybrid):\n"
        "    kw = dict(sync_module_states=True)\n"
        "    if hybrid:\n"
        "        kw.update(device_mesh=mesh)\n"
        "    model = FSDP(model, **kw)\n"
        "    return model\n"
    )
    new, (finding,) = _migrate(body, settings)
    assert finding.fixed
    assert "    kw = dict(sync_module_states=True)\n    if hybrid:\n" in new
    assert '        mesh_ = kw.get("device_mesh")\n' in new
    assert "        broadcast_like_fsdp1(unit, None, mesh_)\n" in new
    assert "    else:\n        model = FSDP(model, **kw)\n" in new
    assert run(new.encode(), settings).new_source is None


needs_fsdp2 = pytest.mark.skipif(
    not current().fsdp2_on_cpu and not torch.cuda.is_available(),
    reason="this torch runs FSDP2 only on CUDA",
)


@needs_fsdp2
@pytest.mark.distributed
def test_the_rewrites_train_as_the_fsdp1_calls(tmp_path):
    """The ``**fsdp_kwargs`` and by-position calls, rewritten, equal FSDP1 on 2 gloo ranks."""
    from compat.portcheck import PortCase, check_ports

    outcome = run(FIXTURE.read_bytes(), SETTINGS)
    assert outcome.new_source is not None and all(f.fixed for f in outcome.findings)
    port = tmp_path / FIXTURE.name
    port.write_bytes(outcome.new_source)
    batch = "tests.portcheck_ports:batch"
    cases = {
        name: PortCase(f"{FIXTURE}:{name}", f"{port}:{name}", batch)
        for name in ("build", "build_by_position")
    }
    reports = check_ports(cases, world_size=2, timeout=600)
    for report in reports.values():
        report.assert_passed()
        # the one difference the findings name: DTensor state dicts
        assert {f.cause for f in report.findings} <= {"state-dict-kind"}, report.render()
    assert [row.name for row in reports["build"].units] == ["", "layers.0", "layers.1"]
