"""FSDP215 follows a name bound once to a removed strategy string, as FSDP204 does.

``strategy = "ddp_sharded"`` before the call, or a test parameter that
``pytest.mark.parametrize`` fills: reported at the call by both detectors, nothing
rewritten (no Lightning 2.x string means the same). A name bound twice, or to another
value, is not.
"""

from __future__ import annotations

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SETTINGS = Settings(select=("FSDP215",), fix=True, releases=Releases.parse(lightning="2.1.."))
HEAD = "import pytest\nfrom pytorch_lightning import Trainer\n\n\n"


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        (
            '@pytest.mark.parametrize("strategy", ["ddp", "ddp_sharded"])\n'
            "def test_fit(strategy):\n    Trainer(strategy=strategy)\n",
            [7],
        ),
        ('def fit():\n    strategy = "ddp_sharded_spawn"\n    Trainer(strategy=strategy)\n', [7]),
        ('def fit():\n    strategy = "ddp"\n    Trainer(strategy=strategy)\n', []),
        (
            'def fit(flag):\n    strategy = "ddp_sharded"\n    if flag:\n        strategy = "ddp"\n'
            "    Trainer(strategy=strategy)\n",
            [],
        ),
    ],
    ids=["parametrized", "local", "another-value", "bound-twice"],
)
def test_a_bound_removed_strategy_is_reported(body, lines):
    source = (HEAD + body).encode()
    outcome = run(source, SETTINGS)
    assert [f.line for f in outcome.findings] == lines
    assert all(not f.fixable for f in outcome.findings) and outcome.new_source is None
    assert (
        lint(source, SETTINGS.replace(fix=False))
        == run(source, SETTINGS.replace(fix=False)).findings
    )
