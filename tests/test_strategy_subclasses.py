"""A module's subclass of a Lightning strategy that keeps its constructor is called as one.

``class MyFSDPStrategy(FSDPStrategy)`` with methods of its own but no ``__init__`` (or
``__new__``) passes ``MyFSDPStrategy(activation_checkpointing=...)``'s arguments to
``FSDPStrategy``'s constructor, where the old argument warns (flan-alpaca's training
script builds its strategy so). Both detectors follow such a class as they follow an
alias (``S = FSDPStrategy``): its calls get the strategy's argument rules, and a use of
it is no use of a renamed class's old name. Not followed: a class with a constructor, a
decorator or a metaclass, several bases, a class bound twice, or a subclass of anything
but a Lightning strategy (FSDP1's class keeps its own handling).
"""

from __future__ import annotations

import warnings

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SETTINGS = Settings(fix=True, releases=Releases.parse(lightning="2.1..", torch="2.1.."))
HEAD = "from lightning.pytorch.strategies import FSDPStrategy\n\n\n"
CALL = "\n\nstrategy = Mine(activation_checkpointing=[Block], cpu_offload=True)\n"
FIXED = "strategy = Mine(activation_checkpointing_policy={Block}, cpu_offload=True)"


def _outcome(source: str):
    data = source.encode()
    outcome = run(data, SETTINGS)
    unfixed = SETTINGS.replace(fix=False)
    assert lint(data, unfixed) == run(data, unfixed).findings  # both detectors agree
    return outcome


@pytest.mark.parametrize(
    "body",
    [
        "class Mine(FSDPStrategy):\n    pass\n",
        "class Mine(FSDPStrategy):\n    @property\n    def root_device(self):\n"
        "        return super().root_device\n",
        "class Mine(FSDPStrategy):\n    name = 'mine'\n\n    def save(self):\n        pass\n",
        "class Mine(FSDPStrategy): pass\n",
    ],
    ids=["pass", "a-property", "attributes-and-methods", "one-line"],
)
def test_a_call_of_a_subclass_keeping_the_constructor_is_one_of_the_strategy(body):
    outcome = _outcome(HEAD + body + CALL)
    assert [f.code for f in outcome.findings] == ["FSDP208"]
    assert outcome.new_source.decode().splitlines()[-1] == FIXED


@pytest.mark.parametrize(
    "body",
    [
        "class Mine(FSDPStrategy):\n    def __init__(self, **kwargs):\n"
        "        super().__init__(**kwargs)\n",
        "class Mine(FSDPStrategy):\n    __init__ = FSDPStrategy.__init__\n",
        "class Mine(FSDPStrategy):\n    def __new__(cls, **kwargs):\n        return object()\n",
        "@register\nclass Mine(FSDPStrategy):\n    pass\n",
        "class Mine(FSDPStrategy, metaclass=Meta):\n    pass\n",
        "class Mine(FSDPStrategy, Mixin):\n    pass\n",
        "class Mine(FSDPStrategy):\n    pass\n\n\nMine = other\n",
        "from torch.nn import Module\n\n\nclass Mine(Module):\n    pass\n",
    ],
    ids=[
        "own-init",
        "assigned-init",
        "own-new",
        "decorated",
        "metaclass",
        "two-bases",
        "rebound",
        "not-a-strategy",
    ],
)
def test_other_classes_are_not_followed(body):
    outcome = _outcome(HEAD + body + CALL)
    assert outcome.findings == [] and outcome.new_source is None


def test_a_subclass_of_a_renamed_strategy_is_no_use_of_its_old_name():
    # FSDP203 renames the base in the class statement; `Native(...)` is left as it is,
    # and its argument is the strategy's.
    source = (
        "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy\n\n\n"
        "class Native(DDPFullyShardedNativeStrategy):\n    pass\n\n\n"
        "strategy = Native(activation_checkpointing=[Block])\n"
    )
    outcome = _outcome(source)
    assert sorted(f.code for f in outcome.findings) == ["FSDP203", "FSDP208"]
    assert outcome.new_source.decode() == (
        "from pytorch_lightning.strategies import FSDPStrategy\n\n\n"
        "class Native(FSDPStrategy):\n    pass\n\n\n"
        "strategy = Native(activation_checkpointing_policy={Block})\n"
    )


def test_the_fixed_subclass_call_builds_without_the_deprecation():
    pytest.importorskip("lightning")
    source = (
        HEAD + "import torch\n\n\nclass Block(torch.nn.Linear):\n    pass\n\n\n"
        "class Mine(FSDPStrategy):\n    @property\n    def kind(self):\n        return 'mine'\n"
        + CALL
    )
    fixed = _outcome(source).new_source.decode()
    for code, warns in ((source, True), (fixed, False)):
        namespace: dict = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(code, "<strategy>", "exec"), namespace)
        said = any("activation_checkpointing" in str(w.message) for w in caught)
        assert said == warns
        assert namespace["strategy"].kind == "mine"
