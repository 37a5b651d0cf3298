"""The ``ast`` detector's pass: what the libcst engine visits, in its order, then its plan.

One walk collects the uses and imports of old names, the calls, definitions and
classes (each with whether it sits in a fallback block, see
:func:`codemods.syntax.gates.ast_fallback_regions`), in the order the engine meets them (calls and
classes as it leaves them). The plan (:mod:`codemods.rules.plan`'s rules: which renames are
certain about every use) is settled from those, then each is reported and each
behaviour's ``ast`` half is called.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from codemods.astlint.detector import Detector, Undecided
from codemods.astlint.hooks import hook
from codemods.astlint.reach import names_nothing, reached, relevant
from codemods.astlint.scopes import dotted
from codemods.registry import REGISTRY, ChangeKind, Rule
from codemods.rules.api import PARTIAL, AstSite, Behaviour, unchanged
from codemods.rules.index import INDEX, Behaviours, behaviour_for, fix_for
from codemods.rules.plan import Planner, new_name, why_not, why_not_settled
from codemods.rules.tested_uses import ast_detail
from codemods.rules.unread_imports import UNREAD_IMPORT, unread_imports
from codemods.screen.prefilter import rule_filter
from codemods.screen.text_scan import Scan
from codemods.syntax.ast_nodes import tree_index
from codemods.syntax.gates import ast_fallback_regions


class Walk:
    """One module's pass (see the module docstring)."""

    def __init__(self, detector: Detector) -> None:
        self.d = detector
        index = tree_index(detector.tree)
        self.below = index.below
        self.events: list[tuple] = []
        self.why_not: dict[str, str] = {}  # see Plan.why_not
        self.admitted: dict[str, bool] = {}  # rule code -> kept by _admitted
        self.scan = Scan.of(detector.source)  # the pre-filter's: its answers are known
        self.definers = self._admitted(INDEX.definitions)
        self.definitions = bool(self.definers)
        self._classes: list[Behaviour] | None = None  # _admitted(INDEX.classes), once asked
        self.callers: dict[str, list[Behaviour]] = {}  # a callee's enabled behaviours
        names = detector.names
        self.relevant = relevant(names.imported_roots, names.aliases)
        kinds = [ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda] if self.definitions else []
        self.live = reached(detector.tree, index.by_type, names.parents, self.relevant, kinds)

    def run(self) -> None:
        """Walk the module, settle the plan, report."""
        self._no_other_hooks()
        for child in self.d.tree.body:
            if child in self.live:
                self._visit(child, False)
        fixable = self._plan()
        d = self.d
        for event in self.events:
            kind, node, fallback = event[0], event[1], event[2]
            d.fallback = fallback
            if kind == "import":
                said: set[str] = set()  # one finding per rule and statement (as libcst's)
                names = d.imported(node)
                unread = unread_imports([(rule, self._read(node, a)) for a, rule, _ in names])
                for alias, rule, _ in names:
                    quiet = rule.code in said
                    if rule.code in unread and rule.code in fixable:
                        d.report(alias, rule, False, quiet=quiet, why_not=UNREAD_IMPORT)
                    else:
                        self._renaming(alias, rule, fixable, quiet=quiet)
                    said.add(rule.code)
            elif kind == "ref":
                rule = event[3][1]
                self._renaming(node, rule, fixable, d.answered_by_import(node, rule))
            elif kind == "call":
                self._call(node)
            elif kind == "function":
                for behaviour in self.definers:
                    hook(behaviour, "ast_function")(d, node)
            else:
                if self._classes is None:
                    self._classes = self._admitted(INDEX.classes)
                for behaviour in self._classes:
                    hook(behaviour, "ast_class_def")(d, node)

    def _no_other_hooks(self) -> None:
        """Refuse a file where a behaviour with a hook this pass does not call may report.

        Statement-list hooks (``blocks``) are not called: one whose ``ast_block`` says
        it reports nothing in a run that fixes nothing is left out; where another such
        rule is enabled and its text pre-filter admits the file, libcst decides it
        (elsewhere the rule finds nothing, so lint loses nothing by not calling it).
        """
        d = self.d
        for rule in INDEX.blocks.rules:
            if not d.settings.enabled(rule) or not rule_filter(rule).admits(d.source, self.scan):
                continue
            behaviour = behaviour_for(rule)
            try:
                hook(behaviour, "ast_block")
            except Undecided:
                raise Undecided(
                    f"{rule.code}'s statement-list hook has no ast half", rule.code
                ) from None

    def _visit(self, node: ast.AST, fallback: bool) -> None:
        kind = type(node)
        if kind is ast.Name or kind is ast.Attribute:
            base = node
            while type(base) is ast.Attribute:
                base = base.value  # type: ignore[attr-defined]
            if type(base) is not ast.Name:  # `f().x.y`: only the call can name anything
                self._visit(base, fallback)  # live: the chain is, and its base holds why
            elif base.id in self.relevant:  # type: ignore[attr-defined]
                if kind is ast.Attribute and names_nothing(self.d.names, base.id, node):  # type: ignore[attr-defined]
                    return
                found = self.d.find(node)
                if found is not None:
                    self.events.append(("ref", node, fallback, found))
                elif kind is ast.Attribute:
                    self._visit(node.value, fallback)  # type: ignore[attr-defined]
            return
        if kind is ast.Import or kind is ast.ImportFrom:
            self.events.append(("import", node, fallback))
            return
        live = self.live  # the subtrees the walk acts in (codemods.astlint.reach)
        if self.definitions and kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            self.events.append(("function", node, fallback))
        if kind is ast.Try or kind is ast.If:
            regions = set(ast_fallback_regions(node, self.d.segment))
            fallback = fallback or node in regions
            for child in self.below[node]:
                if child in live:
                    self._visit(child, fallback or child in regions)
        else:  # most nodes: no set of regions made and asked for each child
            for child in self.below[node]:
                if child in live:
                    self._visit(child, fallback)
        if kind is ast.Call:
            self.events.append(("call", node, fallback))
        elif kind is ast.ClassDef:
            self.events.append(("class", node, fallback))

    # Reporting -------------------------------------------------------------------------

    def _read(self, node: ast.Import | ast.ImportFrom, alias: ast.alias) -> bool | None:
        """``Engine._read``: whether the file reads the name ``alias`` binds."""
        if alias.asname is None and type(node) is ast.Import:
            return None
        names = self.d.names
        scope = names.scope_of[node]
        try:
            uses = names.references(scope, alias.asname or alias.name)
        except Undecided:
            return None  # also bound otherwise in its scope: the plan decides
        start = (node.lineno, node.col_offset)
        # as libcst: a use in the import's own scope before it does not read it
        return any(
            names.scope_of[use] is not scope or (use.lineno, use.col_offset) > start for use in uses
        )

    def _renaming(self, node: ast.AST, rule: Rule, fixable: set[str], quiet: bool = False) -> None:
        if fix_for(rule) is None:
            self.d.report(node, rule, quiet=quiet, detail=ast_detail(rule, node, self.d.parent))
        else:
            why = self.why_not.get(rule.code)
            self.d.report(node, rule, fixable_here=rule.code in fixable, quiet=quiet, why_not=why)

    def _call(self, call: ast.Call) -> None:
        d = self.d
        root = dotted(call.func)
        head = root.partition(".")[0] if root is not None else None
        if head not in self.relevant:
            return  # calls of local names or builtins: no behaviour looks at them
        if type(call.func) is ast.Attribute and names_nothing(d.names, head, call.func):  # type: ignore[arg-type]
            return  # `torch.zeros(...)`: passed over by _visit too, and no rule calls it
        names = d.qualified(call.func)
        if PARTIAL in names:
            first = _first(call)
            if first is not None and not (type(first) is ast.keyword and first.arg):
                value = first.value if type(first) in (ast.Starred, ast.keyword) else first
                target = d.qualified(value)  # type: ignore[arg-type]
                found = {b for n in target for b in INDEX.partials.get(n, ())}
                for behaviour in self._enabled(found):
                    hook(behaviour, "ast_partial")(d, call)
        else:
            callers = self.callers
            for name in names:
                found = callers.get(name)
                if found is None:
                    found = callers[name] = self._enabled(INDEX.calls.get(name, ()))
                for behaviour in found:
                    hook(behaviour, "ast_call")(d, call)

    def _enabled(self, behaviours: Iterable[Behaviour]) -> list[Behaviour]:
        """The behaviours whose rule this run reports.

        A behaviour reports only its own rule and lint fixes nothing, so a disabled
        rule's hook would find nothing here; not calling it keeps an opt-in rule with
        no ``ast`` half (FSDP401) from sending every file it could match to libcst.
        """
        enabled = self.d.settings.enabled
        if isinstance(behaviours, Behaviours):
            return behaviours.where(enabled)  # a disabled rule's module is not loaded
        return [b for b in behaviours if enabled(b.rule)]

    def _admitted(self, behaviours: Iterable[Behaviour]) -> list[Behaviour]:
        """:meth:`_enabled`, less the rules whose text pre-filter refuses this file.

        A definition or class hook looks at every function or class, so its module
        would load for every file; a rule whose filter refuses the file finds nothing
        in it. A hook rule is kept: its classes may derive from another file's.
        """
        d, scan = self.d, self.scan
        cache, source = self.admitted, self.d.source

        def wanted(rule: Rule) -> bool:
            if rule.code not in cache:
                cache[rule.code] = d.settings.enabled(rule) and (
                    rule.kind is ChangeKind.METHOD_RENAME or rule_filter(rule).admits(source, scan)
                )
            return cache[rule.code]

        if isinstance(behaviours, Behaviours):
            return behaviours.where(wanted)
        return [b for b in behaviours if wanted(b.rule)]

    # The plan --------------------------------------------------------------------------

    def _plan(self) -> set[str]:
        """The renaming rules whose fix is certain here (``Plan.fixable``)."""
        d = self.d
        olds: dict[str, set[str]] = {}
        held: set[str] = set()
        references: dict[str, list[tuple]] = {}

        def seen(rule: Rule, old: str, node: ast.AST, fallback: bool) -> None:
            olds.setdefault(rule.code, set()).add(old)
            if fallback or d.silenced(node, rule.code):
                held.add(rule.code)

        for event in self.events:
            if event[0] == "import":
                for _, rule, old in d.imported(event[1]):
                    seen(rule, old, event[1], event[2])
                held |= self._rebound(event[1])
            elif event[0] == "ref":
                old, rule, qualified = event[3]
                seen(rule, old, event[1], event[2])
                references.setdefault(rule.code, []).append((event[1], rule, old, qualified))
        present = set(olds)
        exported = self._exported() if present else {}
        certain: set[str] = set()
        for code in present:
            if fix_for(REGISTRY[code]) is None:
                continue
            if code in exported:
                self.why_not[code] = exported[code]
                continue
            doubtful = next((r for r in references.get(code, ()) if not self._certain(*r)), None)
            if code not in held and doubtful is None:
                certain.add(code)
                continue
            line = d.position(doubtful[0])[0] if doubtful is not None else None
            reasons = self._blockers(*doubtful) if doubtful is not None else []
            self.why_not[code] = why_not(code, line, code in held, False, reasons)  # type: ignore[assignment]
        clashes = _Clashes.clashes(certain, olds)
        clashes |= self._shadowed(certain - clashes, olds)
        certain -= clashes
        self.why_not.update((code, why_not(code, None, False, True)) for code in clashes)  # type: ignore[misc]
        candidates = {c for c in certain if d.settings.can_fix(REGISTRY[c])}
        fixable = Planner._settle(candidates, present)
        for code in candidates - fixable:
            self.why_not[code] = why_not_settled(code, present)
        return fixable

    def _shadowed(self, codes: set[str], olds: dict[str, set[str]]) -> set[str]:
        """``Planner._shadowed``: renames whose new name the file binds otherwise."""
        from codemods.rules.plan_shadows import import_binding, shadowed_renames

        if not codes:  # nothing to ask: the scopes are not gathered (every node's, below)
            return set()
        names = self.d.names
        scopes = {id(s): s for s in names.scope_of.values()} | {id(names.module): names.module}

        def bindings(name: str) -> list[str | None]:
            found: list[str | None] = []
            for scope in scopes.values():
                found += [None] * len(scope.others.get(name, ()))
                for node in scope.imports.get(name, ()):
                    for alias in node.names:
                        if type(node) is ast.ImportFrom and (alias.asname or alias.name) == name:
                            found.append(
                                import_binding(node.module, node.level, alias.name, alias.asname)
                            )
                        elif type(node) is ast.Import and alias.asname == name:
                            found.append(alias.name)
                        elif type(node) is ast.Import and alias.name.partition(".")[0] == name:
                            found.append(name)
            return found

        return shadowed_renames(codes, olds, bindings, new_name)

    def _exported(self) -> dict[str, str]:
        from codemods.rules.plan_exports import ast_exported

        return ast_exported(self.d.tree, self.d.imported, new_name)

    def _rebound(self, node: ast.Import | ast.ImportFrom) -> set[str]:
        """``Planner.rebound``: old names imported under a name the scope binds otherwise."""
        d = self.d
        scope = d.names.scope_of[node]
        codes: set[str] = set()
        for alias in node.names:
            if alias.name == "*" or (type(node) is ast.Import and alias.asname is None):
                continue
            rules = {rule.code for a, rule, _ in d.imported(node) if a is alias}
            if not rules:
                continue
            local = alias.asname or alias.name
            if local in scope.others:
                codes |= rules
            for other in scope.imports.get(local, ()):
                if other is not node and not rules <= {r.code for _, r, _ in d.imported(other)}:
                    codes |= rules
        return codes

    def _certain(self, node: ast.AST, rule: Rule, old: str, qualified: str) -> bool:
        """``Planner.certain``: whether the fix of ``rule`` is certain about this use."""
        d = self.d
        fix = fix_for(rule)
        parent = d.parent(node)
        if qualified != old:
            return fix.bare_references
        if type(parent) is ast.Call and parent.func is node:  # type: ignore[attr-defined]
            return self._translates(rule, old, parent)  # type: ignore[arg-type]
        call = self._partial_of(node)
        if call is not None and fix.partials:
            return self._translates(rule, old, call, True)
        if type(parent) is ast.keyword and parent.arg is not None:  # type: ignore[attr-defined]
            outer = d.parent(parent)
            for code, keyword in fix.passed_as:
                if parent.arg == keyword and type(outer) is ast.Call:  # type: ignore[attr-defined]
                    found = d.find(outer.func)  # type: ignore[attr-defined]
                    if found is not None and found[1].code == code:
                        return self._translates(found[1], found[0], outer)  # type: ignore[arg-type]
        return fix.bare_references

    def _blockers(self, node: ast.AST, rule: Rule, old: str, qualified: str) -> list[str]:
        """``Planner.blockers``: why the fix leaves this use, where it can say."""
        fix, parent = fix_for(rule), self.d.parent(node)
        if fix.blockers is None or qualified != old:
            return []
        if type(parent) is ast.Call and parent.func is node:  # type: ignore[attr-defined]
            return fix.blockers(AstSite(self.d, old, parent))  # type: ignore[arg-type]
        call = self._partial_of(node)
        if call is not None:
            return fix.blockers(AstSite(self.d, old, call, True))
        return []

    def _translates(self, rule: Rule, old: str, call: ast.Call, partial: bool = False) -> bool:
        fix = fix_for(rule)
        if fix.translate is unchanged:
            return True
        site = AstSite(self.d, old, call, partial)
        if fix.certain is not None:
            return fix.certain(site)
        if fix.blockers is not None:  # a translator whose reasons say when it leaves a call
            return not fix.blockers(site)
        raise Undecided(f"{rule.code}'s translator has no ast half", rule.code)

    def _partial_of(self, node: ast.AST) -> ast.Call | None:
        call = self.d.parent(node)
        if not (type(call) is ast.Call and call.args and call.args[0] is node):  # type: ignore[attr-defined]
            return None
        if _first(call) is not node or PARTIAL not in self.d.qualified(call.func):  # type: ignore[arg-type]
            return None
        return call  # type: ignore[return-value]


def _first(call: ast.Call) -> ast.AST | None:
    """The call's first argument in source order."""
    first = [a for a in (call.args[:1] + call.keywords[:1])]
    return min(first, key=lambda a: (a.lineno, a.col_offset)) if first else None


class _Clashes:
    """``Planner._clashes`` without an engine: it only needs ``new_name``."""

    new_name = staticmethod(new_name)
    clashes = classmethod(lambda cls, codes, olds: Planner._clashes(cls, codes, olds))
