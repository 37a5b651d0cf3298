"""The distributed-checkpoint, DTensor, activation-checkpoint and FSDP2 rules on one file.

A training module of our own writing uses every deprecated API that FSDP120-FSDP131
answer; lint must report each use once, at its place, and migrate must rewrite the
certain ones, leave the rest, and keep the file valid Python. The ``--target-torch``
cases check the gates: a fix is offered only where its new form exists.
"""

from __future__ import annotations

import ast

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SOURCE = """\
import functools

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed._shard.checkpoint import FileSystemReader
from torch.distributed._tensor import DTensor, Shard, init_device_mesh
from torch.distributed._tensor.placement_types import DTensorSpec
from torch.distributed.checkpoint.staging import BlockingAsyncStager
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import distribute_module
from torch.utils.checkpoint import checkpoint


class Stager(BlockingAsyncStager):
    def synchronize_staging(self):
        pass


def train(model, state, path, mesh_shape):
    mesh = init_device_mesh("cpu", mesh_shape)
    model = fully_shard(model)
    model.set_reduce_scatter_divide_factor(2.0)
    distribute_module(model, mesh, input_fn=lambda inputs, device_mesh: inputs)
    head = get_model_state_dict(model, submodules={model.head})
    set_model_state_dict(model, {model.head: head})
    hidden = checkpoint(model.block, state)
    wrapped = functools.partial(checkpoint, model.block)
    dcp.save_state_dict(state, dcp.FileSystemWriter(path))
    dcp.load_state_dict(state, FileSystemReader(path))
    spec = DTensorSpec
    return DTensor.from_local(hidden, mesh, [Shard(0)]), wrapped, spec
"""

#: (line, code) of every finding, in order: one for each legacy import, and one for
#: each use the fix itself changes (a use that reads the same after the fix is the
#: import's finding: tests/test_import_findings.py).
EXPECTED = [
    (5, "FSDP122"),
    (6, "FSDP123"),  # one finding per rule and import statement
    (6, "FSDP131"),
    (7, "FSDP130"),
    (16, "FSDP129"),
    (23, "FSDP125"),
    (24, "FSDP126"),
    (25, "FSDP127"),
    (26, "FSDP128"),
    (27, "FSDP124"),
    (28, "FSDP124"),
    (29, "FSDP120"),
    (30, "FSDP121"),
    (31, "FSDP130"),
]
SELECT = tuple(f"FSDP{n}" for n in range(120, 132))


def test_lint_reports_each_use_once():
    findings = run(SOURCE.encode(), Settings(select=SELECT)).findings
    assert [(f.line, f.code) for f in findings] == EXPECTED


def test_migrate_fixes_the_certain_uses_and_keeps_the_file_valid():
    outcome = run(SOURCE.encode(), Settings(select=SELECT, fix=True))
    new = outcome.new_source.decode()
    ast.parse(new)
    left = sorted({f.code for f in outcome.findings if not f.fixed})
    assert left == ["FSDP126", "FSDP127", "FSDP128", "FSDP129", "FSDP130"]
    for written in (
        "dcp.save(state, storage_writer=dcp.FileSystemWriter(path))",
        "dcp.load(state, storage_reader=FileSystemReader(path))",
        "from torch.distributed.checkpoint import FileSystemReader",
        "from torch.distributed.device_mesh import init_device_mesh",
        "model.set_gradient_divide_factor(2.0)",
        "checkpoint(model.block, state, use_reentrant=True)",
        "functools.partial(checkpoint, model.block, use_reentrant=True)",
    ):
        assert written in new
    # The private-only DTensorSpec (FSDP130) stays for a human; the public names move.
    assert "from torch.distributed.tensor import DTensor, Shard" in new


def test_unsafe_fixes_write_the_recommended_checkpoint():
    outcome = run(SOURCE.encode(), Settings(select=("FSDP124",), fix=True, unsafe_fixes=True))
    new = outcome.new_source.decode()
    assert new.count("use_reentrant=False") == 2 and "use_reentrant=True" not in new


@pytest.mark.parametrize(
    ("target", "fixed"),
    [
        # dcp.save (2.2; load writes back every value from 2.4), the device mesh (2.2),
        # DTensor (2.5), the new FSDP2 setter (2.8)
        ("2.1", set()),
        ("2.2", {"FSDP120", "FSDP131"}),
        ("2.4", {"FSDP120", "FSDP121", "FSDP131"}),
        ("2.5", {"FSDP120", "FSDP121", "FSDP123", "FSDP131"}),
        ("2.8", {"FSDP120", "FSDP121", "FSDP123", "FSDP125", "FSDP131"}),
    ],
)
def test_fixes_follow_the_target_torch(target, fixed):
    codes = ("FSDP120", "FSDP121", "FSDP123", "FSDP125", "FSDP131")
    outcome = run(
        SOURCE.encode(), Settings(select=codes, fix=True, releases=Releases.parse(torch=target))
    )
    assert {f.code for f in outcome.findings if f.fixed} == fixed
