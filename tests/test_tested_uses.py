"""A use that only tests for an old name says so: a comparison, an ``isinstance`` class.

FSDP118's message (choose ``DistributedDataParallel`` over ``NO_SHARD``) and FSDP307's
and FSDP308's (build torch's optimizer or wrapper) are worded for the use that chooses
the old thing; where a use only tests whether something else chose it, the finding adds
the detail its behaviour gives (``codemods/rules/tested_uses.py``). Both detectors agree
on every shape.
"""

from __future__ import annotations

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.settings import Settings

HEAD = (
    "from torch.distributed.fsdp import ShardingStrategy\n"
    "from torch.distributed.fsdp import ShardingStrategy as S\n"
    "from fairscale.optim import OSS\n"
    "from fairscale.nn.data_parallel import ShardedDataParallel\n"
    "import fairscale.optim as fo\n\n"
)
COMPARED = "a comparison: it tests whether something else chose `NO_SHARD`"
OPTIMIZER_TESTED = "test for `ZeroRedundancyOptimizer`"
MODEL_TESTED = "test for `DistributedDataParallel`"


def _findings(line: str) -> list[tuple[str, str]]:
    """``(code, message)`` of the findings on ``line`` (after the imports), both detectors'."""
    source = (HEAD + line + "\n").encode()
    settings = Settings()
    found = lint(source, settings)
    assert found == run(source, settings).findings  # both detectors agree
    last = HEAD.count("\n") + 1
    return [(f.code, f.message) for f in found if f.line >= last]


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        ("same = s != ShardingStrategy.NO_SHARD", COMPARED),
        ("same = ShardingStrategy.NO_SHARD == s", COMPARED),
        ("same = s is not S.NO_SHARD", COMPARED),
        ("same = s in (ShardingStrategy.NO_SHARD, ShardingStrategy.FULL_SHARD)", COMPARED),
        ("same = s not in [ShardingStrategy.NO_SHARD]", COMPARED),
        ("same = s in {S.NO_SHARD}", COMPARED),
        ("match s:\n    case ShardingStrategy.NO_SHARD:\n        pass", COMPARED),
        ("same = isinstance(o, OSS)", OPTIMIZER_TESTED),
        ("same = isinstance(o, (OSS, int))", OPTIMIZER_TESTED),
        ("same = isinstance(o, fo.OSS)", OPTIMIZER_TESTED),
        ("same = issubclass(type(o), OSS)", OPTIMIZER_TESTED),
        ("same = type(o) is OSS", OPTIMIZER_TESTED),
        ("same = isinstance(m, ShardedDataParallel)", MODEL_TESTED),
        # uses that choose the old thing, or test something else: the message alone
        ("FSDP(m, sharding_strategy=ShardingStrategy.NO_SHARD)", None),
        ("strategy = S.NO_SHARD", None),
        ("table = {'ddp': ShardingStrategy.NO_SHARD}", None),
        ("same = s == ShardingStrategy.NO_SHARD.value", COMPARED),
        ("optimizer = OSS(params, optim=SGD)", None),
        ("same = issubclass(OSS, object)", None),
        ("same = isinstance(*pair, OSS)", None),
        ("same = isinstance(o, [OSS])", None),
        ("model = ShardedDataParallel(m, optimizer)", None),
    ],
)
def test_a_use_that_only_tests_for_the_name_says_so(line, detail):
    ((_, message),) = _findings(line)
    if detail is None:
        assert not message.endswith(")"), message
    else:
        assert message.endswith(")") and detail in message.rpartition(" (")[2], message


def test_a_rule_without_a_detail_reports_its_message_at_a_test():
    """A renaming rule's use in a test is renamed with the rest: no detail, the fix kept."""
    source = (
        b"from pytorch_lightning.strategies import DDPFullyShardedStrategy\n"
        b"def check(trainer):\n"
        b"    return isinstance(trainer.strategy, DDPFullyShardedStrategy)\n"
    )
    settings = Settings()
    found = lint(source, settings)
    assert found == run(source, settings).findings
    assert [f.code for f in found] == ["FSDP202", "FSDP202"]
    assert found[0].message == found[1].message
