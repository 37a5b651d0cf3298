"""FSDP401's second form: a call with no certain FSDP2 translation becomes one call of
compat's FSDP1 bridge, its arguments as they are, and the finding says what is left."""

from __future__ import annotations

import textwrap

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SCRIPT = textwrap.dedent(
    """\
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy
    import functools

    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=1000)
    strategy = ShardingStrategy[cfg.strategy]
    model = FSDP(model, auto_wrap_policy=policy, sharding_strategy=strategy, sync_module_states=1)
    loss = model(x).sum()
    loss.backward()
    model.clip_grad_norm_(1.0)
    """
)


def _migrate(source: str, **settings) -> tuple[str | None, list]:
    options = {"fix": True, "unsafe_fixes": True, "select": ("FSDP4",), **settings}
    outcome = run(source.encode(), Settings(**options))
    return (None if outcome.new_source is None else outcome.new_source.decode()), outcome.findings


def test_a_config_read_call_goes_to_the_bridge_with_its_own_arguments():
    new, findings = _migrate(SCRIPT)
    assert new is not None
    assert "from compat.fsdp2 import fully_shard_like_fsdp1\n" in new
    assert (
        "model = fully_shard_like_fsdp1(model, auto_wrap_policy=policy, "
        "sharding_strategy=strategy, sync_module_states=1)\n"
    ) in new
    # The FSDP1 class's import goes; the names the arguments use stay.
    assert "FullyShardedDataParallel" not in new and "ShardingStrategy" in new
    # The wrapped model's FSDP1-only method is rewritten with it.
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)" in new
    [finding] = findings
    assert finding.fixed
    assert "on compat's FSDP1 bridge; to finish by hand: " in finding.message
    for reason in ("policy names no module classes", "not a `ShardingStrategy` member"):
        assert reason in finding.message


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"fsdp2_bridge": False}, "--no-fsdp2-bridge"),
        (
            {"releases": Releases.parse(torch="2.4")},
            "the bridge runs on torch.distributed.fsdp's FSDP2 (2.6)",
        ),
    ],
)
def test_without_the_bridge_the_call_stays_for_a_human(settings, why):
    new, findings = _migrate(SCRIPT, **settings)
    assert new is None, why
    [finding] = findings
    assert not finding.fixed and "policy names no module classes" in finding.message


def test_a_second_run_changes_nothing_and_the_output_is_checked():
    new, _ = _migrate(SCRIPT)
    again, findings = _migrate(new)
    assert again is None and findings == []


def test_a_call_kept_on_purpose_still_keeps_the_file():
    gated = SCRIPT.replace(
        "model.clip_grad_norm_(1.0)\n",
        "if torch.__version__ < '2.0':\n    other = FSDP(other, sync_module_states=True)\n",
    )
    new, findings = _migrate(gated)
    assert new is None
    assert findings[0].withheld.startswith("fix withheld: the FSDP1 call at line 12 is kept")


LOCAL = textwrap.dedent(
    """\
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    from model import Block

    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))
    with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        torch.save(model.state_dict(), f"model.{rank}.pt")
    """
)


def test_a_local_state_dict_puts_the_call_on_the_bridge():
    # Plain FSDP2 keeps no flat parameters; the bridge's model writes FSDP1's.
    new, [finding] = _migrate(LOCAL)
    assert finding.fixed and "model = fully_shard_like_fsdp1(model, auto_wrap_policy=" in new
    assert "with FSDP1Api.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):" in new
    assert "`StateDictType.LOCAL_STATE_DICT` at line 6: SHARDED_STATE_DICT" in finding.message
    new, [finding] = _migrate(LOCAL, fsdp2_bridge=False)
    assert new is None and finding.withheld  # for a human, with the recipes
