"""The libcst codemod command that runs the engine when it fixes code.

Only fixing needs ``libcst.codemod`` (queued import changes, ``RenameCommand``); the
lint imports none of it.
"""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext
from libcst.codemod.commands.rename import RenameCommand

from codemods.engine import Migrator
from codemods.noqa import Suppressions
from codemods.settings import Settings


class MigrateCommand(CodemodCommand):
    """The codemod around :class:`Migrator`: metadata, renames, queued import changes."""

    DESCRIPTION = "Report and rewrite legacy FSDP, Lightning and FairScale spellings."

    def __init__(self, context: CodemodContext, migrator: Migrator) -> None:
        super().__init__(context)
        self.migrator = migrator

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Visit with the engine, then run the renames it left to ``RenameCommand``."""
        self.migrator.context = self.context  # it holds the metadata wrapper now
        tree = self.context.wrapper.visit(self.migrator)
        for old, new in sorted(self.migrator._command_renames.items()):
            # A context of its own: it applies its own import changes, and ours are
            # applied once, after this returns, instead of again after each rename.
            own = CodemodContext(filename=self.context.filename)
            tree = RenameCommand(own, old, new).transform_module(tree)
        return tree


def migrate(
    module: cst.Module, settings: Settings, suppressions: Suppressions, filename: str
) -> tuple[Migrator, cst.Module]:
    """Run the engine over ``module`` with fixes; return it and the new module."""
    context = CodemodContext(filename=filename)
    migrator = Migrator(context, settings, suppressions)
    return migrator, MigrateCommand(context, migrator).transform_module(module)
