"""FSDP401's opt-in second form: with ``--fsdp2-bridge``, a call with no certain FSDP2
translation becomes one call of compat's FSDP1 bridge, its arguments as they are, and
the finding says what is left. Without it (the default) such a call stays FSDP1."""

from __future__ import annotations

import textwrap

import pytest

from codemods.engine.run import run
from codemods.registry import REGISTRY
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
    model = FSDP(model, auto_wrap_policy=policy, sharding_strategy=strategy, mixed_precision=mp())
    loss = model(x).sum()
    loss.backward()
    model.clip_grad_norm_(1.0)
    """
)


def _migrate(source: str, **settings) -> tuple[str | None, list]:
    options = {
        "fix": True,
        "unsafe_fixes": True,
        "select": ("FSDP4",),
        "fsdp2_bridge": True,
        **settings,
    }
    outcome = run(source.encode(), Settings(**options))
    return (None if outcome.new_source is None else outcome.new_source.decode()), outcome.findings


def test_a_config_read_call_goes_to_the_bridge_with_its_own_arguments():
    new, findings = _migrate(SCRIPT)
    assert new is not None
    assert "from compat.fsdp2 import fully_shard_like_fsdp1\n" in new
    assert (
        "model = fully_shard_like_fsdp1(model, auto_wrap_policy=policy, "
        "sharding_strategy=strategy, mixed_precision=mp())\n"
    ) in new
    # The FSDP1 class's import goes; the names the arguments use stay.
    assert "FullyShardedDataParallel" not in new and "ShardingStrategy" in new
    # The wrapped model's FSDP1-only method is rewritten with it.
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)" in new
    [finding] = findings
    assert finding.fixed
    assert "on compat's FSDP1 bridge; to finish by hand: " in finding.message
    assert "python -m compat.portcheck" in finding.message  # to check the hand port
    assert "`mixed_precision` is not a `MixedPrecision(...)` call" in finding.message


def test_the_finding_lists_what_removing_the_bridge_changes():
    # The FSDP1 methods the bridged model keeps, each with its plain FSDP2 form, and
    # what the bridge changes from FSDP1 (it warns of both at run time).
    _, [finding] = _migrate(SCRIPT)
    for kept in (
        "`model.state_dict()` a full state dict for FSDP1 code (plain FSDP2: DTensor shards",
        "`model.no_sync()` (`model.set_requires_gradient_sync(False)` for the block)",
        "`model.clip_grad_norm_(n)` (`torch.nn.utils.clip_grad_norm_(model.parameters(), n)`)",
        "unlike FSDP1, the optimizer gets the original parameters",
        "`no_sync` with bf16 mixed precision accumulates in fp32",
    ):
        assert kept in finding.message


def test_reading_module_keeps_the_file_fsdp1_on_the_bridge_too():
    # The bridge shards in place: its model has no ``module`` (one that gave the model
    # back would send a recursive unwrap round forever).
    new, [finding] = _migrate(SCRIPT.replace("model.clip_grad_norm_(1.0)", "model.module.save()"))
    assert new is None and not finding.fixed
    assert "`model.module` at line 11: exists only on FSDP1 models" in finding.withheld


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"fsdp2_bridge": False}, "--no-fsdp2-bridge, the default"),
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
    assert not finding.fixed and "not a `MixedPrecision(...)` call" in finding.message


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


#: The registry's FSDP401 cases that stay FSDP1 by default and go to the bridge with
#: ``--fsdp2-bridge``: a line of the case's source, and what the bridge makes of the case.
BRIDGED = {
    # One call has a plain FSDP2 form, the other goes to the bridge.
    "decoder = FSDP(decoder, ignored_modules=[decoder.head])\n": (
        "from torch.distributed.fsdp import fully_shard\n"
        "from model import Block, Head\n"
        "from compat.fsdp2 import fully_shard_like_fsdp1\n\n"
        "for submodule in reversed(list(encoder.modules())):  # descendants before ancestors\n"
        "    if isinstance(submodule, Block) and submodule is not encoder:\n"
        "        fully_shard(submodule)\n"
        "encoder = fully_shard(encoder)\n"
        "decoder = fully_shard_like_fsdp1(decoder, ignored_modules=[decoder.head])\n"
    ),
    # The bridge keeps FSDP1's arguments, and the finding says what to watch.
    "    model, auto_wrap_policy=ModuleWrapPolicy({Block}), ignored_modules=[model.head]\n": (
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
        "from model import Block, Head\n"
        "from compat.fsdp2 import fully_shard_like_fsdp1\n\n"
        "model = fully_shard_like_fsdp1(\n"
        "    model, auto_wrap_policy=ModuleWrapPolicy({Block}), ignored_modules=[model.head]\n"
        ")\n"
    ),
    # The bridge's model keeps FSDP1's methods.
    "context = model.no_sync()\n": (
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
        "from model import Block, Head\n"
        "from compat.fsdp2 import fully_shard_like_fsdp1\n\n"
        "model = fully_shard_like_fsdp1(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
        "context = model.no_sync()\n"
    ),
    # `fully_shard` is another API's name here; the bridge needs no such name.
    "other = fully_shard(other)\n": (
        "from torch.distributed._composable import fully_shard\n"
        "from compat.fsdp2 import fully_shard_like_fsdp1\n\n"
        "model = fully_shard_like_fsdp1(model)\n"
        "other = fully_shard(other)\n"
    ),
    # The bridge's model writes FSDP1's flat layout.
    "FSDP.set_state_dict_type(model, StateDictType.LOCAL_STATE_DICT)\n": (
        "from torch.distributed.fsdp import StateDictType\n"
        "from compat.fsdp2 import FSDP1Api, fully_shard_like_fsdp1\n\n"
        "model = fully_shard_like_fsdp1(model)\n"
        "FSDP1Api.set_state_dict_type(model, StateDictType.LOCAL_STATE_DICT)\n"
    ),
    # Keywords unknown statically: the bridge takes them as FSDP1 did, at run time.
    "        return FSDP(model, **self.fsdp_kwargs)\n": (
        "from compat.fsdp2 import fully_shard_like_fsdp1\n\n\n"
        "class Strategy:\n"
        "    def wrap(self, model):\n"
        "        return fully_shard_like_fsdp1(model, **self.fsdp_kwargs)\n"
    ),
}

LEFT = [case.before for case in REGISTRY["FSDP401"].cases if case.after == case.before]


@pytest.mark.parametrize("source", LEFT, ids=range(len(LEFT)))
def test_with_the_bridge_each_case_left_by_default_bridges_or_stays(source):
    """Each registry case the default leaves FSDP1: as :data:`BRIDGED` says, or left."""
    expected = [after for line, after in BRIDGED.items() if line in source.splitlines(True)]
    assert len(expected) <= 1
    new, findings = _migrate(source)
    assert findings and {f.code for f in findings} == {"FSDP401"}
    if not expected:  # nothing on the bridge keeps it either (flat parameters, internals)
        assert new is None and not any(f.fixed for f in findings)
        return
    assert new == expected[0] and all(f.fixed for f in findings)
    assert any("on compat's FSDP1 bridge" in f.message for f in findings)
    assert _migrate(new)[0] is None  # a second run changes nothing


def test_every_bridged_form_is_a_registry_case():
    lines = {line for source in LEFT for line in source.splitlines(True)}
    assert set(BRIDGED) <= lines


@pytest.mark.parametrize(
    ("flags", "configured", "bridged"),
    [
        ([], None, False),  # the default: plain FSDP2 code only
        (["--fsdp2-bridge"], None, True),
        (["--no-fsdp2-bridge"], None, False),  # accepted: it is the default
        ([], "true", True),
        ([], "false", False),
        (["--no-fsdp2-bridge"], "true", False),  # the command line wins
        (["--fsdp2-bridge"], "false", True),
    ],
)
def test_the_bridge_is_asked_for_on_the_command_line_or_in_the_configuration(
    tmp_path, flags, configured, bridged
):
    from codemods.cli.options import choices
    from codemods.migrate import build_parser

    table = "[tool.fsdp-compat]\n"
    if configured is not None:
        table += f"fsdp2-bridge = {configured}\n"
    (tmp_path / "pyproject.toml").write_text(table)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    args = build_parser().parse_args([*flags, str(script)])
    assert choices(args, [str(script)], fix=True).settings.fsdp2_bridge is bridged


def test_asking_for_the_bridge_and_refusing_it_at_once_is_an_error(capsys):
    from codemods.migrate import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--fsdp2-bridge", "--no-fsdp2-bridge", "x.py"])
    assert "not allowed with argument" in capsys.readouterr().err
