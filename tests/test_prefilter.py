"""The pre-filter skips files only where no rule can find anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods.engine.run import run
from codemods.registry import REGISTRY
from codemods.screen.prefilter import may_have_findings, names_in_code, rule_filter, screen
from codemods.settings import Settings
from tests.migrate_fixtures import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    **{f"fixture:{name}": fixture.source.encode() for name, fixture in FIXTURES.items()},
    **{f"example:{p.name}": p.read_bytes() for p in (ROOT / "examples" / "legacy").glob("*.py")},
    **{f"registry:{rule.code}": rule.example.before.encode() for rule in REGISTRY},
    **{
        f"registry:{rule.code}-case-{index}": case.before.encode()
        for rule in REGISTRY
        for index, case in enumerate(rule.cases)
    },
}


@pytest.fixture(scope="module")
def codes_found() -> dict[str, set[str]]:
    """The codes the engine finds in each source, every rule selected."""
    every_rule = Settings(select=("FSDP",))
    return {name: {f.code for f in run(src, every_rule).findings} for name, src in SOURCES.items()}


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_no_source_with_a_finding_is_filtered_out(rule, codes_found):
    found = [name for name, codes in codes_found.items() if rule.code in codes]
    assert found, f"no fixture, example or registry example shows {rule.code}"
    for name in found:  # neither the text test nor the ast scan rules it out
        assert _worth_parsing(SOURCES[name], Settings(select=(rule.code,))), name
        # nor the text test on its code alone (comments and plain strings blanked)
        assert names_in_code(SOURCES[name], Settings(select=(rule.code,))), name


@pytest.mark.parametrize(
    "source",
    [
        b"import torch\nx = torch.ones(2)\n",
        b"precision = 16\nstrategy = 'ddp'\n",
        b"from mylib import wrap\nwrap(x)\n",
        b"trainer = Trainer(precision=32)\n",
        # an old name's last part alone, without an import of its package
        b"import torch\ndef default_auto_wrap_policy(m, r, n):\n    return True\n",
        # the package imported, but none of its old names spelled
        b"from compat.fsdp2 import fully_shard_by_policy\nmodel = fully_shard_by_policy(m)\n",
        # a root spelled, but not where an import could name it
        b"import os  # compat with torch 1.x\nx = 'lightning'  # FSDPStrategy\n",
        # a module named like its old member, imported for something else
        b"from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl\n",
        # an old name's parts, but the last one belongs to another module (torch.distributed)
        b"from torch.distributed._composable import contract\nimport torch.distributed.fsdp\n",
        # prose and calls that say "from" or "import" before the words: no import statement
        b"import torch.utils\n# loaded from checkpoint (see utils)\ncheckpoint(model)\n",
        b"import torch\nm = importlib.import_module('torch.distributed.fsdp.wrap')\n"
        b"m.default_auto_wrap_policy\n",
        # an old name bare in a comment, where no import binds it
        b"from lightning.pytorch import LightningDataModule\n# Trainer(precision=16)\n",
        # prose that begins "from ...": no line says `import`
        b'"""Wrappers.\n\nfrom torch.distributed.fsdp.wrap: default_auto_wrap_policy\n"""\n',
        # Lightning's old name spelled where only torch is imported (FSDP118 has both)
        b"import torch\nfrom mylib import strategies\n"
        b"strategies.FSDPStrategy(sharding_strategy='NO_SHARD')\n",
    ],
)
def test_code_that_cannot_have_findings_is_skipped(source):
    assert not may_have_findings(source, Settings())
    assert run(source, Settings()).findings == []


@pytest.mark.parametrize(
    "source",
    [
        b"import os, torch.distributed._composable.fsdp as c\nc.fully_shard(m)\n",
        b"import os; from compat.fsdp import wrap as w\nw.ModuleWrapPolicy({B})\n",
        b"from fairscale.nn import (\n    FullyShardedDataParallel as F,\n)\n",
        b"\xef\xbb\xbffrom torch.distributed.fsdp.wrap import default_auto_wrap_policy\n",
        b"from \\\n    torch.distributed.fsdp.wrap import default_auto_wrap_policy\n",
        b"import torch.distributed.algorithms._checkpoint.checkpoint_wrapper as cw\n"
        b"cw.checkpoint_wrapper(m)\n",
        b"x = 1; from compat.fsdp import FSDP\nFSDP(m, cpu_offload=True)\n",
        b"import torch.distributed._composable as c\nc.fsdp.fully_shard(m)\n",
        b"from torch.distributed._composable import (\n    fsdp,\n)\nfsdp.fully_shard(m)\n",
        b"try: import torch.distributed.fsdp.wrap as w\nexcept ImportError: raise\n"
        b"w.default_auto_wrap_policy\n",
        b"if True:\tfrom torch.distributed.fsdp.wrap import default_auto_wrap_policy\n",
        b"x = 1\rfrom torch.distributed.fsdp.wrap import default_auto_wrap_policy\r",
        b"from torch.distributed.fsdp \\\n    import (\n    FullyShardedDataParallel as S)\n"
        b"S.state_dict_type(m, t)\n",
        # a chain broken after its dot inside brackets, a comment between
        b"from torch.distributed.fsdp import wrap as w\n"
        b"policy = (w.  # the old name\n    default_auto_wrap_policy)\n",
    ],
)
def test_every_way_of_importing_is_seen(source):
    assert may_have_findings(source, Settings()) and names_in_code(source, Settings())
    assert run(source, Settings()).findings


@pytest.mark.parametrize(
    "source",
    [
        # the words and an import are there, but no old name is imported or built
        b"import torch\n# see torch.distributed._composable.fsdp\nx = 'fsdp'\n",
        b"from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl\n"
        b"name = 'checkpoint_wrapper'\n",
        b"from lightning.pytorch import LightningDataModule\n"
        b"label = 'pytorch.Trainer(precision=16)'\n",
    ],
)
def test_the_ast_scan_rules_out_mentions_that_are_not_uses(source):
    assert may_have_findings(source, Settings()) and not _worth_parsing(source, Settings())
    assert run(source, Settings()).findings == []


def test_a_file_the_ast_scan_cannot_parse_goes_on_to_libcst():
    assert _worth_parsing(
        b"print 'py2'\nfrom fairscale.nn import FullyShardedDataParallel\n", Settings()
    )


def test_a_users_policy_needs_no_import():
    assert rule_filter(REGISTRY["FSDP102"]).admits(b"def p(m, recurse, unwrapped_params): ...")


@pytest.mark.parametrize(
    "source",
    [
        b"from torch.distributed.fsdp import (\n    FullyShardedDataParallel as Sharded,\n)\n"
        b"with Sharded.state_dict_type(model, kind):\n    pass\n",
        # a comment in the list, with a parenthesis of its own
        b"from torch.distributed.fsdp import (  # the wrapper (FSDP1)\n"
        b"    ShardingStrategy,\n    FullyShardedDataParallel as Sharded)\n"
        b"Sharded.set_state_dict_type(model, kind)\n",
    ],
)
def test_a_class_imported_in_a_parenthesized_list_under_an_alias_is_seen(source):
    # The class's name is on no import line, and the alias is all the code spells
    # (not compat's `FSDP.state_dict_type`, which FSDP115 also looks for): FSDP115
    # alone, so that no other rule's spelling lets the file through.
    only = Settings(select=("FSDP115",))
    assert may_have_findings(source, only)
    assert [f.code for f in run(source, only).findings] == ["FSDP115"]


def _worth_parsing(source: bytes, settings: Settings) -> bool:
    """Whether the pre-filter's two stages let ``source`` through."""
    return screen(source, settings) is not None
