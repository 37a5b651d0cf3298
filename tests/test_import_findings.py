"""One finding per legacy import, at the import: its uses are reported only where they change.

As ruff's import rules do: a plain rename whose fix is at the import (FSDP107, FSDP123,
FSDP214, ...) reports the import and not every later use of the name it binds, where
all the fix changes in the use is the import's rename (the same name, or a from-import's
name renamed with it: ``default_auto_wrap_policy``). A use that spells the old module
(``import lightning_lite`` then ``lightning_lite.Fabric()``), a call the fix rewrites
(FairScale's FSDP with its arguments), a use of a name with no rename or a manual one,
and a use whose import a fallback or a version gate leaves alone (that import has no
finding) stays a finding; a use the fix says means the same (``isinstance(m, FSDP)`` for
compat's FSDP, ``enable_wrap(wrapper_cls=FSDP)`` for FairScale's) is the import's. Both
detectors (libcst's, which fixes, and the ``ast`` one lint uses) agree.
"""

from __future__ import annotations

import textwrap

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.rules.unread_imports import UNREAD_IMPORT
from codemods.settings import Settings

CASES = {
    "from-import, uses unchanged": (
        """
        from torch.distributed._tensor import DTensor, Shard
        weight = DTensor.from_local(local, mesh, [Shard(0)])
        bias = DTensor.from_local(local_bias, mesh, [Shard(0)])
        """,
        [(1, "FSDP123")],  # one finding per rule and import statement
    ),
    "module alias, uses unchanged": (
        """
        import torch.distributed._composable.fsdp as composable
        composable.fully_shard(block)
        composable.fully_shard(model)
        """,
        [(1, "FSDP107")],
    ),
    "a name bound in a function, used there": (
        """
        def shard(model):
            from torch.distributed._composable.fsdp import fully_shard
            for block in model.blocks:
                fully_shard(block)
            return fully_shard(model)
        """,
        [(2, "FSDP107")],
    ),
    "a renamed name: its uses are renamed by the import's fix": (
        """
        import functools
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import default_auto_wrap_policy
        small = functools.partial(default_auto_wrap_policy, min_num_params=1_000)
        model = FSDP(model, auto_wrap_policy=default_auto_wrap_policy)
        """,
        [(3, "FSDP101")],
    ),
    "an import a version gate leaves alone has no finding: its uses keep theirs": (
        """
        import functools
        import torch
        if torch.__version__.startswith("1.11"):
            from torch.distributed.fsdp.wrap import default_auto_wrap_policy
        def policy():
            return functools.partial(default_auto_wrap_policy, min_num_params=100)
        """,
        [(6, "FSDP101")],
    ),
    "plain module import: every use spells the old module": (
        """
        import lightning_lite
        fabric = lightning_lite.Fabric()
        """,
        [(1, "FSDP214"), (2, "FSDP214")],
    ),
    "a use of the old name spelled out in full": (
        """
        import torch
        from torch.distributed._tensor import DTensor
        x = torch.distributed._tensor.DTensor.from_local(t, mesh)
        """,
        [(2, "FSDP123"), (3, "FSDP123")],
    ),
    "a fix that rewrites the calls too: each call is its own": (
        """
        from compat.fsdp import FullyShardedDataParallel
        model = FullyShardedDataParallel(model, auto_wrap_policy={Block})
        """,
        [(1, "FSDP112"), (2, "FSDP112")],
    ),
    "a use passed as the keyword the fix follows is the import's": (
        """
        from fairscale.nn import FullyShardedDataParallel as FSDP, enable_wrap
        with enable_wrap(wrapper_cls=FSDP):
            model = FSDP(model, reshard_after_forward=False)
        assert isinstance(model, FSDP)
        """,
        # FairScale's class tested is for a human: models may come from elsewhere
        [(1, "FSDP301"), (1, "FSDP302"), (2, "FSDP302"), (3, "FSDP301"), (4, "FSDP301")],
    ),
    "a use the fix says means the same is the import's": (
        """
        from compat.fsdp import FullyShardedDataParallel as FSDP
        model = FSDP(model, auto_wrap_policy={Block})
        sharded = isinstance(model, FSDP)
        classes = (FSDP,)
        """,
        [(1, "FSDP112"), (2, "FSDP112")],
    ),
    "a use given arguments through partial is its own": (
        """
        import functools
        from fairscale.nn import FullyShardedDataParallel as FSDP
        wrapper = functools.partial(FSDP, reshard_after_forward=False)
        """,
        [(2, "FSDP301"), (3, "FSDP301")],
    ),
    "a use of a name with no public home stays a finding": (
        """
        from torch.distributed._tensor.placement_types import DTensorSpec
        spec = DTensorSpec
        """,
        [(1, "FSDP130"), (2, "FSDP130")],
    ),
    "a use of a removed name stays a finding": (
        """
        from fairscale.nn import auto_wrap
        wrapping = auto_wrap
        """,
        [(1, "FSDP304"), (2, "FSDP304")],
    ),
}


def _lines(findings) -> list[tuple[int, str]]:
    return sorted((f.line, f.code) for f in findings)


@pytest.mark.parametrize("name", list(CASES))
def test_uses_that_read_the_same_are_the_imports_finding(name: str):
    source, expected = CASES[name]
    code = textwrap.dedent(source).lstrip().encode()
    assert _lines(run(code, Settings()).findings) == expected
    assert _lines(lint(code, Settings())) == expected


@pytest.mark.parametrize("third", ["fully_shard", "fully_shard, MixedPrecisionPolicy"])
def test_identical_function_local_imports_each_move_in_place(third: str):
    """Three test methods each import FSDP2 from its first home: each import moves, none
    is deleted as a duplicate of another function's (seen in a real test file)."""
    source = textwrap.dedent(
        f"""\
        class TestFSDP2:
            def test_one(self):
                from torch.distributed._composable.fsdp import fully_shard
                fully_shard(a)

            def test_two(self):
                from torch.distributed._composable.fsdp import fully_shard
                fully_shard(b)

            def test_three(self):
                from torch.distributed._composable.fsdp import {third}
                fully_shard(c)
        """
    )
    outcome = run(source.encode(), Settings(fix=True))
    new = outcome.new_source.decode()
    identical = 3 if third == "fully_shard" else 2
    assert new.count("from torch.distributed.fsdp import fully_shard\n") == identical
    assert f"from torch.distributed.fsdp import {third}\n" in new
    assert "_composable" not in new
    assert [(f.line, f.code, f.fixed) for f in outcome.findings] == [
        (3, "FSDP107", True),
        (7, "FSDP107", True),
        (11, "FSDP107", True),
    ]


def test_a_moved_module_takes_all_its_names_with_it():
    """``_shard.checkpoint`` moves to ``checkpoint``: the names another rule keeps (the
    deprecated save/load functions, whose calls it cannot translate here) move too, so
    the deprecated module is not left imported for them (seen in a real checkpoint helper)."""
    source = textwrap.dedent(
        """\
        from torch.distributed._shard.checkpoint import FileSystemReader, load_state_dict


        def load(state, path):
            load_state_dict(state, FileSystemReader(path), no_dist=True)
        """
    )
    outcome = run(source.encode(), Settings(fix=True))
    new = outcome.new_source.decode()
    assert "_shard" not in new
    assert "from torch.distributed.checkpoint import FileSystemReader, load_state_dict\n" in new
    assert {f.code for f in outcome.findings if not f.fixed} == {"FSDP121"}  # still reported


def test_a_fairscale_import_nothing_reads_is_reported_not_swapped():
    """An unread FairScale import keeps its finding, with why; a read one is swapped."""
    source = textwrap.dedent(
        """\
        from fairscale.nn import FullyShardedDataParallel as FSDP
        from fairscale.optim.grad_scaler import ShardedGradScaler

        scaler = ShardedGradScaler()
        """
    ).encode()
    settings = Settings(fix=True, unsafe_fixes=True)
    outcome = run(source, settings)
    why = {f.code: f.no_fix for f in outcome.findings}
    assert why["FSDP301"] == UNREAD_IMPORT and why["FSDP309"] is None
    assert {f.code: f.no_fix for f in lint(source, Settings())} == why
    new = outcome.new_source.decode()
    assert "from fairscale.nn import FullyShardedDataParallel as FSDP\n" in new
    assert "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler" in new
