"""FSDP207: the hook rename leaves a module that reaches the old hook by name to a human.

A base class asking ``is_overridden("configure_sharded_model", self, LightningModule)``
(pytorch-lightning-GPT's shape) builds the model in ``__init__`` once no class defines
the old name: the rename would change what runs, so it is withheld, saying why.
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

MODULE = """\
from lightning import LightningModule
from lightning_utilities.core.overrides import is_overridden


class Base(LightningModule):
    def __init__(self):
        super().__init__()
        {check}


class Sharded(Base):
    def configure_sharded_model(self):
        self.net = None
"""
RELEASES = Releases.parse(torch="2.4..", lightning="2.1..")


@pytest.mark.parametrize(
    ("check", "fixed"),
    [
        ('self.eager = not is_overridden("configure_sharded_model", self, LightningModule)', False),
        ("self.hook = getattr(self, 'configure_sharded_model', None)", False),
        ("self.configure_sharded_model()", False),
        ('self.name = "configure_sharded_model is the old hook"', True),  # not the name
        ("self.eager = True", True),
    ],
)
def test_a_hook_reached_by_name_is_not_renamed(check, fixed):
    source = MODULE.format(check=check).encode()
    migrated = run(source, Settings(releases=RELEASES, fix=True))
    linted = run(source, Settings(releases=RELEASES))
    assert [(f.code, f.fixable) for f in linted.findings] == [("FSDP207", fixed)]
    assert [(f.code, f.fixed) for f in migrated.findings] == [("FSDP207", fixed)]
    if fixed:
        assert b"def configure_model(self):" in migrated.new_source
    else:
        assert migrated.new_source is None
        reason = "reaches `configure_sharded_model` by name"
        assert reason in linted.findings[0].no_fix and reason in migrated.findings[0].no_fix
