"""FSDP401's dual stack: FSDP2 beside FSDP1 where a project's releases start before FSDP2.

A range that reaches below torch 2.4 (no ``fully_shard``) keeps each FSDP1 call and
puts the plain FSDP2 code beside it, chosen by whether FSDP2 imports. The forms, what
keeps a file from it, a second run, and runs of both branches: on this torch (the FSDP1
branch forced by hiding FSDP2's homes, as a torch before 2.4 has none) and, where this
torch has no FSDP2, the FSDP1 branch as it is.
"""

from __future__ import annotations

import contextlib
import importlib
import textwrap
import types

import pytest
import torch

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings
from tests import distributed

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import ShardingStrategy\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n"
)
WRAP = "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"


def _settings(torch_range: str, fix: bool = True) -> Settings:
    return Settings(
        fix=fix, unsafe_fixes=True, select=("FSDP4",), releases=Releases.parse(torch=torch_range)
    )


def _migrate(body: str, torch_range: str = "1.13..") -> tuple[str | None, list]:
    outcome = run((HEAD + "\n" + textwrap.dedent(body)).encode(), _settings(torch_range))
    new = outcome.new_source.decode() if outcome.new_source is not None else None
    return new, [f for f in outcome.findings if f.code == "FSDP401"]


def test_a_range_below_fsdp2_keeps_the_fsdp1_call_beside_the_fsdp2_code():
    new, findings = _migrate("def shard(model):\n    # one unit per block\n    " + WRAP)
    assert new == HEAD + (
        "\n"
        "try:  # FSDP2's public home (torch 2.6 and later)\n"
        "    from torch.distributed.fsdp import fully_shard\n"
        "except ImportError:\n"
        "    try:  # torch 2.4 and 2.5\n"
        "        from torch.distributed._composable.fsdp import fully_shard\n"
        "    except ImportError:  # torch before 2.4: no FSDP2, the FSDP1 calls run\n"
        "        fully_shard = None\n"
        "HAS_FSDP2 = fully_shard is not None\n"
        "\n"
        "def shard(model):\n"
        "    # one unit per block\n"
        "    if HAS_FSDP2:\n"
        "        for submodule in reversed(list(model.modules())):  "
        "# descendants before ancestors\n"
        "            if isinstance(submodule, Block) and submodule is not model:\n"
        "                fully_shard(submodule)\n"
        "        model = fully_shard(model)\n"
        "    else:\n"
        "        " + WRAP
    )
    [finding] = findings
    assert finding.fixed
    assert "FSDP2 beside FSDP1: the releases 1.13..latest start before FSDP2" in finding.message


@pytest.mark.parametrize(
    ("torch_range", "homes"),
    [
        ("2.2..2.5", ["torch.distributed._composable.fsdp"]),
        ("2.0..", ["torch.distributed.fsdp", "torch.distributed._composable.fsdp"]),
        ("2.3..2.13", ["torch.distributed.fsdp", "torch.distributed._composable.fsdp"]),
    ],
)
def test_only_the_homes_the_range_reaches_are_tried(torch_range, homes):
    new, _ = _migrate(WRAP, torch_range)
    tried = [
        line.split()[1]
        for line in new.splitlines()
        if line.lstrip().startswith("from torch.distributed") and "fully_shard" in line
    ]
    assert tried == homes


@pytest.mark.parametrize("torch_range", ["2.4..", "2.6..2.13"])
def test_a_range_with_fsdp2_everywhere_gets_plain_code(torch_range):
    new, _ = _migrate(WRAP, torch_range)
    assert "HAS_FSDP2" not in new and "FSDP(" not in new


def test_a_range_without_fsdp2_reports_nothing():
    new, findings = _migrate(WRAP, "1.13..2.3")
    assert new is None and findings == []


def test_the_keywords_fsdp2_needs_come_from_the_same_try_and_the_fsdp1_names_stay():
    new, _ = _migrate(
        "model = FSDP(\n"
        "    model,\n"
        "    sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,\n"
        "    mixed_precision=MixedPrecision(param_dtype=torch.bfloat16),\n"
        ")\n".replace("MixedPrecision(", "torch.distributed.fsdp.MixedPrecision("),
        "2.2..2.5",
    )
    assert (
        "from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard\n" in new
    )
    assert "MixedPrecisionPolicy = fully_shard = None\n" in new
    assert "    model = fully_shard(\n        model,\n        reshard_after_forward=False,\n" in new
    assert HEAD in new  # every FSDP1 import stays: the FSDP1 branch uses them


def test_annotations_naming_fsdp1_stay_as_written():
    new, _ = _migrate(
        "def shard(model: torch.nn.Module) -> FSDP:\n    " + WRAP + "    return model\n"
    )
    assert "-> FSDP:" in new and "FSDPModule" not in new


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            WRAP + "for unit in FSDP.fsdp_modules(model):\n    print(unit.module)\n",
            "FSDP.fsdp_modules(model)` at line 8: FSDP1's spelling must stay",
        ),
        (  # bound in the function: the new code there would read it (one bound at the
            # top level is imported apart: tests/test_fsdp2_spellings.py)
            "def build(model):\n    MixedPrecisionPolicy = None\n"
            "    return FSDP(model, mixed_precision=torch.distributed.fsdp.MixedPrecision())\n",
            "`MixedPrecisionPolicy`, which the FSDP2 branch imports",
        ),
    ],
    ids=["unit-module-loop", "name-taken"],
)
def test_what_the_dual_stack_does_not_dispatch_keeps_the_file_fsdp1(body, said):
    new, findings = _migrate(body)
    assert new is None
    assert findings and not any(f.fixed for f in findings)
    assert any(said in (f.withheld or "") for f in findings), [f.withheld for f in findings]


def test_a_second_run_changes_nothing_and_reports_nothing():
    new, _ = _migrate(WRAP)
    again = run(new.encode(), _settings("1.13.."))
    assert again.new_source is None
    assert [f for f in again.findings if f.code == "FSDP401"] == []


# Runs ---------------------------------------------------------------------------------

CLASSES = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

from tests.models import Block, local_device, make_model


def build():
    model = make_model()
    model = FSDP(
        model,
        auto_wrap_policy=ModuleWrapPolicy({Block}),
        sharding_strategy=ShardingStrategy.FULL_SHARD,
        device_id=local_device(),
    )
    return model
"""
#: A size policy: the FSDP2 branch decides FSDP1's units at run time, with helpers
#: written at module level that must not need FSDP2 where the file imports.
SIZE = """\
import functools

from torch.distributed.fsdp import FullyShardedDataParallel
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

from tests.models import local_device, make_model


def build():
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=100)
    return FullyShardedDataParallel(make_model(), auto_wrap_policy=policy, device_id=local_device())
"""
#: Gradient accumulation under `no_sync` (a block, and the conditional form) and
#: clipping on the wrapped model: the uses dispatch on the flag with the call.
ACCUMULATION = """\
import contextlib

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

from tests.models import Block, batch, local_device, make_model


def build():
    model = FSDP(make_model(), auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=local_device())
    return model


def fit(rank, steps=3, accumulate=3):
    model = build()
    assert isinstance(model, FSDP)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for step in range(steps):
        x, y = batch(rank, step * accumulate, local_device())
        with model.no_sync():
            torch.nn.functional.mse_loss(model(x), y).backward()
        for micro in range(1, accumulate):
            x, y = batch(rank, step * accumulate + micro, local_device())
            last = micro == accumulate - 1
            with model.no_sync() if not last else contextlib.nullcontext():
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
        norm = model.clip_grad_norm_(0.05)
        optimizer.step()
        optimizer.zero_grad()
        losses += [loss.item(), norm.item()]
    return model, losses
"""
#: A precision bound to a name, which FSDP1's branch passes and FSDP2's converts at run time.
PRECISION = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

from tests.models import Block, local_device, make_model


def build(exact=True):
    mp = None
    if exact:
        mp = MixedPrecision(param_dtype=torch.float32, reduce_dtype=torch.float32)
    policy = ModuleWrapPolicy({Block})
    return FSDP(make_model(), auto_wrap_policy=policy, mixed_precision=mp, device_id=local_device())
"""
SCRIPTS = {"classes": CLASSES, "size-policy": SIZE, "accumulation": ACCUMULATION}
SCRIPTS["bound-precision"] = PRECISION


@contextlib.contextmanager
def _without_fsdp2():
    """Imports as on a torch before 2.4: neither FSDP2 home has ``fully_shard``."""
    import sys

    import torch.distributed.fsdp as public

    saved = public.__dict__.pop("fully_shard", None)
    composable = "torch.distributed._composable.fsdp"
    held = sys.modules.get(composable)
    sys.modules[composable] = None  # `from` it raises ImportError
    try:
        yield
    finally:
        if saved is not None:
            public.fully_shard = saved
        if held is None:
            sys.modules.pop(composable, None)
        else:
            sys.modules[composable] = held


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - our own code
    return module


def _units(model) -> list[str]:
    """The FSDP units of ``model`` by name: FSDP1's wrappers or FSDP2's sharded modules."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    from compat.checkpointing import clean_name
    from compat.features import current

    kinds: tuple[type, ...] = (FullyShardedDataParallel,)
    if current().fsdp2:
        kinds += (importlib.import_module(current().fsdp2_module).FSDPModule,)
    return sorted(clean_name(n) for n, m in model.named_modules() if isinstance(m, kinds))


def _fsdp2_runs_here() -> bool:
    from compat.features import current

    return current().fsdp2_on_cpu or torch.cuda.is_available()


def _branches(rank: int, world_size: int, pairs: dict[str, tuple[str, str]]) -> dict:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from tests.models import local_device, train

    def fitted(module: types.ModuleType) -> tuple:
        """The model and its losses: the script's own loop where it has one (``fit``)."""
        if hasattr(module, "fit"):
            return module.fit(rank)
        model = module.build()
        return model, train(model, [rank], 3, local_device())

    def trained(module: types.ModuleType) -> tuple:
        model, losses = fitted(module)
        kind = "FSDP1" if isinstance(model, FullyShardedDataParallel) else "FSDP2"
        return _units(model), losses, kind, module.HAS_FSDP2

    results = {}
    for form, (original, migrated) in pairs.items():
        fsdp1, losses = fitted(_load(original, "fsdp1"))
        result = results[form] = {"fsdp1": (_units(fsdp1), losses)}
        new = _load(migrated, "this_torch")
        result["has_fsdp2"] = new.HAS_FSDP2
        if new.HAS_FSDP2 and _fsdp2_runs_here():
            result["fsdp2"] = trained(new)
        with _without_fsdp2():
            old = _load(migrated, "old_torch")
        result["forced"] = trained(old)
    return results


@pytest.fixture(scope="module")
def branches() -> list[dict]:
    pairs = {}
    for form, script in SCRIPTS.items():
        outcome = run(script.encode(), _settings("2.0.."))
        assert outcome.new_source is not None, [f.message for f in outcome.findings]
        pairs[form] = (script, outcome.new_source.decode())
        assert "HAS_FSDP2" in pairs[form][1]
    return distributed.run(_branches, pairs, backend=distributed.backend_for_tests(), timeout=300)


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@pytest.mark.parametrize("form", list(SCRIPTS))
def test_the_check_finds_fsdp2_where_this_torch_has_it(branches, form):
    from compat.features import current

    assert [rank[form]["has_fsdp2"] for rank in branches] == [current().fsdp2] * len(branches)


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@pytest.mark.parametrize("form", list(SCRIPTS))
def test_the_fsdp1_branch_runs_where_fsdp2_does_not_import(branches, form):
    for rank in (rank[form] for rank in branches):
        units, losses, kind, has_fsdp2 = rank["forced"]
        assert (kind, has_fsdp2) == ("FSDP1", False)
        assert (units, losses) == rank["fsdp1"]  # the FSDP1 call as written
        assert len(units) > 1


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
@pytest.mark.parametrize("form", list(SCRIPTS))
def test_the_fsdp2_branch_trains_as_the_fsdp1_original(branches, form):
    from compat.features import current

    if not current().fsdp2:
        pytest.skip(f"torch {torch.__version__} has no FSDP2: the FSDP1 branch is the one run")
    if not _fsdp2_runs_here():
        pytest.skip(f"torch {torch.__version__} runs FSDP2 only on CUDA")
    for rank in (rank[form] for rank in branches):
        units, losses, kind, has_fsdp2 = rank["fsdp2"]
        assert (kind, has_fsdp2) == ("FSDP2", True)
        assert units == rank["fsdp1"][0]
        assert losses == pytest.approx(rank["fsdp1"][1], rel=1e-5)


@pytest.mark.distributed
@distributed.NEEDS_FSDP1
def test_the_accumulation_script_clips_its_gradients(branches):
    """The clip must act, or its dispatch would be untested: some norm is over 0.05."""
    for rank in branches:
        norms = rank["accumulation"]["fsdp1"][1][1::2]
        assert len(norms) == 3 and max(norms) > 0.05


def test_fsdp1_names_the_fsdp2_code_reads_stay_unconditional():
    # A strategy read at run time: the FSDP2 code looks `ShardingStrategy` up, a name
    # every release has; the try holds FSDP2's names alone, so a torch without FSDP2
    # keeps the FSDP1 branch's `ShardingStrategy`.
    new, (finding,) = _migrate(
        "def shard(model, strategy):\n    return FSDP(model, sharding_strategy=strategy)\n",
        "2.0..",
    )
    assert finding.fixed
    block = new[new.index("try:") : new.index("HAS_FSDP2 =")]
    assert "ShardingStrategy" not in block and "fully_shard" in block
    assert "from torch.distributed.fsdp import ShardingStrategy\n" in new
    # the FSDP2 branch reads the strategy with helpers that name no FSDP2 class
    assert "reshard_after_forward=reshards_like_fsdp1(strategy)" in new
