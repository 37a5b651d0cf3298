r"""The one engine behind lint and migrate: find every registry finding, fix the selected ones.

A single libcst pass over a module resolves names by what they refer to (libcst's
scopes: aliases and ``import x as y`` are followed, a local name that only looks like
an old one is not) and hands what it meets to the rules' behaviours
(:mod:`codemods.rules.index`): the uses of old names, the calls and ``partial``\\ s of old
callables, function definitions and classes. Each behaviour reports through
:meth:`Engine.report` and, in fix mode, returns its rewrite. Renames are decided for the
whole file first (:mod:`codemods.rules.plan`); the engine moves their imports and, where a
local name itself changes, renames its uses in the same pass. Import additions and
removals are queued (:class:`codemods.engine.imports.finish.Edits`) and applied after the pass.
Nothing inside a ``try: ... except ImportError:`` block or a version-gated ``if`` is
reported or touched: such code deliberately bridges API generations.

Given the lines the ``ast`` detector saw something in (``hot``, from
:mod:`codemods.engine.pruning`), the visit enters only the statements on them or with a
rewrite registered inside (:meth:`Engine.cold`).
"""

from __future__ import annotations

from typing import Any, Callable

from libcst.metadata import CodeRange, Scope, ScopeProvider
from packaging.version import Version

from codemods.engine.imports.finish import Edits
from codemods.engine.imports.moves import ImportMoves
from codemods.engine.metadata.positions import Positions, positions
from codemods.findings import Finding
from codemods.registry import REGISTRY, Rule
from codemods.rules.api import PARTIAL, Site
from codemods.rules.index import INDEX, fix_for
from codemods.rules.plan import Found, Plan, Planner, new_name
from codemods.screen.noqa import Suppressions
from codemods.settings import Settings
from codemods.syntax.cst_nodes import dotted
from codemods.syntax.cst_tree import parent_map
from codemods.syntax.gates import is_fallback
from codemods.syntax.lazy_libcst import cst
from codemods.syntax.spans import Lines, Spans

#: The statements :meth:`Engine.cold` may pass over.
STATEMENTS = frozenset(
    {
        cst.SimpleStatementLine,
        cst.FunctionDef,
        cst.ClassDef,
        cst.If,
        cst.For,
        cst.While,
        cst.Try,
        cst.TryStar,
        cst.With,
        cst.Match,
    }
)


class Engine(ImportMoves, cst.CSTTransformer):
    """Find (and, with ``settings.fix``, rewrite) every registry finding in a module.

    A plain transformer (see :func:`codemods.engine.run.run`): libcst's matcher-decorated
    command base inspects every attribute of each instance, which cost more than the
    whole visit of a small file.
    """

    # Qualified names come from the scopes on demand (see qualified): libcst's
    # QualifiedNameProvider would visit every node of the module to offer the same;
    # parents come from a walk of the module's fields (codemods.syntax.cst_tree) and
    # positions from codemods.engine.metadata.positions, on demand: both cost a fraction of
    # libcst's providers (benchmarks/README.md).
    METADATA_DEPENDENCIES = (ScopeProvider,)

    def __init__(
        self,
        settings: Settings,
        suppressions: Suppressions | None = None,
        hot: Spans | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.suppressions = suppressions or Suppressions()
        self.findings: list[Finding] = []
        self.edits = Edits()
        self.scratch: dict[str, Any] = {}
        self.renames: dict[str, str] = {}  # old qualified name -> new, where this run renames
        self._plan = Plan()
        self._fallback_depth = 0
        self._name_renames: dict[int, str] = {}  # id of a Name node -> its new value
        self._moved_in: set[tuple[str, str, str | None]] = set()  # imports moved in place
        # id of an annotation in quotes -> (old name, new name)
        self._string_renames: dict[int, tuple[str, str]] = {}
        self._attribute_renames: dict[int, str] = {}  # id of an Attribute -> its new name
        # id of a reference whose call-site fix applies -> (rule, old name)
        self._call_sites: dict[int, tuple[Rule, str]] = {}
        self._qualified: dict[int, set[str]] = {}  # id of a node -> its qualified names
        self._inside_reported: set[int] = set()  # parts of an `Old.attr` reported as a whole
        self._before: dict[int, list[cst.CSTNode]] = {}  # id of a statement line -> inserted
        # id of an original node -> its new one, or what makes it of the updated node
        self._replacements: dict[int, Any] = {}
        # The parents of the nodes the plan's walk reached, or (_whole) of every node;
        # the walk of every node also gives the nodes by class.
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._whole = False
        self._by_type: dict[type, list[cst.CSTNode]] = {}
        self._positions: Any = None
        # The line spans the ast detector saw something in (None: visit everything), the
        # ids of the nodes with a rewrite registered and of their ancestors, and the
        # statements the visit passed over (see cold).
        self._hot = None if hot is None else Lines(hot)
        self._cold: dict[int, bool] = {}  # id of a statement -> whether its lines are cold
        self._dirty: set[int] = set()
        self._passed: set[int] = set()

    # What behaviours ask and tell ---------------------------------------------------

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The fully qualified names ``node`` may refer to (libcst's scope resolution)."""
        names = self._qualified.get(id(node))
        if names is None:
            scope = self.get_metadata(ScopeProvider, node, None)
            found = scope.get_qualified_names_for(node) if scope is not None else ()
            names = self._qualified[id(node)] = {q.name for q in found}
        return names

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

    def applies(self, code: str) -> bool:
        """Whether rule ``code``'s fix is part of this run (of a fixing run, when linting)."""
        rule = REGISTRY[code]
        return self.settings.applies_fix(rule) if self.settings.fix else self.settings.can_fix(rule)

    def report(
        self,
        node: cst.CSTNode,
        rule: Rule,
        fixable_here: bool = True,
        quiet: bool = False,
        unsafe_here: bool = False,
        detail: str | None = None,
        withheld: str | None = None,
    ) -> bool:
        """Record a finding; return whether this run applies its fix.

        ``fixable_here`` is False where the rule has a fix in general but not at this
        site (a form the fix does not handle with certainty). ``quiet``: the finding
        was recorded already (at an enclosing node); only say whether the fix applies.
        ``unsafe_here``: the fix may change behaviour at this site though the rule's fix
        is safe elsewhere, so it applies only with ``--unsafe-fixes``. ``detail`` is
        added to the rule's message for this site; ``withheld`` says why a fix this run
        would apply is not written here (the finding then says so and returns False).
        """
        if (
            self._fallback_depth
            or not self.settings.enabled(rule)
            or rule.code in self._plan.superseded
        ):
            return False
        position = self.position(node).start
        if self.suppressions.silences(position.line, rule.code):
            return False
        fixable = fixable_here and self.settings.can_fix(rule)
        applies = self.settings.fix and self.settings.fixes(rule, fixable, unsafe_here)
        if quiet:
            return applies and not withheld
        self.findings.append(
            Finding(
                position.line,
                position.column + 1,
                rule.code,
                f"{rule.message} ({detail})" if detail else rule.message,
                fixable,
                applies and not withheld,
                unsafe=fixable and unsafe_here,
                withheld=withheld if applies else None,
            )
        )
        return applies and not withheld

    def target_at_least(self, release: str) -> bool:
        """Whether the torch the code must run on (``--target-torch``) is ``release`` or later."""
        target = self.settings.target_torch
        return target is None or Version(target) >= Version(release)

    def need_import(self, module: str, name: str | None, asname: str | None = None) -> None:
        """Queue an import the new code needs, added after this pass (``import_adding``)."""
        self.edits.imports_to_add.append((module, name, asname))

    def replace(self, node: cst.CSTNode, new: cst.CSTNode | Callable[[Any], Any]) -> None:
        """Put ``new`` in place of the original node ``node`` (not left yet) as the visit leaves.

        ``new`` may be a function of the updated node (which holds the rewrites made
        inside it), returning what takes its place.
        """
        self._replacements[id(node)] = new
        self.mark(node)

    def insert_before(self, line: cst.SimpleStatementLine, statements: list[cst.CSTNode]) -> None:
        """Put ``statements`` before the original statement line ``line`` as the visit leaves it."""
        self._before.setdefault(id(line), []).extend(statements)
        self.mark(line)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Any:
        before = self._before.pop(id(original_node), None)
        if not before:
            return updated_node
        # The line's own leading comments and blank lines go before what is inserted.
        first = before[0].with_changes(leading_lines=updated_node.leading_lines)
        rest = [*before[1:], updated_node.with_changes(leading_lines=())]
        return cst.FlattenSentinel([first, *rest])

    def forget(self, node: cst.BaseExpression) -> None:
        """Queue the import behind ``node`` (alias included) for removal if now unused."""
        self.edits.imports_to_forget.append(node)

    def rename_name(self, node: cst.Name, new: str) -> None:
        """Give the original ``Name`` node ``node`` the value ``new`` as the visit leaves it."""
        self._name_renames[id(node)] = new
        self.mark(node)

    def mark(self, node: cst.CSTNode) -> None:
        """Make sure the visit reaches the original node ``node``: a rewrite waits there."""
        if self._hot is None:
            return
        current: cst.CSTNode | None = node
        while current is not None and id(current) not in self._dirty:
            self._dirty.add(id(current))
            current = self.parent(current)

    def cold(self, node: cst.CSTNode) -> bool:
        """Whether the visit may pass over the original node ``node`` without entering it.

        That is a statement the ``ast`` detector saw nothing in (no use or import of an
        old name, no call a rule inspects, nothing a rule reported on: the parts
        :mod:`codemods.engine.pruning` keeps for the same reason) with no rewrite registered in
        it. Every hook of the visit acts on such a part or on a registered node, so
        passing over the rest changes nothing, and saves most of a long function's
        visit where one line of it is to be fixed.
        """
        if type(node) not in STATEMENTS or self._hot is None or id(node) in self._dirty:
            return False
        cold = self._cold.get(id(node))
        if cold is None:
            where = self.position(node)
            first = where.start.line
            decorators = getattr(node, "decorators", None)
            if decorators:  # a definition's range starts at `def` or `class`
                first = self.position(decorators[0]).start.line
            cold = self._cold[id(node)] = not self._hot.meet(first, where.end.line)
        return cold

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

    def imported(self, node: cst.Import | cst.ImportFrom) -> list[tuple[str, Rule]]:
        """The old names (with their rules) an import brings in."""
        return [(old, rule) for _, rule, old in self._imported_names(node)]

    new_name = staticmethod(new_name)

    # Traversal -------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self.module = node
        self._planner = Planner(self)
        self._plan = self._planner.plan(node, self._parents)
        for behaviour in INDEX.modules:
            behaviour.module(self, node)

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._fallback_depth += is_fallback(node)
        if self.cold(node):
            self._passed.add(id(node))
            return False
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        if self._passed and id(original_node) in self._passed:
            self._passed.discard(id(original_node))
            self._fallback_depth -= is_fallback(original_node)
            return updated_node
        result = super().on_leave(original_node, updated_node)
        self._fallback_depth -= is_fallback(original_node)
        if self._replacements:
            new = self._replacements.pop(id(original_node), result)
            result = new(result) if callable(new) else new
        return result

    # References and imports ------------------------------------------------------------

    def _renaming(self, node: cst.CSTNode, rule: Rule, quiet: bool = False) -> bool:
        """Report a use or import of ``rule``'s old name; whether this run renames it."""
        if fix_for(rule) is None:  # reported only; a call rule may still fix its call
            self.report(node, rule, quiet=quiet)
            return False
        fixable = rule.code in self._plan.fixable
        applies = self.report(node, rule, fixable_here=fixable, quiet=quiet)
        return applies and rule.code in self._plan.applies

    def _reference(self, node: cst.BaseExpression) -> bool:
        found = self.find(node)
        if found is None:
            return True
        old, rule, qualified = found
        renaming = self._renaming(node, rule, quiet=id(node) in self._inside_reported)
        if qualified != old:
            # `Old.attr`: reported here; the part that names `Old` is renamed when visited.
            value = node.value if isinstance(node, cst.Attribute) else None
            while value is not None:
                self._inside_reported.add(id(value))
                value = value.value if isinstance(value, cst.Attribute) else None
            return True
        if renaming:
            self._call_sites[id(node)] = (rule, old)
            if isinstance(node, cst.Attribute):
                self._attribute_renames[id(node)] = self.new_name(rule, old)
        return False  # reported: do not report its parts again

    def visit_Name(self, node: cst.Name) -> bool:
        return self._reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self._reference(node)

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

    def _visit_import(self, node: cst.Import | cst.ImportFrom) -> bool:
        for alias, rule, old in self._imported_names(node):
            if self._renaming(alias, rule):
                self.renames[old] = self.new_name(rule, old)
        return False

    visit_Import = _visit_import
    visit_ImportFrom = _visit_import

    # Calls ---------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        names = self.qualified(original_node.func)
        if PARTIAL in names:
            if original_node.args and original_node.args[0].keyword is None:
                target = self.qualified(original_node.args[0].value)
                for behaviour in {b for n in target for b in INDEX.partials.get(n, ())}:
                    updated_node = behaviour.partial(self, original_node, updated_node)
                    if not isinstance(updated_node, cst.Call):
                        return updated_node
        else:
            for name in names:
                for behaviour in INDEX.calls.get(name, ()):
                    updated_node = behaviour.call(self, original_node, updated_node)
        return self._call_site(original_node, updated_node)

    def _call_site(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """Translate the arguments of a call whose callee a call-site fix renames."""
        partial = False
        site = self._call_sites.get(id(original.func))
        if site is None and original.args:
            site = self._call_sites.get(id(original.args[0].value))
            partial = site is not None and fix_for(site[0]).partials
            partial = partial and self._planner.partial_of(original.args[0].value) is original
            if not partial:
                return updated
        if site is None:
            return updated
        rule, old = site
        translation = fix_for(rule).translate(Site(self, old, original, updated, partial))
        if translation is None:  # the plan said certain: a translator disagreeing is a bug
            raise AssertionError(f"{rule.code}: no translation for a planned call")
        for module, name in translation.imports:
            self.need_import(module, name)
        func = translation.func if translation.func is not None else updated.func
        return updated.with_changes(func=func, args=translation.args)

    # Definitions and classes -----------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for behaviour in INDEX.definitions:
            behaviour.function(self, node)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        for behaviour in INDEX.definitions:
            behaviour.function(self, node)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        for behaviour in INDEX.classes:
            updated_node = behaviour.class_def(self, original_node, updated_node)
        return updated_node

    def _block(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        body = updated.body
        for behaviour in INDEX.blocks:
            body = behaviour.block(self, original.body, body)
        return updated if body is updated.body else updated.with_changes(body=body)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return self._block(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._block(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self._name_renames.get(id(original_node))
        return updated_node if new is None else updated_node.with_changes(value=new)
