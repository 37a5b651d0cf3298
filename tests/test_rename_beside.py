"""A renamed import whose new name the same statement imports already: one import stays.

``from pytorch_lightning.strategies import FSDPStrategy, DDPFullyShardedNativeStrategy``
(FSDP203 renames the second to the first) became ``import FSDPStrategy, ...,
FSDPStrategy``: valid, but pyflakes reports the second as a redefinition. The old name's
uses now take the name the statement imports, and its alias goes, comments kept; where
the new name means something else at a use, the fix is withheld as before.
"""

from __future__ import annotations

import io

import pytest
from pyflakes.api import check
from pyflakes.reporter import Reporter

from codemods.engine.run import run
from codemods.settings import Settings

SETTINGS = Settings(select=("FSDP203",), fix=True)
MODULE = "from pytorch_lightning.strategies import "


def _flakes(source: str) -> str:
    out = io.StringIO()
    check(source, "migrated.py", Reporter(out, out))
    return out.getvalue()


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            MODULE + "FSDPStrategy, Registry, DDPFullyShardedNativeStrategy\n"
            "s = DDPFullyShardedNativeStrategy()\nt = FSDPStrategy(), Registry\n\n\n"
            "def f():\n    return DDPFullyShardedNativeStrategy\n",
            MODULE + "FSDPStrategy, Registry\n"
            "s = FSDPStrategy()\nt = FSDPStrategy(), Registry\n\n\n"
            "def f():\n    return FSDPStrategy\n",
        ),
        (
            MODULE + "(\n    DDPFullyShardedNativeStrategy,  # old\n    FSDPStrategy,  # new\n)\n"
            "s = DDPFullyShardedNativeStrategy(), FSDPStrategy\n",
            MODULE + "(\n    FSDPStrategy,  # new\n)\ns = FSDPStrategy(), FSDPStrategy\n",
        ),
    ],
)
def test_the_old_name_takes_the_imported_new_one(before, after):
    outcome = run(before.encode(), SETTINGS)
    assert outcome.new_source.decode() == after
    assert [f.fixed for f in outcome.findings] == [True]
    assert _flakes(after) == ""


def test_a_new_name_meaning_something_else_at_a_use_withholds_the_fix():
    before = (
        MODULE + "DDPFullyShardedNativeStrategy, FSDPStrategy\n\n\n"
        "def f():\n    FSDPStrategy = 1\n    return DDPFullyShardedNativeStrategy, FSDPStrategy\n"
    )
    outcome = run(before.encode(), SETTINGS)
    assert outcome.new_source is None
    (finding,) = outcome.findings
    assert not finding.fixed and "would also name something else" in finding.no_fix
