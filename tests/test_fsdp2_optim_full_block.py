"""FSDP401's form of a ``FULL_STATE_DICT`` block that reads the optimizer's state too.

The shape, of our own writing after fine-tuning recipes: one block with a model config
and an optimizer config takes the model's state dict and ``FSDP.optim_state_dict(model,
optim)`` (sometimes only on some paths). The text tests pin what is written, plain and
in the dual stack, and what keeps the file FSDP1. The run (one spawn of two gloo ranks)
trains the FSDP1 original and the rewrites from the same start and compares both state
dicts: keys, tensor kinds and values, and what ranks other than 0 get.
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
from tests.test_fsdp2_checkpoint_forms import _Unit

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import FullOptimStateDictConfig, FullStateDictConfig\n"
    "from torch.distributed.fsdp import StateDictType\n\n\n"
)


def _migrate(body: str, torch_range: str = "2.6..") -> tuple[str | None, list]:
    return fsdp401_run(HEAD, body, _settings(torch_range))


def _save(model_config: str, optim_config: str, read: str = "optim_state = {call}") -> str:
    """A save function: the model wrapped, one full block with both configs, both read."""
    call = "FSDP.optim_state_dict(model, optim)"
    return (
        "def save(model, optim, last):\n"
        "    model = FSDP(model)\n"
        "    with FSDP.state_dict_type(\n"
        "        model,\n        StateDictType.FULL_STATE_DICT,\n"
        f"        {model_config},\n        {optim_config},\n"
        "    ):\n"
        "        state = model.state_dict()\n"
        f"        {read.format(call=call)}\n"
        "    return state, optim_state\n"
    )


RANK0 = "FullStateDictConfig(offload_to_cpu=True, rank0_only=True)"
RANK0_OPTIM = "FullOptimStateDictConfig(offload_to_cpu=True, rank0_only=True)"
CPU_OFFLOAD = "options=StateDictOptions(full_state_dict=True, cpu_offload=True)"


def test_both_reads_become_dcp_calls_with_the_configs_options():
    new, (finding,) = _migrate(_save(RANK0, RANK0_OPTIM))
    assert finding.fixed, finding.withheld
    assert new.endswith(
        "    model = fully_shard(model)\n"
        f"    state = get_model_state_dict(\n        model, {CPU_OFFLOAD}\n    )\n"
        f"    optim_state = get_optimizer_state_dict(\n        model, optim, {CPU_OFFLOAD}\n    )\n"
        "    return state, optim_state\n"
    )
    assert "FullOptimStateDictConfig" not in new and "StateDictType" not in new
    assert "`{}` on other ranks, as FSDP1 gave" in finding.message


def test_rank0_only_offloads_by_the_optimizer_configs_default():
    new, (finding,) = _migrate(_save(RANK0, "FullOptimStateDictConfig(rank0_only=True)"))
    assert finding.fixed and new.count(CPU_OFFLOAD) == 2


def test_a_read_on_some_paths_keeps_its_branch():
    read = "if not last:\n{0}optim_state = {{call}}\n        else:\n{0}optim_state = None"
    read = read.format(" " * 12)
    new, (finding,) = _migrate(_save(RANK0, RANK0_OPTIM, read))
    assert finding.fixed, finding.withheld
    assert (
        "    if not last:\n        optim_state = get_optimizer_state_dict(\n"
        f"            model,\n            optim,\n            {CPU_OFFLOAD},\n        )\n"
        "    else:\n        optim_state = None\n"
    ) in new


def test_configs_on_the_device_give_full_state_dicts_on_every_rank():
    optim_config = "FullOptimStateDictConfig(offload_to_cpu=False)"  # its default is True
    new, (finding,) = _migrate(_save("FullStateDictConfig()", optim_config))
    assert finding.fixed, finding.withheld
    options = "options=StateDictOptions(full_state_dict=True)"
    assert f"optim_state = get_optimizer_state_dict(\n        model, optim, {options}\n" in new
    assert f"state = get_model_state_dict(model, {options})\n" in new


def test_in_the_dual_stack_the_block_is_dispatched_whole():
    new, (finding,) = _migrate(_save(RANK0, RANK0_OPTIM), "2.0..")
    assert finding.fixed, finding.withheld
    assert (
        "    if HAS_FSDP2:\n"
        f"        state = get_model_state_dict(\n            model, {CPU_OFFLOAD}\n        )\n"
        "        optim_state = get_optimizer_state_dict(\n"
        f"            model,\n            optim,\n            {CPU_OFFLOAD},\n        )\n"
        "    else:\n"
        "        with FSDP.state_dict_type(\n"
    ) in new
    assert "            optim_state = FSDP.optim_state_dict(model, optim)\n" in new
    block = new[new.index("try:") : new.index("HAS_FSDP2 =")]
    assert "get_optimizer_state_dict" in block  # torch before 2.2 has no DCP functions


@pytest.mark.parametrize(
    ("optim_config", "read"),
    [
        # full CPU copies on every rank (the config's default): no `StateDictOptions` gives that
        ("FullOptimStateDictConfig(offload_to_cpu=True)", "optim_state = {call}"),
        ("FullOptimStateDictConfig()", "optim_state = {call}"),
        ("FullOptimStateDictConfig(offload_to_cpu=False, rank0_only=True)", "optim_state = {call}"),
        # another model's optimizer state: FSDP1 reads it in that model's own layout
        (RANK0_OPTIM, "optim_state = FSDP.optim_state_dict(other, optim)"),
        # the model asked something else in the block's layout
        (RANK0_OPTIM, "optim_state = model.state_dict()"),
    ],
    ids=["cpu-every-rank", "default", "rank0-on-device", "another-model", "model-again"],
)
def test_what_has_no_certain_form_keeps_the_file_fsdp1(optim_config, read):
    new, findings = _migrate("other = FSDP(make())\n\n\n" + _save(RANK0, optim_config, read))
    assert new is None and findings
    assert all("is FSDP1 only" in finding.withheld for finding in findings)


def test_no_optimizer_config_is_fsdp1s_default_and_keeps_the_file_fsdp1():
    body = _save(RANK0, "", "optim_state = {call}").replace("        ,\n", "")
    assert "FullOptimStateDictConfig" not in body
    new, (finding,) = _migrate(body)
    assert new is None and "is FSDP1 only" in finding.withheld


#: FSDP1 checkpoint code of our own writing; the run executes it and its rewrites.
SCRIPT = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import FullOptimStateDictConfig, FullStateDictConfig
from torch.distributed.fsdp import StateDictType
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


def train(model, unit, device, batches):
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({unit}), device_id=device)
    optim = torch.optim.Adam(model.parameters(), lr=0.1)
    for batch in batches:
        model(batch).sum().backward()
        optim.step()
        optim.zero_grad()
    with FSDP.state_dict_type(
        model,
        StateDictType.FULL_STATE_DICT,
        FullStateDictConfig(offload_to_cpu=OFFLOAD, rank0_only=OFFLOAD),
        FullOptimStateDictConfig(offload_to_cpu=OFFLOAD, rank0_only=OFFLOAD),
    ):
        state = model.state_dict()
        optim_state = FSDP.optim_state_dict(model, optim)
    return state, optim_state
"""


def _rewrites() -> dict[str, str]:
    """FSDP1's script (default configs) and the rewrites of both configs' scripts.

    FSDP1 cannot offload a full state dict to the CPU from CPU tensors (it raises on
    rank 0), so rank 0's copy is compared with its default configs' dicts.
    """
    settings = {form: _settings(span) for form, span in (("plain", "2.6.."), ("dual", "2.0.."))}
    scripts = {"old": SCRIPT.replace("OFFLOAD", "False")}
    for offload in ("False", "True"):
        for form, chosen in settings.items():
            outcome = run(SCRIPT.replace("OFFLOAD", offload).encode(), chosen)
            assert [f.fixed for f in outcome.findings if f.code == "FSDP401"] == [True]
            scripts[f"{form}-{offload}"] = outcome.new_source.decode()
    return scripts


def _kinds(state: dict) -> dict:
    """Each entry's kind, nested: a tensor's type, device and shape."""
    if isinstance(state, dict):
        return {key: _kinds(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return [_kinds(value) for value in state]
    if isinstance(state, torch.Tensor):
        return (type(state).__name__, state.device.type, tuple(state.shape))
    return state


def load_script(source: str, hide_fsdp2: bool = False):
    """``source`` run as a module, on this torch or (``hide_fsdp2``) as on one without FSDP2."""
    from tests.test_fsdp2_dual_stack import _load, _without_fsdp2

    if not hide_fsdp2:
        return _load(source, "this_torch")
    with _without_fsdp2():
        return _load(source, "old_torch")


def _trained(rank: int, source: str, hide_fsdp2: bool = False) -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(_Unit(8), _Unit(8), nn.Linear(8, 2))
    batches = [torch.randn(4, 8, generator=torch.Generator().manual_seed(rank + s)) for s in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = load_script(source, hide_fsdp2)
        state, optim_state = module.train(model, _Unit, distributed.device_for(rank), batches)
    return {"model": state, "optim": optim_state, "kinds": _kinds([state, optim_state])}


def _all(rank: int, world_size: int, scripts: dict[str, str]) -> dict:
    try:
        out = {form: _trained(rank, source) for form, source in scripts.items()}
        out["dual-forced"] = _trained(rank, scripts["dual-False"], hide_fsdp2=True)
        return out
    except Exception:  # noqa: BLE001 - the test reports it
        return {"error": traceback.format_exc()}


def _assert_equal(old: object, new: object, where: str) -> None:
    """The same nested data: tensors equal in value (within float error), the rest equal.

    A group's ``params`` are compared as sets: FSDP1 lists them by flat parameter, DCP
    in the optimizer's order (the finding says so).
    """
    if isinstance(old, dict):
        assert isinstance(new, dict) and sorted(new) == sorted(old), where
        for key in old:
            if key == "params":
                assert sorted(new[key]) == sorted(old[key]), where
                continue
            _assert_equal(old[key], new[key], f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for index, (a, b) in enumerate(zip(old, new)):
            _assert_equal(a, b, f"{where}[{index}]")
    elif isinstance(old, torch.Tensor):
        assert torch.allclose(old.float(), new.float(), rtol=1e-5, atol=1e-6), where
    else:
        assert new == old, where


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@distributed.NEEDS_FSDP1_OPTIMIZER_GATHER
@RUNS_REWRITES
def test_the_rewrites_give_fsdp1s_state_dicts():
    ranks = distributed.run(_all, _rewrites(), backend="gloo", world_size=2, timeout=300)
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
        old = result["old"]
        names = {"0.linear.weight", "0.linear.bias", "1.linear.weight", "1.linear.bias"}
        assert set(old["optim"]["state"]) == {*names, "2.weight", "2.bias"}
        # The default configs: full on every rank, FQN-keyed, plain tensors, both ways
        for form in ("plain-False", "dual-False", "dual-forced"):
            new = result[form]
            _assert_equal(old["kinds"], new["kinds"], f"rank {rank} {form} kinds")
            _assert_equal(old["model"], new["model"], f"rank {rank} {form} model")
            _assert_equal(old["optim"], new["optim"], f"rank {rank} {form} optim")
        # rank 0's CPU copy: the same numbers on rank 0, nothing elsewhere (FSDP1's `{}`)
        for form in ("plain-True", "dual-True"):
            new = result[form]
            if rank == 0:
                _assert_equal(old["model"], new["model"], f"{form} model")
                _assert_equal(old["optim"], new["optim"], f"{form} optim")
                devices = {t.device.type for t in new["model"].values()}
                assert devices == {"cpu"}
            else:
                assert new["model"] == {} and new["optim"] == {}, form
