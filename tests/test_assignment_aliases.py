"""A module-level ``FSDP = FullyShardedDataParallel`` is an alias, as ``import ... as FSDP``.

Lint (the ``ast`` detector), the libcst engine and the whole one-file pipeline (pre-filter
included) must give the same findings, at the places each source names: uses through an
alias bound once are followed; a name bound twice, deleted or declared ``global`` in a
function, or a value that is neither an imported name nor such an alias, is not.
"""

from __future__ import annotations

import pytest

from codemods.astlint.lint import lint
from codemods.batch.runner import process_source
from codemods.engine.run import run
from codemods.settings import Settings

_FSDP = "from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType\n"
_SAVE = (
    "def save(model):\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        return model.state_dict()\n"
)
_SAVED_AT = [(4, 10, "FSDP115")]  # `FSDP.state_dict_type` in _SAVE after two lines

CASES = {
    "followed": (_FSDP + "FSDP = FullyShardedDataParallel\n" + _SAVE, _SAVED_AT),
    "chained": (
        _FSDP + "Sharded = FullyShardedDataParallel\nFSDP = Sharded\n" + _SAVE,
        [(5, 10, "FSDP115")],
    ),
    "module-alias": (
        "import torch.distributed.fsdp as fsdp\n"
        "from torch.distributed.fsdp import StateDictType\n"
        "FSDP = fsdp.FullyShardedDataParallel\n" + _SAVE,
        [(5, 10, "FSDP115")],
    ),
    "rebound": (_FSDP + "FSDP = FullyShardedDataParallel\n" + _SAVE + "FSDP = None\n", []),
    "deleted": (_FSDP + "FSDP = FullyShardedDataParallel\n" + _SAVE + "del FSDP\n", []),
    "global-in-a-function": (
        _FSDP
        + "FSDP = FullyShardedDataParallel\n"
        + _SAVE
        + "def reset():\n    global FSDP\n    FSDP = None\n",
        [],
    ),
    "also-imported": (
        _FSDP + "FSDP = FullyShardedDataParallel\nfrom mine import FSDP\n" + _SAVE,
        [],
    ),
    "a-local-class": (
        _FSDP + "class Mine:\n    pass\nFSDP = Mine\n" + _SAVE,
        [],
    ),
    "a-parameter-shadows-it": (
        _FSDP + "FSDP = FullyShardedDataParallel\n" + _SAVE.replace("(model)", "(model, FSDP)"),
        [],
    ),
    # FairScale's class through an alias: each call is a use its fix must rewrite.
    "fairscale-calls": (
        "from fairscale.nn import FullyShardedDataParallel\n"
        "Sharded = FullyShardedDataParallel\n"
        "model = Sharded(model, mixed_precision=True)\n",
        [(1, 26, "FSDP301"), (2, 11, "FSDP301"), (3, 9, "FSDP301")],
    ),
    # A rename keeps the alias's spelling: its import's finding answers for the use.
    "renamed-policy": (
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
        "policy = default_auto_wrap_policy\n"
        "def build(model, wrap):\n"
        "    return wrap(model, auto_wrap_policy=policy)\n",
        [(1, 41, "FSDP101")],
    ),
}


@pytest.mark.parametrize(("source", "expected"), CASES.values(), ids=CASES.keys())
def test_lint_and_migrate_follow_the_same_aliases(source: str, expected: list):
    settings = Settings()
    found = lint(source.encode(), settings)
    assert found == run(source.encode(), settings).findings
    whole = process_source("x.py", source.encode(), settings).findings
    assert [(f.line, f.col, f.code) for f in whole] == expected
    assert [(f.line, f.col, f.code) for f in found] == expected


def test_the_fix_through_an_alias_keeps_the_alias():
    source = (
        _FSDP
        + "FSDP = FullyShardedDataParallel\n"
        + _SAVE.replace("return model.state_dict()", "state = model.state_dict()\n    return state")
    )
    fixed = run(source.encode(), Settings(fix=True)).new_source
    assert fixed is not None
    assert b"FSDP = FullyShardedDataParallel\n" in fixed
    assert b"state = get_model_state_dict(model" in fixed
    assert b"state_dict_type" not in fixed
