"""The import changes a fixing pass queued, applied after it with libcst's codemod tools.

Fixes queue what they need (:class:`Edits`) while the engine visits the module; only a
run that queued something loads ``libcst.codemod`` (about 0.25 s, most of it its
matchers). The order is that of a libcst ``CodemodCommand``: renames, then added
imports, then the removal of imports left unused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper


@dataclass
class Edits:
    """What a fixing pass leaves to libcst's codemod tools.

    Attributes:
        renames: Old qualified name to new, for libcst's ``RenameCommand`` (where the
            engine could not rename every use itself).
        imports_to_add: ``(module, name, asname)`` imports the new code needs.
        imports_to_forget: Nodes of the visited module whose import a fix may have left
            unused (removed only where nothing else uses it).
        local_renames: Imported local names the pass renamed (old to new), which the
            rewritten module must no longer use (see :mod:`codemods.verify`).
    """

    renames: dict[str, str] = field(default_factory=dict)
    imports_to_add: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    imports_to_forget: list[cst.BaseExpression] = field(default_factory=list)
    local_renames: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        """Whether anything is left for the codemod tools (``local_renames`` is not)."""
        return bool(self.renames or self.imports_to_add or self.imports_to_forget)


def finish(edits: Edits, wrapper: MetadataWrapper, tree: cst.Module, filename: str) -> cst.Module:
    """Apply ``edits``, queued while visiting ``wrapper``'s module, to ``tree``."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.commands.rename import RenameCommand
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    for old, new in sorted(edits.renames.items()):
        # A context of its own: it applies its own import changes, and ours are applied
        # once, below, instead of again after each rename.
        tree = RenameCommand(CodemodContext(filename=filename), old, new).transform_module(tree)
    # The removals are looked up in the module the engine visited, as during its pass.
    context = CodemodContext(filename=filename, wrapper=wrapper)
    for module, name, asname in edits.imports_to_add:
        AddImportsVisitor.add_needed_import(context, module, name, asname=asname)
    for node in edits.imports_to_forget:
        RemoveImportsVisitor.remove_unused_import_by_node(context, node)
    for visitor in (AddImportsVisitor, RemoveImportsVisitor):
        if visitor.CONTEXT_KEY in context.scratch:
            tree = visitor(context).transform_module(tree)
    return tree
