"""A method wraps and returns the model; the class binds it to ``self`` and reads it.

lightning-thunder's benchmark: ``setup_distributed(self, model)`` returns
``FSDP(model, ...)``, ``self.model = self.setup_distributed(self.model)`` (and other
values: the initial model, a compiled one), then the training loop takes
``self.model.no_sync``. FSDP2 models have no ``no_sync``: the conversion is withheld,
and the reason names the read (``codemods.rules.fsdp401.reach.method_model_reads``).
Written by us in that shape.
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SETTINGS = Settings(
    select=("FSDP401",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch="2.6..")
)

BENCHMARK = """\
from contextlib import nullcontext

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Benchmark:
    def __init__(self, model, mode, skip_sync):
        self.model = model
        self.mode = mode
        self.skip_sync = skip_sync
        if mode == "fsdp":
            self.model = self.setup_distributed(self.model)

    def setup_distributed(self, model):
        if self.mode == "fsdp":
            model = FSDP(model, use_orig_params=True)
        return model

    def train(self, batches):
        {read}
        for batch in batches:
            with ctx():
                self.model(batch).sum().backward()
"""


@pytest.mark.parametrize(
    ("read", "why"),
    [
        (
            "ctx = self.model.no_sync if self.skip_sync else nullcontext",
            "`self.model.no_sync` at line 20 reads what `self.setup_distributed` returns "
            "(line 16's FSDP1 model): an FSDP2 model has no `no_sync`",
        ),
        ("ctx = nullcontext\n        state = self.model.state_dict()", "FSDP2 returns DTensor"),
    ],
)
def test_an_fsdp1_read_of_what_the_method_returns_keeps_the_file(read, why):
    outcome = run(BENCHMARK.format(read=read).encode(), SETTINGS)
    (finding,) = outcome.findings
    assert outcome.new_source is None and not finding.fixed
    assert why in finding.withheld


def test_plain_uses_of_what_the_method_returns_convert():
    outcome = run(BENCHMARK.format(read="ctx = nullcontext").encode(), SETTINGS)
    (finding,) = outcome.findings
    assert finding.fixed, finding.withheld
    assert "model = fully_shard(model)" in outcome.new_source.decode()


def test_a_read_of_another_attribute_holds_nothing():
    source = BENCHMARK.format(read="ctx = self.teacher.no_sync")
    (finding,) = run(source.encode(), SETTINGS).findings
    assert finding.fixed, finding.withheld


def test_a_state_dict_in_the_checkpoint_block_is_the_blocks_own():
    read = (
        "ctx = nullcontext\n"
        "        with FSDP.state_dict_type(self.model, StateDictType.FULL_STATE_DICT):\n"
        "            state = self.model.state_dict()"
    )
    source = BENCHMARK.format(read=read).replace(
        "import FullyShardedDataParallel as FSDP",
        "import FullyShardedDataParallel as FSDP, StateDictType",
    )
    (finding,) = run(source.encode(), SETTINGS).findings
    assert "reads what `self.setup_distributed` returns" not in (finding.withheld or "")


def test_a_local_bound_in_another_method_is_that_methods_own():
    # verl's shape: `module = self.build(module)` in one method, `module.state_dict()`
    # in another, on the module it was given
    source = BENCHMARK.format(read="ctx = nullcontext").replace(
        "    def train(self, batches):\n",
        "    def load(self, module):\n        full = module.state_dict()\n        return full\n\n"
        "    def prepare(self, module):\n        module = self.setup_distributed(module)\n"
        "        return module\n\n    def train(self, batches):\n",
    )
    (finding,) = run(source.encode(), SETTINGS).findings
    assert finding.fixed, finding.withheld
