r"""How the engine moves the imports of renamed names, and renames their uses in place.

An imported name is moved in place when its whole statement moves to one module, else
name by name (through :mod:`codemods.engine.imports.adding`, as libcst's ``AddImportsVisitor``
would). Where its local name changes, its uses are renamed in the same pass, quoted
annotations included; where that is not
certain, libcst's ``RenameCommand`` does it after the pass (see
:mod:`codemods.engine.imports.finish`). ``module.Old`` through a module alias becomes ``New``
imported from its own module, or ``module.New`` where the module is the same.
"""

from __future__ import annotations

import re
from typing import Any

from codemods.syntax.cst_nodes import dotted
from codemods.syntax.lazy_libcst import cst


class ImportMoves:
    """The engine's import moves (a mixin of :class:`codemods.engine.transformer.Engine`).

    It uses the engine's ``renames`` (old qualified name to new, decided by the plan),
    ``find``, ``scope``, ``position``, ``need_import``, ``forget``, ``mark`` and
    ``edits``, and keeps the renames of ``Name`` and quoted-annotation nodes it decides
    in the engine's maps.
    """

    renames: dict[str, str]
    _name_renames: dict[int, str]
    _string_renames: dict[int, tuple[str, str]]
    _attribute_renames: dict[int, str]
    _moved_in: set[tuple[int, str, str, str | None]]
    edits: Any

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        """``module.Old`` as ``module.New`` (same module) or ``New`` imported from its own."""
        new = self._attribute_renames.get(id(original_node))
        if new is None:
            return updated_node
        module, _, name = new.rpartition(".")
        old_module = self.find(original_node)[0].rpartition(".")[0]
        if module == old_module:
            # In place: RenameCommand would spell out the full path and drop an
            # `import x as module` alias.
            return updated_node.with_changes(attr=cst.Name(name))
        self.need_import(module, name)
        self.forget(original_node.value)
        return cst.Name(name)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        moved = {}  # id of alias -> new dotted module
        for alias, rule, old in self._imported_names(original_node):
            if old not in self.renames:
                continue
            if alias.asname is not None:
                # `import old.module as m`: only the statement changes, every `m.x` stays;
                # libcst's rename would drop the alias and spell each use out in full.
                rest = "" if rule.flat else dotted(alias.name)[len(old) :]
                moved[id(alias)] = self.renames[old] + rest
            else:  # `import old.module`: libcst's rename moves it and its uses
                self.edits.renames[old] = self.renames[old]
        if not moved:
            return updated_node
        names = [
            alias.with_changes(name=cst.parse_expression(moved[id(original)]))
            if id(original) in moved
            else alias
            for original, alias in zip(original_node.names, updated_node.names)
        ]
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        """Move imports of renamed names, keeping the names the file uses.

        An imported name is moved here: in place when the whole statement moves to one
        module, else name by name. Where its local name changes, its uses are renamed
        too; where that cannot be done with certainty here (see :meth:`_uses_to_rename`),
        libcst's ``RenameCommand`` moves the import and renames the uses.
        """
        moves = {}  # id of alias -> (new module, new name)
        scope = id(self.scope(original_node))
        for alias, rule, old in self._imported_names(original_node):
            if old not in self.renames:
                continue
            full = f"{dotted(original_node.module)}.{dotted(alias.name)}"
            rest = f".{full.rpartition('.')[2]}" if rule.flat else full[len(old) :]
            module, _, name = (self.renames[old] + rest).rpartition(".")
            if alias.asname is not None or name == dotted(alias.name):
                moves[id(alias)] = (module, name)
                continue
            self.edits.local_renames[dotted(alias.name)] = name
            # The new name imported by this statement already (both Lightning strategies
            # become FSDPStrategy): the old name's uses take it, and its alias goes.
            beside = module == dotted(original_node.module) and _plainly_imports(
                original_node, name
            )
            uses = self._uses_to_rename(original_node, dotted(alias.name), name, beside)
            if uses is None:
                self.edits.renames[old] = self.renames[old]
                continue
            if beside:
                self._moved_in.add((scope, module, name, None))
            moves[id(alias)] = (module, name)
            self._name_renames.update((id(use), name) for use in uses)
            for use in uses:
                self.mark(use)
        if not moves:
            return updated_node
        pairs = list(zip(original_node.names, updated_node.names))
        # The statement's module itself moves (FSDP122's `_shard.checkpoint`): its other
        # names move with it, or the deprecated module would stay imported for them.
        whole = self.renames.get(dotted(original_node.module) or "")
        if whole is not None:
            for original, _ in pairs:
                name = dotted(original.name)
                if id(original) not in moves and name and "." not in name:
                    moves[id(original)] = (whole, name)
        if len(moves) == len(pairs) and len({m for m, _ in moves.values()}) == 1:
            (module,) = {m for m, _ in moves.values()}
            names = []
            for original, alias in pairs:
                name = moves[id(original)][1]
                # Two old names can become one (both Lightning strategies: FSDPStrategy);
                # in one scope only: identical imports in two functions each stay.
                key = (scope, module, name, original.asname and dotted(original.asname.name))
                if key not in self._moved_in:
                    self._moved_in.add(key)
                    names.append(alias.with_changes(name=cst.Name(name)))
            if not names:
                return cst.RemoveFromParent()
            if len(names) < len(pairs):
                names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(module=cst.parse_expression(module), names=names)
        here = dotted(original_node.module)
        kept = []
        for original, alias in pairs:
            if id(original) not in moves:
                kept.append(alias)
                continue
            module, name = moves[id(original)]
            local = original.asname.name.value if original.asname else name
            key = (scope, module, name, original.asname and dotted(original.asname.name))
            if module == here and key not in self._moved_in:
                # Renamed within its own module: in place, keeping its line and comment.
                self._moved_in.add(key)
                kept.append(alias.with_changes(name=cst.Name(name)))
                continue
            if module != here:
                self.need_import(module, name, None if local == name else local)
        if not kept:
            return cst.RemoveFromParent()
        last = updated_node.names[-1]
        if kept[-1] is not last:  # the last name went: the new last one ends as it did
            kept[-1] = kept[-1].with_changes(comma=last.comma)
        return updated_node.with_changes(names=kept)

    def _uses_to_rename(
        self, node: cst.ImportFrom, local: str, new: str, beside: bool = False
    ) -> list[cst.Name] | None:
        """The uses of the name ``local`` that ``node`` imports, if this visit can rename them.

        It can where the name is bound once in its scope, every use is a plain name that
        comes after the import (so it has not been visited yet) or an annotation that is
        the name in quotes, and ``new`` is unbound wherever it is used (``beside``: bound
        there only by ``node`` itself, which imports it). Otherwise (a longer annotation
        in quotes, a rebinding, a use above a late import), None.
        """
        scope = self.scope(node)
        if scope is None or (new in scope and not _bound_by(scope, new, node, beside)):
            return None
        assignments = list(scope.assignments[local])
        if len(assignments) != 1 or assignments[0].node is not node:
            return None
        start = self.position(node).start
        uses, quoted = [], []
        for access in assignments[0].references:
            use = access.node
            if isinstance(use, cst.SimpleString) and "\\" not in use.raw_value:
                quoted.append(use)  # an annotation in quotes: "Old", "list[Old]"
                continue
            if not isinstance(use, cst.Name):
                return None
            where = self.position(use).start
            if (where.line, where.column) <= (start.line, start.column):
                return None
            seen = self.get_metadata(cst.metadata.ScopeProvider, use, scope)
            if new in seen and not _bound_by(seen, new, node, beside):
                return None
            uses.append(use)
        self._string_renames.update((id(use), (local, new)) for use in quoted)
        for use in quoted:
            self.mark(use)
        return uses

    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.SimpleString:
        rename = self._string_renames.get(id(original_node))
        if rename is None:
            return updated_node
        old, new = rename
        # An annotation in quotes is code: its names are whole words (no escapes here).
        inner = re.sub(rf"\b{re.escape(old)}\b", new, updated_node.raw_value)
        quote = updated_node.quote
        return updated_node.with_changes(value=f"{updated_node.prefix}{quote}{inner}{quote}")


def _plainly_imports(node: cst.ImportFrom, name: str) -> bool:
    """Whether ``node`` imports ``name`` under its own name (no ``as``)."""
    if isinstance(node.names, cst.ImportStar):
        return False
    return any(a.asname is None and dotted(a.name) == name for a in node.names)


def _bound_by(scope: Any, name: str, node: cst.ImportFrom, beside: bool) -> bool:
    """Whether ``beside`` holds and ``node`` is the only binding of ``name`` ``scope`` sees."""
    return beside and all(a.node is node for a in scope[name])
