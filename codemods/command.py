"""What fixes leave to libcst's codemod tools, applied after the engine's pass.

The engine queues import changes and the renames it cannot make itself; only a run
that queued some loads ``libcst.codemod`` (about 0.25 s, most of it its matchers).
The order is that of a libcst ``CodemodCommand``: renames, then added imports, then
the removal of imports left unused.
"""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.commands.rename import RenameCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from codemods.engine import Migrator


def finish(
    migrator: Migrator, wrapper: MetadataWrapper, tree: cst.Module, filename: str
) -> cst.Module:
    """Apply what ``migrator`` queued while it visited ``wrapper``'s module, to ``tree``."""
    for old, new in sorted(migrator.command_renames.items()):
        # A context of its own: it applies its own import changes, and ours are applied
        # once, below, instead of again after each rename.
        tree = RenameCommand(CodemodContext(filename=filename), old, new).transform_module(tree)
    # The removals are looked up in the module the engine visited, as during its pass.
    context = CodemodContext(filename=filename, wrapper=wrapper)
    for module, name, asname in migrator.imports_to_add:
        AddImportsVisitor.add_needed_import(context, module, name, asname=asname)
    for node in migrator.imports_to_forget:
        RemoveImportsVisitor.remove_unused_import_by_node(context, node)
    for visitor in (AddImportsVisitor, RemoveImportsVisitor):
        if visitor.CONTEXT_KEY in context.scratch:
            tree = visitor(context).transform_module(tree)
    return tree
