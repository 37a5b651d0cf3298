"""FSDP208 (and FSDP209, FSDP118) in ``StrategyRegistry.register(name, FSDPStrategy, ...)``.

The registry passes the keywords after its own parameters to the strategy it builds, so
the old argument warns there as in a call of the class (perceiver-io registers its FSDP
strategy so). Reported and fixed where the registered strategy is Lightning's FSDP
strategy, by keyword or position, in Lightning's and Fabric's registries; both detectors
agree. The fixed registration builds its strategy on the installed Lightning without
the deprecation the old one gives.
"""

from __future__ import annotations

import warnings

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SETTINGS = Settings(select=("FSDP208",), fix=True, releases=Releases.parse(lightning="2.1.."))
PL = "from lightning.pytorch.strategies import FSDPStrategy, StrategyRegistry\n"
FABRIC = "from lightning.fabric.strategies import FSDPStrategy, STRATEGY_REGISTRY\n"


@pytest.mark.parametrize(
    ("source", "fixed"),
    [
        (
            PL
            + "StrategyRegistry.register('a', strategy=FSDPStrategy, activation_checkpointing=[B])",
            "StrategyRegistry.register('a', strategy=FSDPStrategy, "
            "activation_checkpointing_policy={B})",
        ),
        (
            PL + "StrategyRegistry.register('a', FSDPStrategy, 'd', activation_checkpointing=[B])",
            "StrategyRegistry.register('a', FSDPStrategy, 'd', "
            "activation_checkpointing_policy={B})",
        ),
        (
            FABRIC + "STRATEGY_REGISTRY.register('a', FSDPStrategy, activation_checkpointing=(B,))",
            "STRATEGY_REGISTRY.register('a', FSDPStrategy, activation_checkpointing_policy={B,})",
        ),
        # Another strategy, none named (the decorator form), or hidden behind *args.
        (PL + "StrategyRegistry.register('a', Mine, activation_checkpointing=B)", None),
        (PL + "StrategyRegistry.register('a', activation_checkpointing=B)", None),
        (PL + "StrategyRegistry.register(*args, activation_checkpointing=B)", None),
        (
            PL + "StrategyRegistry.register('a', *rest, FSDPStrategy, activation_checkpointing=B)",
            None,
        ),
        # A registry of the user's own is not Lightning's.
        (
            "from mine import FSDPStrategy, registry\n"
            "registry.register('a', FSDPStrategy, activation_checkpointing=B)",
            None,
        ),
    ],
)
def test_a_registered_fsdp_strategy_gets_fsdp208(source, fixed):
    data = (source + "\n").encode()
    outcome = run(data, SETTINGS)
    assert [f.code for f in outcome.findings] == (["FSDP208"] if fixed else [])
    if fixed:
        assert outcome.new_source.decode().splitlines()[-1] == fixed
    assert (
        lint(data, SETTINGS.replace(fix=False)) == run(data, SETTINGS.replace(fix=False)).findings
    )


def _registered(source: str, name: str) -> tuple[object, list[str]]:
    """The strategy the registry builds for ``name`` after ``source`` ran, and its warnings."""
    from lightning.pytorch.strategies import StrategyRegistry

    namespace: dict = {}
    exec(compile(source, "<registration>", "exec"), namespace)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strategy = StrategyRegistry.get(name)
    return strategy, [str(w.message) for w in caught]


def test_the_fixed_registration_builds_without_the_deprecation():
    pytest.importorskip("lightning")
    source = (
        PL + "import torch\n\n\nclass Block(torch.nn.Linear):\n    pass\n\n\n"
        "StrategyRegistry.register(\n    'fsdp208-{}',\n    FSDPStrategy,\n"
        "    override=True,\n    activation_checkpointing=[Block],\n)\n"
    )
    before = source.format("before")
    after = run(source.format("after").encode(), SETTINGS).new_source.decode()
    assert "activation_checkpointing_policy={Block}" in after
    _, warned = _registered(before, "fsdp208-before")
    assert any("activation_checkpointing" in message for message in warned), warned
    strategy, warned = _registered(after, "fsdp208-after")
    assert not any("activation_checkpointing" in message for message in warned), warned
    assert type(strategy).__name__ == "FSDPStrategy" and strategy._activation_checkpointing_kwargs


POLICY = (
    "from functools import partial\n"
    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
)


@pytest.mark.parametrize(
    ("code", "source", "fixed"),
    [
        # FSDP209 (Lightning 2.1's classes for the partial), fixed as in a call of the class
        (
            "FSDP209",
            PL + POLICY + "StrategyRegistry.register('a', FSDPStrategy, auto_wrap_policy="
            "partial(transformer_auto_wrap_policy, transformer_layer_cls={B}))",
            "StrategyRegistry.register('a', FSDPStrategy, auto_wrap_policy={B})",
        ),
        (
            "FSDP209",
            PL + POLICY + "StrategyRegistry.register('a', Mine, auto_wrap_policy="
            "partial(transformer_auto_wrap_policy, transformer_layer_cls={B}))",
            None,
        ),
        # FSDP118 (NO_SHARD by name), reported only
        (
            "FSDP118",
            FABRIC + "STRATEGY_REGISTRY.register('a', FSDPStrategy, sharding_strategy='no_shard')",
            "",
        ),
        (
            "FSDP118",
            PL + "StrategyRegistry.register('a', Mine, sharding_strategy='NO_SHARD')",
            None,
        ),
    ],
    ids=["fsdp209", "fsdp209-another-strategy", "fsdp118", "fsdp118-another-strategy"],
)
def test_the_strategys_other_argument_rules_follow_a_registration(code, source, fixed):
    settings = SETTINGS.replace(select=(code,))
    data = (source + "\n").encode()
    outcome = run(data, settings)
    assert [f.code for f in outcome.findings] == ([code] if fixed is not None else [])
    if fixed:
        assert outcome.new_source.decode().splitlines()[-1] == fixed
    assert (
        lint(data, settings.replace(fix=False)) == run(data, settings.replace(fix=False)).findings
    )
