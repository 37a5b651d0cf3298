"""The one engine behind lint and migrate: find every registry finding, fix the selected ones.

A single libcst pass over a module resolves names by what they refer to (libcst's
scopes: aliases and ``import x as y`` are followed, a local name that only looks like
an old one is not) and records a :class:`Finding` for each old spelling. In fix mode the
same pass rewrites what the selected rules can fix. Renames are decided for the whole
file first (:mod:`codemods.plan`); their calls are translated by :mod:`codemods.fixes`,
their imports moved here, and where a local name itself changes, its uses are renamed in
the same pass (libcst's ``RenameCommand`` where that is not certain). Nothing inside a
``try: ... except ImportError:`` block is reported or touched: such blocks are
deliberate fallbacks between API generations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import (
    GlobalScope,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from codemods import noqa
from codemods.findings import Finding
from codemods.fixes import Site, fix_for
from codemods.fixes.base import Import
from codemods.noqa import Suppressions
from codemods.plan import PARTIAL, Found, Plan, Planner
from codemods.registry import REGISTRY, ChangeKind, Rule
from codemods.settings import DEFINITION_RULES, Settings
from codemods.syntax import (
    dotted,
    is_bool,
    is_import_fallback,
    keyword,
    literal,
    string_like,
)

_WRAP = "torch.distributed.fsdp.wrap"

#: Callables whose auto_wrap_policy= takes policy objects (ModuleWrapPolicy, CustomPolicy).
POLICY_CONSUMERS = frozenset(
    {
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing",
        "compat.fsdp.FullyShardedDataParallel",
        "compat.fsdp.FSDP",
        "compat.fsdp2.fully_shard_by_policy",
        "compat.fairscale.enable_wrap",
        "lightning.pytorch.strategies.FSDPStrategy",
        "lightning.fabric.strategies.FSDPStrategy",
        "pytorch_lightning.strategies.FSDPStrategy",
        "lightning_fabric.strategies.FSDPStrategy",
    }
)


#: Where each of compat's strategy flavours' classes live natively.
_COMPAT_FLAVOURS = (
    ("compat.strategies.fabric.", "lightning.fabric."),
    ("compat.strategies.pytorch_lightning.", "pytorch_lightning."),
)


def _restyle(new: str, old: str) -> str:
    """``new`` under the package root ``old`` uses (``pytorch_lightning`` vs ``lightning``).

    Example:
        >>> _restyle("lightning.pytorch.strategies.FSDPStrategy", "pytorch_lightning.strategies.X")
        'pytorch_lightning.strategies.FSDPStrategy'
        >>> _restyle("lightning.pytorch.strategies.FSDPStrategy", "compat.strategies.fabric.X")
        'lightning.fabric.strategies.FSDPStrategy'
    """
    unified = "lightning.pytorch."
    for flavour, root in _COMPAT_FLAVOURS:
        if new.startswith(unified) and old.startswith(flavour):
            new = root + new[len(unified) :]
    for unified, standalone in (
        ("lightning.pytorch.", "pytorch_lightning."),
        ("lightning.fabric.", "lightning_fabric."),
    ):
        if new.startswith(unified) and old.startswith(standalone):
            return standalone + new[len(unified) :]
    return new


class _Index:
    """The registry arranged for lookups by qualified name."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.references: dict[str, Rule] = {}  # any use of the name is a finding
        self.calls: dict[str, list[Rule]] = {}  # findings about a call's arguments
        self.partials: dict[str, Rule] = {}  # partial(old, argument=...) rewrites
        self.methods: list[Rule] = []
        for rule in rules:
            if rule.kind is ChangeKind.METHOD_RENAME:
                self.methods.append(rule)
            elif rule.code in ("FSDP103", "FSDP104"):
                for name in rule.old:
                    self.partials[name] = rule
            elif rule.argument is None:
                for name in rule.old:
                    self.references[name] = rule
            else:
                for name in rule.old:
                    self.calls.setdefault(name, []).append(rule)

    def reference(self, qualified: str) -> tuple[str, Rule] | None:
        """The rule for a reference to ``qualified`` (or to something inside it)."""
        probe = qualified
        while probe:
            if probe in self.references:
                return probe, self.references[probe]
            probe = probe.rpartition(".")[0]
        return None


INDEX = _Index(REGISTRY.rules)


class Migrator(cst.CSTTransformer):
    """Find (and, with ``settings.fix``, rewrite) every registry finding in a module.

    A plain transformer (see :func:`run`): libcst's matcher-decorated
    command base inspects every attribute of each instance, which cost more than the
    whole visit of a small file.
    """

    # Qualified names come from the scopes on demand (see qualified): libcst's
    # QualifiedNameProvider would visit every node of the module to offer the same.
    METADATA_DEPENDENCIES = (PositionProvider, ScopeProvider, ParentNodeProvider)

    def __init__(self, settings: Settings, suppressions: Suppressions | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.suppressions = suppressions or Suppressions()
        self.findings: list[Finding] = []
        self.renames: dict[str, str] = {}  # old qualified name -> new, where this run renames
        # What fixes leave to libcst's codemod tools after this pass (see codemods.command):
        self.command_renames: dict[str, str] = {}  # old -> new, for RenameCommand
        self.imports_to_add: list[tuple[str, str | None, str | None]] = []  # module, name, as
        self.imports_to_forget: list[cst.BaseExpression] = []  # uses a fix removed
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

    # Bookkeeping ---------------------------------------------------------------------

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The fully qualified names ``node`` may refer to (libcst's scope resolution)."""
        names = self._qualified.get(id(node))
        if names is None:
            scope = self.get_metadata(ScopeProvider, node, None)
            found = scope.get_qualified_names_for(node) if scope is not None else ()
            names = self._qualified[id(node)] = {q.name for q in found}
        return names

    def applies(self, code: str) -> bool:
        """Whether rule ``code``'s fix is part of this run (of a fixing run, when linting)."""
        rule = REGISTRY[code]
        return self.settings.applies_fix(rule) if self.settings.fix else self.settings.can_fix(rule)

    def _report(self, node: cst.CSTNode, rule: Rule, fixable_here: bool = True) -> bool:
        """Record a finding; return whether this run applies its fix.

        ``fixable_here`` is False where the rule has a fix in general but not at this
        site (a form the fix does not handle with certainty).
        """
        if (
            self._fallback_depth
            or not self.settings.enabled(rule)
            or rule.code in self._plan.superseded
        ):
            return False
        position = self.get_metadata(PositionProvider, node).start
        if self.suppressions.silences(position.line, rule.code):
            return False
        fixable = fixable_here and self.settings.can_fix(rule)
        applies = fixable and self.settings.applies_fix(rule)
        self.findings.append(
            Finding(position.line, position.column + 1, rule.code, rule.message, fixable, applies)
        )
        return applies

    def _silenced(self, node: cst.CSTNode, code: str) -> bool:
        line = self.get_metadata(PositionProvider, node).start.line
        return self.suppressions.silences(line, code)

    def _find(self, node: cst.BaseExpression) -> Found | None:
        """The old name, rule and qualified name ``node`` refers to, if any.

        A name bound to an old API on one path and to something else on another
        (``try: import new / except ImportError: import old``) is not a use of the old API.
        """
        found = None
        for qualified in sorted(self.qualified(node)):
            match = INDEX.reference(qualified)
            if match is None:
                return None
            found = found or (match[0], match[1], qualified)
        return found

    def _imported(self, node: cst.Import | cst.ImportFrom) -> list[tuple[str, Rule]]:
        return [(old, rule) for _, rule, old in self._imported_names(node)]

    def visit_Module(self, node: cst.Module) -> None:
        self._planner = Planner(
            self,
            lambda n: self.get_metadata(ParentNodeProvider, n, None),
            self._find,
            self._imported,
            self._new_name,
            self.settings.can_fix,
            self.settings.applies_fix,
            self._silenced,
        )
        self._plan = self._planner.plan(node)

    def visit_Try(self, node: cst.Try) -> None:
        if is_import_fallback(node):
            self._fallback_depth += 1

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try:
        if is_import_fallback(original_node):
            self._fallback_depth -= 1
        return updated_node

    # References: names, attributes, imports -------------------------------------------

    def _renaming(self, node: cst.CSTNode, rule: Rule) -> bool:
        """Report a use or import of ``rule``'s old name; whether this run renames it."""
        if fix_for(rule) is None:  # reported only; a call rule may still fix its call
            self._report(node, rule)
            return False
        fixable = rule.code in self._plan.fixable
        return self._report(node, rule, fixable_here=fixable) and rule.code in self._plan.applies

    def _reference(self, node: cst.BaseExpression) -> bool:
        found = self._find(node)
        if found is None:
            return True
        old, rule, qualified = found
        if self._renaming(node, rule) and qualified == old:
            self._call_sites[id(node)] = (rule, old)
            if isinstance(node, cst.Attribute):
                self._attribute_renames[id(node)] = self._new_name(rule, old)
        return False  # reported: do not report its parts again

    @staticmethod
    def _new_name(rule: Rule, old: str) -> str | None:
        """What ``old`` is renamed to, or None where the fix renames nothing."""
        if fix_for(rule) is None:
            return None
        new = rule.new_for(old)
        return _restyle(new, old) if new else None

    def visit_Name(self, node: cst.Name) -> bool:
        return self._reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self._reference(node)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        """``module.Old`` as ``module.New`` (same module) or ``New`` imported from its own."""
        new = self._attribute_renames.get(id(original_node))
        if new is None:
            return updated_node
        module, _, name = new.rpartition(".")
        old_module = self._find(original_node)[0].rpartition(".")[0]
        if module == old_module:
            # In place: RenameCommand would spell out the full path and drop an
            # `import x as module` alias.
            return updated_node.with_changes(attr=cst.Name(name))
        self._need_import(module, name)
        self._forget(original_node.value)
        return cst.Name(name)

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
            match = INDEX.reference(prefix + (dotted(alias.name) or ""))
            if match is not None:
                found.append((alias, match[1], match[0]))
        return found

    def _visit_import(self, node: cst.Import | cst.ImportFrom) -> bool:
        for alias, rule, old in self._imported_names(node):
            if self._renaming(alias, rule):
                self.renames[old] = self._new_name(rule, old)
        return False

    visit_Import = _visit_import
    visit_ImportFrom = _visit_import

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        for _, _, old in self._imported_names(original_node):
            if old in self.renames:  # `import old.module`: libcst's rename moves it and its uses
                self.command_renames[old] = self.renames[old]
        return updated_node

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
        for alias, _, old in self._imported_names(original_node):
            if old not in self.renames:
                continue
            full = f"{dotted(original_node.module)}.{dotted(alias.name)}"
            module, _, name = (self.renames[old] + full[len(old) :]).rpartition(".")
            if alias.asname is not None or name == dotted(alias.name):
                moves[id(alias)] = (module, name)
                continue
            uses = self._uses_to_rename(original_node, dotted(alias.name), name)
            if uses is None:
                self.command_renames[old] = self.renames[old]
                continue
            moves[id(alias)] = (module, name)
            self._name_renames.update((id(use), name) for use in uses)
        if not moves:
            return updated_node
        pairs = list(zip(original_node.names, updated_node.names))
        if len(moves) == len(pairs) and len({m for m, _ in moves.values()}) == 1:
            (module,) = {m for m, _ in moves.values()}
            names = []
            for original, alias in pairs:
                name = moves[id(original)][1]
                # Two old names can become one (both Lightning strategies: FSDPStrategy).
                key = (module, name, original.asname and dotted(original.asname.name))
                if key not in self._moved_in:
                    self._moved_in.add(key)
                    names.append(alias.with_changes(name=cst.Name(name)))
            if not names:
                return cst.RemoveFromParent()
            if len(names) < len(pairs):
                names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(module=cst.parse_expression(module), names=names)
        kept = []
        for original, alias in pairs:
            if id(original) not in moves:
                kept.append(alias)
                continue
            module, name = moves[id(original)]
            local = original.asname.name.value if original.asname else name
            self._need_import(module, name, None if local == name else local)
        if not kept:
            return cst.RemoveFromParent()
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=kept)

    def _uses_to_rename(self, node: cst.ImportFrom, local: str, new: str) -> list[cst.Name] | None:
        """The uses of the name ``local`` that ``node`` imports, if this visit can rename them.

        It can where the name is bound once in its scope, every use is a plain name that
        comes after the import (so it has not been visited yet) or an annotation that is
        the name in quotes, and ``new`` is unbound wherever it is used. Otherwise (a
        longer annotation in quotes, a rebinding, a use above a late import), None.
        """
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is None or new in scope:
            return None
        assignments = list(scope.assignments[local])
        if len(assignments) != 1 or assignments[0].node is not node:
            return None
        start = self.get_metadata(PositionProvider, node).start
        uses, quoted = [], []
        for access in assignments[0].references:
            use = access.node
            if isinstance(use, cst.SimpleString) and "\\" not in use.raw_value:
                quoted.append(use)  # an annotation in quotes: "Old", "list[Old]"
                continue
            if not isinstance(use, cst.Name):
                return None
            where = self.get_metadata(PositionProvider, use).start
            if (where.line, where.column) <= (start.line, start.column):
                return None
            if new in self.get_metadata(ScopeProvider, use, scope):
                return None
            uses.append(use)
        self._string_renames.update((id(use), (local, new)) for use in quoted)
        return uses

    # Calls -----------------------------------------------------------------------------

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
        self._add_imports(translation.imports)
        func = translation.func if translation.func is not None else updated.func
        return updated.with_changes(func=func, args=translation.args)

    def _add_imports(self, imports: Sequence[Import]) -> None:
        for module, name in imports:
            self._need_import(module, name)

    def _need_import(self, module: str, name: str | None, asname: str | None = None) -> None:
        """Queue an import for libcst's ``AddImportsVisitor``, run after this pass."""
        self.imports_to_add.append((module, name, asname))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        names = self.qualified(original_node.func)
        if PARTIAL in names:
            updated_node = self._partial(original_node, updated_node)
            if not isinstance(updated_node, cst.Call):
                return updated_node
        else:
            for name in names:
                for rule in INDEX.calls.get(name, ()):
                    updated_node = self._call_rule(rule, original_node, updated_node)
        return self._call_site(original_node, updated_node)

    def _partial(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``partial(transformer_auto_wrap_policy, transformer_layer_cls=X)`` and friends."""
        if not original.args or original.args[0].keyword is not None:
            return updated
        target = self.qualified(original.args[0].value)
        rule = next((INDEX.partials[n] for n in target if n in INDEX.partials), None)
        if rule is None:
            return self._partial_keywords(original, updated, target)
        rest = original.args[1:]
        exact = (
            len(rest) == 1
            and rest[0].keyword is not None
            and rest[0].keyword.value == rule.argument
        )
        # Timid: a policy object is not callable, so the partial may only become one where
        # it certainly reaches a consumer that takes policy objects, and where its import
        # is a module-level one (a function-local import may be avoiding a cycle).
        fixable = exact and self._reaches_policy_consumers(original)
        fixable = fixable and self._imported_at_module_level(original.args[0].value)
        if not self._report(original, rule, fixable_here=fixable) or not fixable:
            return updated
        module, _, new_name = rule.new.rpartition(".")
        self._need_import(module, new_name)
        self._forget(original.func)
        self._forget(original.args[0].value)
        dropped, kept = updated.args[0], updated.args[1]
        # Keep the surviving argument's layout, and a comment that followed the dropped
        # first argument: it moves up to the opening parenthesis.
        before_args = updated.whitespace_before_args
        comma = dropped.comma
        if isinstance(comma, cst.Comma) and isinstance(
            comma.whitespace_after, cst.ParenthesizedWhitespace
        ):
            before_args = comma.whitespace_after
        return updated.with_changes(
            func=cst.Name(new_name),
            whitespace_before_args=before_args,
            args=[kept.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)],
        )

    def _reaches_policy_consumers(self, call: cst.Call) -> bool:
        """Whether ``call`` certainly ends up as a policy-object consumer's policy.

        That is: passed as ``auto_wrap_policy=`` to one of :data:`POLICY_CONSUMERS`,
        directly or through a name used only that way.
        """
        parent = self.get_metadata(ParentNodeProvider, call, None)
        if isinstance(parent, cst.Arg):
            return self._is_policy_argument(parent)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return False
        target = parent.targets[0].target
        scope = self.get_metadata(ScopeProvider, target, None)
        if not isinstance(target, cst.Name) or scope is None:
            return False
        accesses = [
            a for assignment in scope.assignments[target.value] for a in assignment.references
        ]
        return bool(accesses) and all(
            isinstance(arg := self.get_metadata(ParentNodeProvider, access.node, None), cst.Arg)
            and self._is_policy_argument(arg)
            for access in accesses
        )

    def _is_policy_argument(self, arg: cst.Arg) -> bool:
        call = self.get_metadata(ParentNodeProvider, arg, None)
        return (
            arg.keyword is not None
            and arg.keyword.value == "auto_wrap_policy"
            and isinstance(call, cst.Call)
            and bool(self.qualified(call.func) & POLICY_CONSUMERS)
        )

    def _imported_at_module_level(self, node: cst.BaseExpression) -> bool:
        scope = self.get_metadata(ScopeProvider, node, None)
        name = dotted(node)
        if scope is None or name is None:
            return False
        assignments = scope[name.split(".")[0]]
        return bool(assignments) and all(isinstance(a.scope, GlobalScope) for a in assignments)

    def _partial_keywords(
        self, original: cst.Call, updated: cst.Call, target: set[str]
    ) -> cst.Call:
        """``partial(size_based_auto_wrap_policy, unwrapped_params=...)`` keyword renames."""
        for name in target:
            for rule in INDEX.calls.get(name, ()):
                updated = self._rename_keyword(rule, original, updated)
        return updated

    def _forget(self, node: cst.BaseExpression) -> None:
        """Queue the import behind ``node`` (alias included) for removal if now unused."""
        self.imports_to_forget.append(node)

    def _call_rule(self, rule: Rule, original: cst.Call, updated: cst.Call) -> cst.Call:
        if rule.kind is ChangeKind.KEYWORD_RENAME:
            return self._rename_keyword(rule, original, updated)
        if rule.kind is ChangeKind.STRING_VALUE:
            return self._string_value(rule, original, updated)
        if rule.kind is ChangeKind.DEFAULT_CHANGE:
            given = {a.keyword.value for a in original.args if a.keyword is not None}
            if rule.argument not in given and len(original.args) < 2:
                self._report(original, rule)
            return updated
        if rule.code == "FSDP208":
            return self._activation_checkpointing(rule, original, updated)
        if rule.code == "FSDP209":
            return self._auto_wrap_partial(rule, original, updated)
        if rule.code == "FSDP109":
            return self._cpu_offload_flag(rule, original, updated)
        for arg in original.args:  # other argument rules: report the keyword
            if arg.keyword and arg.keyword.value == rule.argument:
                self._report(arg, rule)
        return updated

    def _cpu_offload_flag(self, rule: Rule, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``cpu_offload=True`` (Lightning's and FairScale's spelling) as a ``CPUOffload``."""
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if keyword(arg) == rule.argument and is_bool(arg.value) and self._report(arg, rule):
                value = cst.parse_expression(f"CPUOffload(offload_params={arg.value.value})")
                args[index] = args[index].with_changes(value=value)
                self._add_imports([("torch.distributed.fsdp", "CPUOffload")])
        return updated.with_changes(args=args)

    def _rename_keyword(self, rule: Rule, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if arg.keyword and arg.keyword.value == rule.argument and self._report(arg, rule):
                args[index] = args[index].with_changes(keyword=cst.Name(rule.new_argument))
        return updated.with_changes(args=args)

    def _string_value(self, rule: Rule, original: cst.Call, updated: cst.Call) -> cst.Call:
        mapping = dict(rule.values)
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if not (arg.keyword and arg.keyword.value == rule.argument):
                continue
            old = literal(arg.value)
            if old in mapping:  # 16 and "16" are distinct keys: exact match
                if self._report(arg, rule):
                    args[index] = args[index].with_changes(
                        value=string_like(arg.value, mapping[old])
                    )
        return updated.with_changes(args=args)

    def _activation_checkpointing(
        self, rule: Rule, original: cst.Call, updated: cst.Call
    ) -> cst.Call:
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if not (arg.keyword and arg.keyword.value == rule.argument):
                continue
            value = self.class_set(arg.value, updated.args[index].value)
            if self._report(arg, rule, fixable_here=value is not None) and value is not None:
                args[index] = args[index].with_changes(
                    keyword=cst.Name(rule.new_argument), value=value
                )
        return updated.with_changes(args=args)

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
        scope = self.get_metadata(ScopeProvider, node, None)
        name = dotted(node)
        if scope is None or name is None:
            return False
        assignments = scope[name.split(".")[0]]  # resolved through enclosing scopes
        kinds = (cst.ClassDef, cst.Import, cst.ImportFrom)
        return bool(assignments) and all(
            isinstance(getattr(a, "node", None), kinds) for a in assignments
        )

    def _auto_wrap_partial(self, rule: Rule, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if not (arg.keyword and arg.keyword.value == rule.argument):
                continue
            inner = arg.value
            if not (isinstance(inner, cst.Call) and PARTIAL in self.qualified(inner.func)):
                continue
            if not inner.args or not (
                self.qualified(inner.args[0].value) & {f"{_WRAP}.transformer_auto_wrap_policy"}
            ):
                continue
            rest = inner.args[1:]
            if (
                len(rest) != 1
                or rest[0].keyword is None
                or rest[0].keyword.value != "transformer_layer_cls"
            ):
                self._report(arg, rule, fixable_here=False)
                continue
            value = self.class_set(rest[0].value)
            if self._report(arg, rule, fixable_here=value is not None) and value is not None:
                self._forget(inner.func)
                self._forget(inner.args[0].value)
                args[index] = args[index].with_changes(value=value)
        return updated.with_changes(args=args)

    # Definitions -----------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        (code,) = DEFINITION_RULES
        rule = REGISTRY[code]
        names = [p.name.value for p in node.params.params]
        if "unwrapped_params" in names and "recurse" in names:
            param = next(p for p in node.params.params if p.name.value == "unwrapped_params")
            if self._report(param, rule):
                scope = self.get_metadata(ScopeProvider, node.body, None)
                if scope is not None:
                    for assignment in scope.assignments["unwrapped_params"]:
                        for access in assignment.references:
                            self._name_renames[id(access.node)] = "nonwrapped_numel"
                self._name_renames[id(param.name)] = "nonwrapped_numel"

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self._name_renames.get(id(original_node))
        return updated_node if new is None else updated_node.with_changes(value=new)

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

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        bases = (
            set().union(*(self.qualified(b.value) for b in original_node.bases))
            if original_node.bases
            else set()
        )
        body = list(updated_node.body.body)
        for rule in INDEX.methods:
            owners = {old.rpartition(".")[0] for old in rule.old}
            if not bases & owners:
                continue
            old_name = rule.old[0].rpartition(".")[2]
            new_name = rule.new.rpartition(".")[2]
            defined = {getattr(s, "name", None) and s.name.value for s in body}
            for index, (orig, stmt) in enumerate(zip(original_node.body.body, body)):
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == old_name:
                    fix = new_name not in defined  # both defined: Lightning raises; a human decides
                    if self._report(orig, rule, fixable_here=fix) and fix:
                        body[index] = stmt.with_changes(name=cst.Name(new_name))
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


@dataclass
class Outcome:
    """What the engine made of one source.

    Attributes:
        findings: Sorted findings.
        new_source: The rewritten bytes, or None when nothing changed.
    """

    findings: list[Finding] = field(default_factory=list)
    new_source: bytes | None = None


def run(source: bytes, settings: Settings, filename: str = "<string>") -> Outcome:
    """Lint (and with ``settings.fix``, migrate) one module's source.

    Raises:
        libcst.ParserSyntaxError: If the source does not parse.
    """
    suppressions = noqa.parse(source)
    if suppressions.everything:
        return Outcome()
    module = cst.parse_module(source)
    migrator = Migrator(settings, suppressions)
    # No copy of the module: libcst's nodes are immutable and the visit builds a new tree.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    new = wrapper.visit(migrator)
    if not settings.fix:
        return Outcome(sorted(migrator.findings))
    if migrator.command_renames or migrator.imports_to_add or migrator.imports_to_forget:
        from codemods.command import finish  # libcst's codemod tools: about 0.25 s to load

        new = finish(migrator, wrapper, new, filename)
    new_bytes = _no_new_leading_blank_lines(module, new).bytes
    return Outcome(sorted(migrator.findings), new_bytes if new_bytes != source else None)


def _no_new_leading_blank_lines(original: cst.Module, new: cst.Module) -> cst.Module:
    """``new`` without the blank lines a removed first import left at the top of the file."""
    if not (original.body and new.body) or original.body[0].leading_lines:
        return new
    first = new.body[0]
    if first.leading_lines and all(line.comment is None for line in first.leading_lines):
        return new.with_changes(body=[first.with_changes(leading_lines=()), *new.body[1:]])
    return new
