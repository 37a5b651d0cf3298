"""What the engine answers about the original module, and which old name a node is.

Qualified names come from libcst's scopes on demand, parents and the nodes of each class
from one walk of the module's fields (:mod:`codemods.syntax.cst_tree`), positions from
:mod:`codemods.engine.metadata.positions`; each is computed the first time a behaviour
asks. :meth:`Lookups.find` and :meth:`Lookups.imported` say which old name of the
registry a reference or an import is (:mod:`codemods.rules.index`).
"""

from __future__ import annotations

from typing import Any

from libcst.metadata import CodeRange, QualifiedNameSource, Scope, ScopeProvider

from codemods.engine.metadata.positions import Positions, positions
from codemods.registry import Rule
from codemods.registry.names import lightning_strategy
from codemods.rules.index import INDEX
from codemods.rules.plan import Found, keeps_spelling, new_name
from codemods.rules.plan_aliases import answered_by_alias
from codemods.screen.noqa import Suppressions
from codemods.syntax.cst_nodes import alias_assignments, dotted, subclass_aliases
from codemods.syntax.cst_tree import parent_map
from codemods.syntax.gates import fallback_regions, inside_fallback
from codemods.syntax.lazy_libcst import cst


class Lookups:
    """The engine's answers about the original module.

    A mixin of :class:`codemods.engine.transformer.Engine`: it uses the engine's
    ``module``, ``suppressions`` and scope metadata (``get_metadata``), and keeps what it
    computes in the engine's caches.
    """

    module: cst.Module
    suppressions: Suppressions
    _qualified: dict[int, set[str]]
    _parents: dict[cst.CSTNode, cst.CSTNode]
    _whole: bool
    _by_type: dict[type, list[cst.CSTNode]]
    _positions: Any

    _aliases: dict[str, set[str]] | None = None
    _alias_targets: set[int] = set()

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The fully qualified names ``node`` may refer to (libcst's scope resolution).

        A module-level alias by assignment is followed (see :meth:`_find_aliases`).
        """
        names = self._qualified.get(id(node))
        if names is None:
            if self._aliases is None:
                self._find_aliases()
            scope = self.get_metadata(ScopeProvider, node, None)
            found = scope.get_qualified_names_for(node) if scope is not None else ()
            names = set()
            local = QualifiedNameSource.LOCAL
            for q in found:  # the alias's own target is the binding, as in `ast`
                root, dot, rest = q.name.partition(".")
                targets = self._aliases.get(root) if q.source is local else None
                if targets and id(node) not in self._alias_targets:
                    names |= {t + dot + rest for t in targets}
                else:
                    names.add(q.name)
            self._qualified[id(node)] = names
        return names

    def _find_aliases(self) -> None:
        """Module-level ``FSDP = FullyShardedDataParallel``: an alias, as ``import ... as``.

        The ``ast`` detector's rule (``Names._find_aliases``): the module binds the name
        only there (no other binding, no ``del``), and only imports (or another such
        alias) bind the value's first part; uses after it refer to what the value refers to.
        A Lightning strategy's subclass that keeps its constructor is followed too.
        """
        self._aliases = {}
        candidates: list = alias_assignments(self.module)
        classes = subclass_aliases(self.module)
        self._alias_targets = {id(target) for target, _ in candidates}
        self._alias_targets |= {id(node.name) for node, _ in classes}
        candidates += classes
        scope = self.get_metadata(ScopeProvider, self.module, None) if candidates else None
        if scope is None:
            return
        deleted = {name for statement in self.nodes(cst.Del) for name in _names(statement.target)}
        imports = (cst.Import, cst.ImportFrom)
        for target, value in candidates:
            subclass = isinstance(target, cst.ClassDef)
            name = target.name.value if subclass else target.value
            root = dotted(value).partition(".")[0]  # type: ignore[union-attr]
            own = scope.assignments[name]
            if len(own) != 1 or next(iter(own)).node is not target or name in deleted:
                continue
            bound = scope.assignments[root]
            imported = bool(bound) and all(isinstance(a.node, imports) for a in bound)
            if not imported and root not in self._aliases:
                continue
            targets = self.qualified(value)
            if subclass and not all(map(lightning_strategy, targets)):
                continue  # only a strategy's subclass is followed, as in `ast`
            if targets:
                self._aliases[name] = targets

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of an original node (None for the module)."""
        found = self._parents.get(node)
        if found is None and not self._whole and node is not self.module:
            self._walk_whole()
            found = self._parents.get(node)
        return found

    def nodes(self, kind: type) -> list[cst.CSTNode]:
        """Every node of class ``kind`` in the original module, in no set order."""
        if not self._whole:
            self._walk_whole()
        return self._by_type.get(kind, [])

    def _walk_whole(self) -> None:
        """Every node's parent, and the nodes by class, from one walk of the module."""
        self._parents = parent_map(self.module, self._by_type)
        self._whole = True

    def position(self, node: cst.CSTNode) -> CodeRange:
        """The syntactic range of an original node (libcst's ``PositionProvider``'s)."""
        if self._positions is None:
            self._positions = positions(self.module)
        return self._positions[node]

    def code_for(self, new: cst.Module) -> str:
        """``new.code`` for a module this visit made, reusing the positions' code generation.

        See :meth:`codemods.engine.metadata.positions.Positions.code_for`: the statements the visit
        passed over are not generated again.
        """
        if isinstance(self._positions, Positions):
            return self._positions.code_for(new)
        return new.code

    def scope(self, node: cst.CSTNode) -> Scope | None:
        """The scope an original node is in."""
        return self.get_metadata(ScopeProvider, node, None)

    def bindings(self, name: str) -> list[str | None]:
        """What binds ``name`` in any scope: an import's qualified name, else None."""
        from codemods.rules.plan_shadows import import_binding

        found: list[str | None] = []
        scopes = {id(s): s for s in self.metadata[ScopeProvider].values() if s is not None}
        for scope in scopes.values():
            for assignment in scope.assignments[name]:
                node = getattr(assignment, "node", None)
                if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
                    module = cst.Module([]).code_for_node(node.module) if node.module else None
                    for alias in node.names:
                        bound = alias.evaluated_alias or alias.evaluated_name
                        if bound == name:
                            found.append(
                                import_binding(
                                    module,
                                    len(node.relative),
                                    alias.evaluated_name,
                                    alias.evaluated_alias,
                                )
                            )
                elif isinstance(node, cst.Import):
                    for alias in node.names:
                        if alias.evaluated_alias == name:
                            found.append(alias.evaluated_name)
                        elif alias.evaluated_name.partition(".")[0] == name:
                            found.append(name)
                else:
                    found.append(None)
        return found

    def class_set(
        self, original: cst.BaseExpression, updated: cst.BaseExpression | None = None
    ) -> cst.BaseExpression | None:
        """``{...}`` for a class, or a list/tuple/set display of classes; else None.

        ``original`` is looked up (metadata lives on original nodes); ``updated`` is
        what goes into the new code.
        """
        value = original if updated is None else updated
        if isinstance(value, cst.Set):
            return value
        if isinstance(value, (cst.List, cst.Tuple)) and value.elements:
            return cst.Set(elements=value.elements)
        if isinstance(value, (cst.Name, cst.Attribute)) and self._names_a_class(original):
            return cst.Set(elements=[cst.Element(value=value)])
        return None

    def _names_a_class(self, node: cst.BaseExpression) -> bool:
        # Timid: only a name bound by a class statement or an import can be a class here.
        scope = self.scope(node)
        name = dotted(node)
        if scope is None or name is None:
            return False
        assignments = scope[name.split(".")[0]]  # resolved through enclosing scopes
        kinds = (cst.ClassDef, cst.Import, cst.ImportFrom)
        return bool(assignments) and all(
            isinstance(getattr(a, "node", None), kinds) for a in assignments
        )

    def silenced(self, node: cst.CSTNode, code: str) -> bool:
        """Whether a ``noqa`` comment silences rule ``code`` at ``node``."""
        line = self.position(node).start.line
        return self.suppressions.silences(line, code)

    def find(self, node: cst.BaseExpression) -> Found | None:
        """The old name, rule and qualified name ``node`` refers to, if any.

        A name bound to an old API on one path and to something else on another
        (``try: import new / except ImportError: import old``) is not a use of the old API.
        """
        found = None
        parent = self.parent(node)
        namespace = isinstance(parent, cst.Attribute) and parent.value is node  # `node.x`
        for qualified in sorted(self.qualified(node)):
            match = INDEX.reference(qualified, module=namespace)
            if match is None:
                return None
            found = found or (match[0], match[1], qualified)
        return found

    def answered_by_import(self, node: cst.BaseExpression, rule: Rule) -> bool:
        """Whether a use of ``rule``'s old name is its import's finding, not one of its own.

        As ruff's import rules do: where every binding of the use's first name is an
        import in this file that brings in an old name of ``rule`` (reported there), and
        the rename leaves the name the use spells unchanged (``from old import A`` ->
        ``from new import A``, or an ``as`` alias), the finding is at the import. A use
        whose text the fix changes (``import old`` then ``old.f()``), or of a name with
        no rename, is still reported.
        """
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        scope = self.scope(root) if isinstance(root, cst.Name) else None
        if scope is None:
            return False
        referents = [r for access in scope.accesses[root] for r in access.referents]
        bare = self._bare(node) if root is node else None
        targets = (self._aliases or {}).get(root.value)
        if targets and referents and all(r.scope is self.scope(self.module) for r in referents):
            return answered_by_alias(targets, rule, bare)  # the module's alias
        return bool(referents) and all(
            isinstance(r.node, (cst.Import, cst.ImportFrom))
            # an import left alone (a fallback, a gate's older branch) has no finding
            and not inside_fallback(r.node, self.parent, fallback_regions)
            and any(
                found is rule and keeps_spelling(rule, old, bare)
                for local, found, old in self._bound_names(r.node)
                if local == root.value
            )
            for r in referents
        )

    def _bare(self, node: cst.Name) -> str | None:
        """The keyword ``node`` is passed as (``""``: none) where it is used as it is.

        None where it is called, given arguments through ``partial`` or looked into.
        """
        parent = self.parent(node)
        if isinstance(parent, (cst.Call, cst.Decorator)):
            return None  # libcst wraps a call's arguments in `Arg`: this is the callee
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return None
        if isinstance(parent, cst.Arg):
            call = self.parent(parent)
            if (
                isinstance(call, cst.Call)
                and call.args[0] is parent
                and dotted(call.func).rpartition(".")[2] == "partial"
            ):
                return None
            return parent.keyword.value if parent.keyword is not None else ""
        return ""

    def _bound_names(self, node: cst.Import | cst.ImportFrom) -> list[tuple]:
        """``(local name, rule, old name)`` per alias.

        ``import old.mod`` (no alias) is left out: its uses spell the module.
        """
        found = []
        for alias, rule, old in self._imported_names(node):
            if alias.asname is not None:
                found.append((dotted(alias.asname.name), rule, old))
            elif isinstance(node, cst.ImportFrom):
                found.append((dotted(alias.name), rule, old))
        return found

    def imported(self, node: cst.Import | cst.ImportFrom) -> list[tuple[str, Rule]]:
        """The old names (with their rules) an import brings in."""
        return [(old, rule) for _, rule, old in self._imported_names(node)]

    new_name = staticmethod(new_name)

    @staticmethod
    def _imported_names(
        node: cst.Import | cst.ImportFrom,
    ) -> list[tuple[cst.ImportAlias, Rule, str]]:
        """The aliases of an import that bring in an old name, with its rule and name."""
        if isinstance(node, cst.ImportFrom):
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                return []
            prefix = f"{dotted(node.module)}."
        else:
            prefix = ""
        found = []
        for alias in node.names:
            name = prefix + (dotted(alias.name) or "")
            match = INDEX.reference(name, module=isinstance(node, cst.Import))
            if match is not None:
                found.append((alias, match[1], match[0]))
        return found


def _names(target: cst.BaseExpression) -> list[str]:
    """The names a ``del`` target unbinds (``del a, (b, c)``; not ``del a.b``)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _names(element.value)]
    return []
