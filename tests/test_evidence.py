"""Evidence floors and the range model's two questions (reported, fixable).

A file whose project declares no floor runs, as far as the tool knows, from the oldest
release on which every API it uses exists: its evidence floor. These tests pin that
floor for the old form of every rule whose old spelling appeared after the framework's
first FSDP release, for gated and fallback code (which evidences nothing), and the
answers a range gives each kind of rule.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from codemods.engine.run import run
from codemods.registry import REGISTRY
from codemods.releases import Releases, Span, parse_span
from codemods.screen.evidence import evidence_floors, with_evidence
from codemods.settings import Settings


def floors(source: str) -> dict[str, str]:
    found = evidence_floors(ast.parse(textwrap.dedent(source)))
    return {framework: str(release) for framework, (release, _) in found.items()}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\n", {}),
        ("from torch.distributed.fsdp import FullyShardedDataParallel\n", {"torch": "1.11"}),
        ("from torch.distributed._composable.fsdp import fully_shard\n", {"torch": "2.4"}),
        (
            "from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy\n",
            {"torch": "2.6"},
        ),
        ("import torch\ntorch.distributed.fsdp.wrap.ModuleWrapPolicy({B})\n", {"torch": "2.0"}),
        ("import torch.distributed.fsdp.wrap as w\nw.CustomPolicy(f)\n", {"torch": "2.1"}),
        ("from torch.distributed.device_mesh import init_device_mesh\n", {"torch": "2.2"}),
        (
            "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy\n",
            {"lightning": "1.7"},
        ),
        ("from lightning.fabric import Fabric\n", {"lightning": "1.9"}),
        ("from fairscale.nn import FullyShardedDataParallel\n", {"torch": "1.0"}),
        (
            "from torch.distributed.fsdp.fully_sharded_data_parallel import MixedPrecision\n",
            {"torch": "1.12"},
        ),
        (
            "import torch.distributed.fsdp.fully_sharded_data_parallel as fsdp\n"
            "fsdp.ShardingStrategy.FULL_SHARD\n",
            {"torch": "1.12"},
        ),
    ],
    ids=[
        "no framework",
        "FSDP1",
        "FSDP2's first home",
        "FSDP2's public home",
        "attribute chain",
        "module alias",
        "device mesh",
        "Lightning 1.7 strategy",
        "Fabric",
        "FairScale is dated by torch",
        "MixedPrecision where 1.12 defined it",
        "ShardingStrategy where 1.12 defined it",
    ],
)
def test_the_evidence_floor_is_the_newest_first_release_among_the_uses(source, expected):
    assert floors(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        """\
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:
            from torch.distributed._composable.fsdp import fully_shard
        """,
        """\
        if version.parse(torch.__version__) >= version.parse("2.6"):
            from torch.distributed.fsdp import fully_shard
        else:
            from torch.distributed._composable.fsdp import fully_shard
        """,
        """\
        if _TORCH_GREATER_EQUAL_2_6:
            fully_shard = torch.distributed.fsdp.fully_shard
        """,
    ],
    ids=["import fallback", "version gate", "capability flag"],
)
def test_code_that_bridges_releases_evidences_nothing(source):
    assert floors(
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel\n"
        + textwrap.dedent(source)
    ) == {"torch": "1.11"}


@pytest.mark.parametrize(
    ("bound", "expected"),
    [
        # bound one way inside the fallback: the code outside it calls torch 2.0's method
        ("    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n", "2.0"),
        # bound two ways there (the fallback's pair): nothing said of the use outside
        (
            "    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
            "    if old:\n        from torch.distributed import fsdp as FSDP\n",
            "1.0",
        ),
    ],
    ids=["one-way", "two-ways"],
)
def test_a_name_the_fallback_binds_evidences_its_uses_outside_it(bound, expected):
    """``except ImportError:`` after another package's import (torch_xla's, on machines
    without it) is the code's usual path: the name it binds is the one used below."""
    source = (
        "import torch\ntry:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n"
        + bound
        + "    xm = None\n\n\ndef load(model, optim, state):\n"
        "    return FSDP.optim_state_dict_to_load(model, optim, state)\n"
    )
    assert floors(source) == {"torch": expected}
    called = source.replace("FSDP.optim_state_dict_to_load", "FSDP").replace(
        "FullyShardedDataParallel as FSDP", "ShardedOptimStateDictConfig as FSDP"
    )
    assert floors(called) == {"torch": expected}  # a class only 2.0 has, called by name


@pytest.mark.parametrize(
    "source",
    [
        # a release gate: the older releases take the other branch
        "if _TORCH_GREATER_EQUAL_2_6:\n    from torch.distributed.fsdp import fully_shard\n"
        "else:\n    fully_shard = None\n",
        # a fallback between torch's own spellings, one of them bound to nothing
        "try:\n    from torch.distributed.fsdp import fully_shard\nexcept ImportError:\n"
        "    from torch.distributed._composable.fsdp import fully_shard as shard\n",
    ],
    ids=["gate", "torch-fallback"],
)
def test_a_name_bound_where_releases_are_bridged_evidences_nothing_outside(source):
    assert floors(
        "import torch\n" + source + "\n\ndef wrap(model):\n    return fully_shard(model)\n"
    ) == {"torch": "1.0"}


def test_the_floor_names_what_evidences_it():
    found = evidence_floors(ast.parse("from torch.distributed.fsdp import fully_shard\n"))
    assert found["torch"][1] == "`torch.distributed.fsdp.fully_shard` (torch 2.6)"


#: The evidence floor of each rule's example (its old form, as users write it). Most old
#: forms are as old as the framework's FSDP; those that appeared later (FSDP2's first
#: home, DTensor's private package, the 1.7 strategy, Lightning Lite) evidence their own
#: release, and examples that also import a newer API evidence that.
OLD_FORM_FLOORS = {
    "FSDP101": {"torch": "1.11"},
    "FSDP102": {"torch": "1.11"},
    "FSDP103": {"torch": "1.11"},
    "FSDP104": {"torch": "1.11"},
    "FSDP105": {"torch": "1.11"},
    "FSDP106": {},
    "FSDP107": {"torch": "2.4"},
    "FSDP108": {"torch": "1.11"},  # checkpoint_wrapper's module (torch 1.11)
    "FSDP109": {},
    "FSDP110": {},
    "FSDP112": {},
    "FSDP113": {},
    "FSDP114": {"torch": "1.11"},
    "FSDP115": {"torch": "1.11"},
    "FSDP116": {"torch": "1.11"},
    "FSDP117": {"torch": "1.11"},
    "FSDP118": {"torch": "1.12"},  # ShardingStrategy (torch 1.12)
    "FSDP120": {"torch": "2.0"},
    "FSDP121": {"torch": "2.0"},
    "FSDP122": {"torch": "1.0"},
    "FSDP123": {"torch": "2.0"},
    "FSDP124": {"torch": "1.0"},
    "FSDP125": {"torch": "2.6"},
    "FSDP126": {"torch": "1.0"},
    "FSDP127": {"torch": "2.2"},
    "FSDP128": {"torch": "2.2"},
    "FSDP129": {"torch": "2.0"},
    "FSDP130": {"torch": "2.0"},
    "FSDP131": {"torch": "2.0"},
    "FSDP132": {"torch": "2.0"},
    "FSDP133": {"torch": "1.11"},
    "FSDP134": {"torch": "2.0"},
    "FSDP135": {"torch": "1.11"},
    "FSDP136": {"torch": "1.11"},
    "FSDP137": {"torch": "1.11"},
    "FSDP138": {"torch": "1.12"},  # the old name itself: it exists only in 1.12
    "FSDP139": {"torch": "1.11"},
    "FSDP201": {"lightning": "1.0"},
    "FSDP202": {"lightning": "1.6"},
    "FSDP203": {"lightning": "1.7"},
    "FSDP204": {"lightning": "1.8"},
    "FSDP205": {"lightning": "1.0"},
    "FSDP206": {"lightning": "1.8"},
    "FSDP207": {"lightning": "1.8"},
    "FSDP208": {"lightning": "2.0"},
    "FSDP209": {"lightning": "2.0", "torch": "1.11"},
    "FSDP210": {},
    "FSDP211": {"lightning": "1.0"},
    "FSDP212": {"lightning": "1.0"},
    "FSDP213": {"lightning": "1.8"},
    "FSDP214": {"lightning": "1.8"},
    "FSDP215": {"lightning": "1.0"},
    "FSDP216": {"lightning": "1.6"},
    "FSDP217": {"lightning": "1.0"},
    "FSDP218": {"lightning": "1.0"},
    "FSDP219": {"lightning": "1.8"},
    "FSDP220": {"lightning": "1.0"},
    "FSDP221": {"lightning": "1.9"},
    "FSDP222": {"lightning": "1.0"},
    "FSDP223": {"lightning": "1.0"},
    "FSDP224": {"lightning": "1.0"},
    "FSDP301": {"torch": "1.0"},
    "FSDP302": {"torch": "1.11"},
    "FSDP303": {"torch": "1.11"},
    "FSDP304": {"torch": "1.0"},
    "FSDP305": {"torch": "1.0"},
    "FSDP306": {"torch": "1.0"},
    "FSDP307": {"torch": "1.0"},
    "FSDP308": {"torch": "1.0"},
    "FSDP309": {"torch": "1.0"},
    "FSDP310": {"torch": "1.0"},
    "FSDP311": {"torch": "1.0"},
    "FSDP401": {"torch": "2.0"},
}


@pytest.mark.parametrize("rule", list(REGISTRY), ids=lambda rule: rule.code)
def test_the_evidence_floor_of_each_rules_old_form(rule):
    found = evidence_floors(ast.parse(rule.example.before))
    assert {f: str(release) for f, (release, _) in found.items()} == OLD_FORM_FLOORS[rule.code]


def test_every_rule_has_its_evidence_floor_pinned():
    assert set(OLD_FORM_FLOORS) == {rule.code for rule in REGISTRY}


def test_evidence_fills_only_the_floors_nothing_declares():
    releases = Releases(torch=Span(evidence=True), lightning=parse_span("2.1.."))
    source = b"from torch.distributed._composable.fsdp import fully_shard\n"
    settings, _ = with_evidence(source, Settings(releases=releases), None)
    assert settings.releases.torch.text() == "2.4..latest"
    assert settings.releases.torch.floor_origin.startswith("evidence: ")
    assert settings.releases.lightning.text() == "2.1..latest"
    assert with_evidence(source, Settings(), None) is None  # nothing left to the evidence


@pytest.mark.parametrize(
    ("code", "span", "reported", "fixable"),
    [
        # a removal (torch 2.0) inside the range: reported, and no fix runs on 1.12
        ("FSDP102", "1.12..", True, False),
        ("FSDP102", "2.0..", True, True),
        ("FSDP102", "1.13", False, False),  # one release, as --target-torch 1.13
        # advice to use a newer form: given once it exists in the range
        ("FSDP107", "2.4..2.5", False, False),
        ("FSDP107", "2.4..", True, False),
        ("FSDP107", "2.6..", True, True),
        # a changed default: a problem where the range holds both sides of the change;
        # its fix states the argument, which every release takes (unsafe: it changes
        # the releases before the change, as the message says)
        ("FSDP108", "1.12..", True, True),
        ("FSDP124", "1.0..", True, False),  # use_reentrant= is torch 1.11's: 1.9 refuses it
        ("FSDP108", "2.2..", False, True),
        ("FSDP108", "1.12..2.1", False, True),
    ],
)
def test_a_range_answers_both_questions(code, span, reported, fixable):
    releases = Releases(torch=parse_span(span))
    rule = REGISTRY[code]
    assert (releases.reported(rule), releases.fixable(rule)) == (reported, fixable)


@pytest.mark.parametrize(
    ("span", "reported"), [("2.2..", False), ("2.4..2.13", False), ("2.1..", True)]
)
def test_fsdp108_is_quiet_where_the_whole_range_defaults_to_non_reentrant(span, reported):
    """A wrapper without ``checkpoint_impl`` behaves the same on every release from 2.2."""
    source = textwrap.dedent(
        """\
        from functools import partial

        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            apply_activation_checkpointing,
            checkpoint_wrapper,
        )

        apply_activation_checkpointing(model, checkpoint_wrapper_fn=partial(checkpoint_wrapper))
        wrapped = checkpoint_wrapper(block)
        """
    ).encode()
    settings = Settings(releases=Releases.parse(torch=span))
    codes = [f.code for f in run(source, settings).findings]
    assert codes == (["FSDP108", "FSDP108"] if reported else [])


def test_fsdp108_states_the_default_on_a_range_across_the_change():
    """On 2.1.. the unsafe fix writes NO_REENTRANT (2.1 takes it); the safe run leaves it."""
    source = b"from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\nwrapped = checkpoint_wrapper(block)\n"  # noqa: E501
    releases = Releases.parse(torch="2.1..")
    unsafe = run(source, Settings(releases=releases, fix=True, unsafe_fixes=True))
    assert b"checkpoint_impl=CheckpointImpl.NO_REENTRANT" in unsafe.new_source
    safe = run(source, Settings(releases=releases, fix=True))
    assert safe.new_source is None
    (finding,) = safe.findings
    assert "reentrant before torch 2.2" in finding.message
    assert finding.fixable and not finding.fixed  # offered with --unsafe-fixes


LOCAL_WRAPPER = """\
def apply(model):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import {names}

    return {call}
"""


@pytest.mark.parametrize(
    ("names", "call"),
    [
        ("checkpoint_wrapper", "checkpoint_wrapper(model)"),
        ("checkpoint_wrapper", "partial(checkpoint_wrapper)"),
        ("CheckpointImpl, checkpoint_wrapper", "checkpoint_wrapper(model)"),
    ],
)
def test_fsdp108_keeps_a_function_local_import_local(names, call):
    """accelerate's shape: CheckpointImpl joins the function's own import, none is added."""
    source = ("from functools import partial\n\n\n" + LOCAL_WRAPPER).format(names=names, call=call)
    releases = Releases.parse(torch="2.1..")
    migrated = run(source.encode(), Settings(releases=releases, fix=True, unsafe_fixes=True))
    linted = run(source.encode(), Settings(releases=releases))  # the ast detector decides
    assert [f.fixable for f in linted.findings] == [True]
    assert [f.fixable for f in migrated.findings] == [True]
    new = migrated.new_source.decode()
    assert new.count("import") == source.count("import")
    local = LOCAL_WRAPPER.format(names="CheckpointImpl, checkpoint_wrapper", call="").split("\n")[1]
    assert local in new.splitlines()  # in the function, as it was
    assert "checkpoint_impl=CheckpointImpl.NO_REENTRANT" in new


def test_fsdp108_through_a_local_module_import_is_withheld():
    """A module imported inside a function: the fix cannot import one name there."""
    source = (
        "def apply(model):\n"
        "    from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as cw\n"
        "\n"
        "    return cw.checkpoint_wrapper(model)\n"
    )
    releases = Releases.parse(torch="2.1..")
    migrated = run(source.encode(), Settings(releases=releases, fix=True, unsafe_fixes=True))
    assert migrated.new_source is None
    assert [f.withheld is not None or not f.fixable for f in migrated.findings] == [True]


def test_the_default_judges_at_the_current_release():
    assert all(Releases().reported(rule) and Releases().fixable(rule) for rule in REGISTRY)


def test_a_withheld_fix_says_which_range_it_would_break():
    source = b"def policy(module, recurse, unwrapped_params):\n    return recurse\n"
    settings = Settings(fix=True, releases=Releases.parse(torch="1.12.."))
    outcome = run(source, settings)
    (finding,) = outcome.findings
    assert outcome.new_source is None and not finding.fixable
    assert finding.no_fix == "no fix runs on torch 1.12..latest: it needs torch 2.0"


@pytest.mark.parametrize("code", ["FSDP304", "FSDP118"])
def test_a_manual_rules_finding_says_a_human_decides(code):
    rule = REGISTRY[code]
    (finding, *_) = run(rule.example.before.encode(), Settings(select=(code,))).findings
    assert (
        finding.no_fix == f"no automatic fix: a human decides (`--explain {code}` gives the recipe)"
    )


@pytest.mark.parametrize(
    "test",
    [
        "version.parse(torch.__version__) >= version.parse('2.6')",
        "_TORCH_GREATER_EQUAL_2_6 and x",
        "check(version=2)",  # a keyword
        "'__version__' in dir(torch)",  # a string
        "b'version' in blob",
        "any(map(lambda version: version > 2, vs))",  # a parameter
        "hasattr(torch.distributed, 'fsdp')",
        "hasattr((lightning), 'Fabric')",
        "hasattr(module, 'torch')",
        "is_torch_2_plus() or not HAS_FAIRSCALE",
        "model.training and step % 2 == 0",
        "f'{x.version}' == y",
    ],
)
def test_the_gate_test_agrees_with_the_written_back_code(test):
    # The evidence walk looks at a test's words before writing it back (ast.unparse):
    # it must call a gate exactly what the pattern on the written-back code calls one.
    from codemods.screen.evidence import _gate
    from codemods.syntax.gates import GATE

    node = ast.parse(test, mode="eval").body
    assert _gate(node) == (GATE.search(ast.unparse(node)) is not None)


def test_the_gate_test_agrees_on_every_if_of_the_realistic_tree():
    from codemods.screen.evidence import _gate
    from codemods.syntax.gates import GATE
    from tests.realistic_tree import build_tree

    tests = [
        node.test
        for source in build_tree(16).values()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.If)
    ]
    gates = [_gate(test) for test in tests]
    assert gates == [GATE.search(ast.unparse(test)) is not None for test in tests]
    assert any(gates) and not all(gates)


@pytest.mark.parametrize(
    ("source", "floor"),
    [
        # torch 2.0's: absent from the 1.13.1 wheel, present in 2.0.1's
        (
            "from torch.distributed.checkpoint.optimizer import load_sharded_optimizer_state_dict",
            "2.0",
        ),
        ("import torch.distributed.checkpoint as dist_cp\ndist_cp.FileSystemWriter", "2.0"),
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as F\nF.optim_state_dict",
            "2.0",
        ),
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as F\n"
            "F.optim_state_dict_to_load",
            "2.0",
        ),
        ("from torch.distributed.fsdp import FullOptimStateDictConfig", "2.0"),
        ("from torch.distributed.fsdp.api import ShardedOptimStateDictConfig", "2.0"),
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as F\n"
            "F.set_state_dict_type",
            "2.0",
        ),
        ("from torch.distributed.fsdp import ShardedStateDictConfig", "2.0"),
        (
            "from torch.distributed.fsdp.fully_sharded_data_parallel import ShardedStateDictConfig",
            "1.11",
        ),
        # 1.13's: its checkpoint home and FSDP1's full optimizer state dict
        ("from torch.distributed._shard.checkpoint import save_state_dict", "1.0"),
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as F\n"
            "F.full_optim_state_dict",
            "1.11",
        ),
    ],
)
def test_the_optimizer_and_checkpoint_apis_of_torch_2_0_evidence_it(source, floor):
    assert str(evidence_floors(ast.parse(source))["torch"][0]) == floor
