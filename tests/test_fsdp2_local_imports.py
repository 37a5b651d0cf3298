"""FSDP2's imports go where the code imported FSDP1's class: inside the function.

A benchmark or a library that imports ``FullyShardedDataParallel`` inside the function
that wraps (lightning-thunder's benchmarks) keeps ``torch.distributed`` out of its
module's import time; the conversion writes ``fully_shard``'s import there, before
the old one, which goes with its last use. Where the file's conversions need helpers
(module-level functions that read the same names), or the class is the module's own
import, the imports stay at the top. The shapes are written by us; a package of that
shape is migrated and trained both ways on 2 gloo ranks.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from codemods.engine.run import run
from codemods.migrate import main as migrate
from codemods.releases import Releases
from codemods.settings import Settings
from tests.test_fsdp2_across_files import _runs_on_cpu, _same_training, _train_copies

SETTINGS = Settings(
    select=("FSDP401",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch="2.6..")
)

BUILD = """\
import torch


def build(model):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision

    mp = MixedPrecision(param_dtype=torch.bfloat16)
    return FSDP(model, mixed_precision=mp)
"""


def _migrated(source: str, settings: Settings = SETTINGS) -> str:
    outcome = run(textwrap.dedent(source).encode(), settings)
    assert outcome.new_source is not None, [f.withheld or f.message for f in outcome.findings]
    return outcome.new_source.decode()


def _module_imports(source: str) -> list[str]:
    tree = ast.parse(source)
    return [ast.unparse(node) for node in tree.body if isinstance(node, ast.ImportFrom)]


def test_the_imports_go_in_the_function_that_imported_fsdp1():
    new = _migrated(BUILD)
    assert _module_imports(new) == []
    assert (
        "def build(model):\n"
        "    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n"
        "\n"
        "    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16)\n"
        "    return fully_shard(model, mp_policy=mp)\n"
    ) in new


def test_before_torch_2_6_they_come_from_the_composable_home():
    settings = SETTINGS.replace(releases=Releases.parse(torch="2.4.."))
    new = _migrated(BUILD, settings)
    assert "    from torch.distributed._composable.fsdp import MixedPrecisionPolicy, " in new
    assert _module_imports(new) == []


def test_a_call_in_a_nested_function_reads_the_outer_functions_import():
    new = _migrated(
        """\
        def main(model):
            import torch.distributed.fsdp as fsdp

            def wrap(module):
                return torch.compile(fsdp.FullyShardedDataParallel(module))

            return wrap(model)
        """
    )
    assert "    from torch.distributed.fsdp import fully_shard\n\n    def wrap(module):" in new
    assert "import torch.distributed.fsdp as fsdp" not in new
    assert _module_imports(new) == []


def test_two_calls_in_one_function_import_once():
    new = _migrated(
        """\
        def build(encoder, decoder):
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            encoder = FSDP(encoder)
            decoder = FSDP(decoder)
            return encoder, decoder
        """
    )
    assert new.count("import fully_shard") == 1


@pytest.mark.parametrize(
    "source",
    [
        # the module's own import: beside it, at the top
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
        "def build(model):\n    return FSDP(model)\n",
        # helpers (module-level functions) read the names the conversion imports
        "import torch\n\n\ndef build(model, policy):\n"
        "    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n"
        "    return FSDP(model, auto_wrap_policy=policy)\n",
    ],
)
def test_the_imports_stay_at_the_top_where_the_module_or_a_helper_needs_them(source):
    new = _migrated(source)
    assert any("fully_shard" in line for line in _module_imports(new))
    compile(new, "<migrated>", "exec")


TRAIN = """\
import torch
from torch import nn

from tests.models import local_device


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x))


def build():
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(4)])
    policy = ModuleWrapPolicy({Block})
    return FSDP(model, auto_wrap_policy=policy, use_orig_params=True, device_id=local_device())


def main(rank, steps):
    if torch.cuda.is_available():  # the device set here: FSDP2 needs no other
        torch.cuda.set_device(local_device())
    model = build()
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    losses = []
    for _ in range(steps):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optim.step()
        optim.zero_grad()
        losses.append(loss.item())
    return model, losses
"""


@pytest.mark.distributed
def test_a_package_that_imports_inside_trains_the_same(tmp_path):
    from tests import distributed

    _runs_on_cpu()
    for name in ("legacy", "migrated"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n'
    )
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", str(tmp_path / "migrated")])
    migrated = (tmp_path / "migrated" / "train.py").read_text()
    assert "    from torch.distributed.fsdp import fully_shard\n" in migrated
    assert "FullyShardedDataParallel" not in migrated
    # `device_id` went (`main` sets the device: FSDP2 takes the current one), and with it
    # none of the module's imports (`local_device` is read in `main` too)
    assert _module_imports(migrated) == [
        "from torch import nn",
        "from tests.models import local_device",
    ]
    results = distributed.run(_train_copies, str(tmp_path), 3, world_size=2, timeout=300)
    _same_training(results)
    assert Path(tmp_path / "legacy" / "train.py").read_text() == TRAIN
