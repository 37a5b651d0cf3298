"""Migrated code builds the same sharded model as the legacy code it came from.

For every runnable migrate fixture (``# runnable:`` in its ``input.py``), one 2-rank
gloo run (NCCL on a GPU) builds and trains the model twice from the same seed and
data: the legacy input with its old imports resolved through ``compat``, and the
migrated ``output.py`` on native torch. Both must give the same FSDP units, the same
checkpointed modules, the same parameters after the steps and the same losses; the
legacy run warns with exactly the codes the fixture names, the migrated one with none.
"""

from __future__ import annotations

import functools

import pytest
import torch

from compat.features import current
from tests import distributed
from tests.equivalence import Case, checkpoint_reference, equivalence_tests
from tests.migrate_fixtures import ROOT, RUNNABLE
from tests.models import Block
from tests.through_compat import load_build

pytestmark = pytest.mark.distributed

if not current().fsdp1_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)

#: Fixtures that checkpoint modules: the unsharded reference checkpoints them too.
REFERENCES = {"runnable-fairscale": checkpoint_reference(Block)}


def build_fixture(name: str, which: str, model: torch.nn.Module) -> torch.nn.Module:
    """Build ``model`` with fixture ``name``'s input (through compat) or output (native)."""
    path = ROOT / name / f"{which}.py"
    build = load_build(path.read_text(encoding="utf-8"), str(path), which == "input")
    return build(model, distributed.device_for(torch.distributed.get_rank()))


CASES = {
    name: Case(
        legacy=functools.partial(build_fixture, name, "input"),
        native=functools.partial(build_fixture, name, "output"),
        codes=fixture.compat_warns,
        reference=REFERENCES.get(name),
    )
    for name, fixture in RUNNABLE.items()
}

runs, test_legacy_equals_native, test_legacy_equals_reference = equivalence_tests(__name__, CASES)


def test_every_runnable_fixture_has_an_output():
    assert RUNNABLE and all((ROOT / name / "output.py").exists() for name in RUNNABLE)
