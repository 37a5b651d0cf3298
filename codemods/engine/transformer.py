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
rewrite registered inside (:meth:`Engine.cold`, :mod:`codemods.engine.cold`). Its
answers about the module (names, parents, positions, scopes): :mod:`codemods.engine.lookups`.
"""

from __future__ import annotations

from typing import Any, Callable

from libcst.metadata import ScopeProvider

from codemods.engine.cold import ColdStatements
from codemods.engine.imports.finish import Edits
from codemods.engine.imports.local import LocalImports
from codemods.engine.imports.moves import ImportMoves
from codemods.engine.lookups import Lookups
from codemods.engine.spellings import Spellings
from codemods.findings import Finding, no_fix
from codemods.registry import REGISTRY, Rule
from codemods.rules.api import PARTIAL, Site
from codemods.rules.index import INDEX, fix_for
from codemods.rules.plan import Plan, Planner
from codemods.rules.tested_uses import cst_detail
from codemods.rules.unread_imports import UNREAD_IMPORT, unread_imports
from codemods.screen.noqa import Suppressions
from codemods.settings import Settings
from codemods.syntax.cst_dispatch import CachedDispatch
from codemods.syntax.gates import fallback_regions, is_fallback
from codemods.syntax.lazy_libcst import cst
from codemods.syntax.spans import Lines, Spans


class Engine(Lookups, ColdStatements, ImportMoves, LocalImports, Spellings, CachedDispatch):
    """Find (and, with ``settings.fix``, rewrite) every registry finding in a module.

    A plain transformer (:func:`codemods.engine.run.run`; hooks found once per class,
    :mod:`codemods.syntax.cst_dispatch`): libcst's matcher-decorated command base inspects
    every attribute of each instance, which cost more than the whole visit of a small file.
    """

    # Qualified names come from the scopes on demand (see qualified): libcst's
    # QualifiedNameProvider would visit every node of the module to offer the same; parents
    # (codemods.syntax.cst_tree) and positions (codemods.engine.metadata.positions) come on
    # demand too, for a fraction of libcst's providers' cost (benchmarks/README.md).
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
        self.text: str | None = None  # the module's code, as the pass read it (run.py)
        self.renames: dict[str, str] = {}  # old qualified name -> new, where this run renames
        self._plan = Plan()
        self._fallback_depth = 0
        self._older: set[int] = set()  # the older branches of the version gates met
        self._name_renames: dict[int, str] = {}  # id of a Name node -> its new value
        self._moved_in: set[tuple[int, str, str, str | None]] = set()  # imports moved in place
        # id of an annotation in quotes -> (old name, new name)
        self._string_renames: dict[int, tuple[str, str]] = {}
        self._attribute_renames: dict[int, str] = {}  # id of an Attribute -> its new name
        # id of a reference whose call-site fix applies -> (rule, old name)
        self._call_sites: dict[int, tuple[Rule, str]] = {}
        self._qualified: dict[int, set[str]] = {}  # id of a node -> its qualified names
        self._inside_reported: set[int] = set()  # parts of an `Old.attr` reported as a whole
        self._before: dict[int, list[cst.CSTNode]] = {}  # id of a statement line -> inserted
        # id of a statement line -> how many statements were put before it (block hooks)
        self.inserted: dict[int, int] = {}
        # id of an original node -> its new one, or what makes it of the updated node
        self._replacements: dict[int, Any] = {}
        # The parents of the nodes the plan's walk reached, or (_whole) of every node;
        # the walk of every node also gives the nodes by class.
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._whole = False
        self._by_type: dict[type, list[cst.CSTNode]] = {}
        self._positions: Any = None
        # The line spans the ast detector saw something in (None: visit everything), the ids
        # of the nodes rewritten and of their ancestors, the statements passed over (cold).
        self._hot = None if hot is None else Lines(hot)
        self._cold: dict[int, bool] = {}  # id of a statement -> whether its lines are cold
        self._dirty: set[int] = set()
        self._passed: set[int] = set()

    # What behaviours ask and tell ---------------------------------------------------

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
        why_not: str | None = None,
    ) -> bool:
        """Record a finding; return whether this run applies its fix.

        ``fixable_here`` is False where the rule has a fix in general but not at this
        site (a form the fix does not handle with certainty). ``quiet``: the finding
        was recorded already (at an enclosing node); only say whether the fix applies.
        ``unsafe_here``: the fix may change behaviour at this site though the rule's fix
        is safe elsewhere, so it applies only with ``--unsafe-fixes``. ``detail`` is
        added to the rule's message for this site; ``withheld`` says why a fix this run
        would apply is not written here (the finding then says so and returns False);
        ``why_not`` why the fix is not certain here (the finding's ``no_fix``, where the
        releases the code runs on do not already say why).
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
                no_fix=no_fix(self.settings, rule, fixable, why_not, explained=bool(detail)),
            )
        )
        return applies and not withheld

    def target_at_least(self, release: str) -> bool:
        """Whether every torch release the code must run on is ``release`` or later."""
        return self.settings.releases.at_least(release)

    def need_import(self, module: str, name: str | None, asname: str | None = None) -> None:
        """Queue an import the new code needs, added after this pass (``import_adding``)."""
        wanted = self.spelled_import(module, name, asname)
        if wanted is not None:  # None: the module's own binding is that object
            self.edits.imports_to_add.append(wanted)

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
        self.inserted[id(original_node)] = len(before)
        # The line's own leading comments and blank lines go before what is inserted
        # (and before the inserted statement's own comment, where it has one).
        self.note_new(cst.FlattenSentinel(before), None)
        leading = [*updated_node.leading_lines, *before[0].leading_lines]
        first = before[0].with_changes(leading_lines=leading)
        rest = [*before[1:], updated_node.with_changes(leading_lines=())]
        return cst.FlattenSentinel([first, *rest])

    def forget(self, node: cst.BaseExpression) -> None:
        """Queue the import behind ``node`` (alias included) for removal if now unused."""
        self.edits.imports_to_forget.append(node)

    def rename_name(self, node: cst.Name, new: str) -> None:
        """Give the original ``Name`` node ``node`` the value ``new`` as the visit leaves it."""
        self._name_renames[id(node)] = new
        self.mark(node)

    # Traversal -------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self.module = node
        self._planner = Planner(self)
        self._plan = self._planner.plan(node, self._parents)
        for behaviour in INDEX.modules:
            behaviour.module(self, node)

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._fallback_depth += self._starts_fallback(node)
        if self.cold(node):
            self._passed.add(id(node))
            return False
        return super().on_visit(node)

    def _starts_fallback(self, node: cst.CSTNode) -> bool:
        """Whether code in ``node`` is left alone (a fallback, a gate's older branch).

        A version gate that says which branch is newer leaves only the other alone: its
        older branch is noted here, and counted when the visit enters it.
        """
        regions = fallback_regions(node)
        if regions and regions[0] is not node:
            self._older.update(id(region) for region in regions)
        return bool(regions) and regions[0] is node or id(node) in self._older

    def _ends_fallback(self, node: cst.CSTNode) -> bool:
        """:meth:`_starts_fallback` as the visit leaves ``node``."""
        return id(node) in self._older or is_fallback(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        if self._passed and id(original_node) in self._passed:
            self._passed.discard(id(original_node))
            self._fallback_depth -= self._ends_fallback(original_node)
            return updated_node
        result = super().on_leave(original_node, updated_node)
        self._fallback_depth -= self._ends_fallback(original_node)
        if self._replacements:
            new = self._replacements.pop(id(original_node), result)
            kept, result = result, new(result) if callable(new) else new
            self.note_new(result, kept)
        return self.respell(result) if type(original_node) is cst.Module else result

    # References and imports ------------------------------------------------------------

    def _renaming(self, node: cst.CSTNode, rule: Rule, quiet: bool = False) -> bool:
        """Report a use or import of ``rule``'s old name; whether this run renames it."""
        if fix_for(rule) is None:  # reported only; a call rule may still fix its call
            self.report(node, rule, quiet=quiet, detail=cst_detail(rule, node, self.parent))
            return False
        fixable = rule.code in self._plan.fixable
        why = self._plan.why_not.get(rule.code)
        applies = self.report(node, rule, fixable_here=fixable, quiet=quiet, why_not=why)
        return applies and rule.code in self._plan.applies

    def _reference(self, node: cst.BaseExpression) -> bool:
        found = self.find(node)
        if found is None:
            return True
        old, rule, qualified = found
        # Reported already: at an enclosing node, or at the import that binds its name.
        quiet = id(node) in self._inside_reported or self.answered_by_import(node, rule)
        renaming = self._renaming(node, rule, quiet=quiet)
        if qualified != old:
            # `Old.attr` (or `Old(...).attr`): reported here; the part that names `Old` is
            # renamed when visited, and not reported again.
            value = node.value if isinstance(node, cst.Attribute) else None
            while value is not None:
                self._inside_reported.add(id(value))
                if isinstance(value, cst.Call):
                    value = value.func
                else:
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

    def _visit_import(self, node: cst.Import | cst.ImportFrom) -> bool:
        said: set[str] = set()  # one finding per rule and statement, at its first name
        names = self._imported_names(node)
        unread = unread_imports([(rule, self._read(node, alias)) for alias, rule, _ in names])
        for alias, rule, old in names:
            quiet = rule.code in said
            if rule.code in unread and rule.code in self._plan.fixable:
                self.report(alias, rule, fixable_here=False, quiet=quiet, why_not=UNREAD_IMPORT)
            elif self._renaming(alias, rule, quiet=quiet):
                self.renames[old] = self.new_name(rule, old)
            said.add(rule.code)
        return False

    def _read(self, node: cst.Import | cst.ImportFrom, alias: cst.ImportAlias) -> bool | None:
        """Whether the file reads the name ``alias`` binds (None: not told for ``import a.b``)."""
        scope = self.scope(node)
        if scope is None or (alias.asname is None and isinstance(node, cst.Import)):
            return None
        bound = alias.asname.name if alias.asname is not None else alias.name
        local = bound.value if isinstance(bound, cst.Name) else None
        if local is None:
            return None
        return any(a.references for a in scope.assignments[local] if a.node is node)

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
                    new = behaviour.call(self, original_node, updated_node)
                    updated_node = self.note_new(new, updated_node)
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
        return self.note_new(updated.with_changes(func=func, args=translation.args), updated)

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
        return (
            updated_node if new is None else self.note_new(updated_node.with_changes(value=new), 0)
        )
