"""The one engine behind lint and migrate: find every registry finding, fix the selected ones.

A single libcst pass over a module resolves names by what they refer to
(``QualifiedNameProvider``: aliases and ``import x as y`` are followed, a local name
that only looks like an old one is not) and records a :class:`Finding` for each old
spelling. In fix mode the same pass rewrites what the selected rules can fix; symbol
renames are then finished by libcst's ``RenameCommand``, which also moves the imports.
Nothing inside a ``try: ... except ImportError:`` block is reported or touched: such
blocks are deliberate fallbacks between API generations.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.commands.rename import RenameCommand
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import (
    GlobalScope,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from codemods.registry import REGISTRY, ChangeKind, FixSafety, Rule

_WRAP = "torch.distributed.fsdp.wrap"
_PARTIAL = "functools.partial"
#: FairScale-era DDPFullyShardedStrategy arguments with no FSDPStrategy meaning.
_FAIRSCALE_ONLY = (
    "move_grads_to_cpu",
    "fp32_reduce_scatter",
    "compute_dtype",
    "bucket_cap_mb",
    "state_dict_to_cpu",
)
#: Reference rules whose fix rewrites each call (class and arguments), not only the name.
CALL_SITE_RULES = frozenset({"FSDP202"})

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
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


@dataclass(frozen=True, order=True)
class Finding:
    """One old spelling at one place.

    Attributes:
        line: 1-based line.
        col: 1-based column.
        code: The rule code.
        message: The rule's message.
        fixable: An automatic fix exists for it (with ``--unsafe-fixes`` if unsafe).
        fixed: The fix was applied in this run.
    """

    line: int
    col: int
    code: str
    message: str
    fixable: bool = False
    fixed: bool = False


@dataclass(frozen=True)
class Settings:
    """Which rules run and which fixes apply.

    Attributes:
        select: Rule codes (or prefixes, ``FSDP2``) to report; empty means every rule
            that is not opt-in.
        ignore: Codes or prefixes never reported.
        fix: Apply fixes (migrate), rather than only report (lint).
        unsafe_fixes: Also apply fixes marked unsafe.
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: bool = False
    unsafe_fixes: bool = False

    def enabled(self, rule: Rule) -> bool:
        """Whether ``rule`` is reported under these settings."""
        if any(rule.code.startswith(prefix) for prefix in self.ignore):
            return False
        if self.select:
            return any(rule.code.startswith(prefix) for prefix in self.select)
        return not rule.opt_in

    def applies_fix(self, rule: Rule) -> bool:
        """Whether this run rewrites ``rule``'s findings."""
        if not self.fix or rule.code not in FIXERS:
            return False
        return rule.fix is FixSafety.SAFE or (rule.fix is FixSafety.UNSAFE and self.unsafe_fixes)


#: Rules whose automatic fix the engine implements (the rest are reported only).
FIXERS = frozenset(
    {
        "FSDP101",
        "FSDP102",
        "FSDP103",
        "FSDP104",
        "FSDP107",
        "FSDP202",
        "FSDP203",
        "FSDP204",
        "FSDP205",
        "FSDP206",
        "FSDP207",
        "FSDP208",
        "FSDP209",
        "FSDP303",
        "FSDP305",
    }
)


#: Rules also found in definitions (a user's policy's parameters), which need no import.
DEFINITION_RULES = frozenset({"FSDP102"})


def _restyle(new: str, old: str) -> str:
    """``new`` under the package root ``old`` uses (``pytorch_lightning`` vs ``lightning``).

    Example:
        >>> _restyle("lightning.pytorch.strategies.FSDPStrategy", "pytorch_lightning.strategies.X")
        'pytorch_lightning.strategies.FSDPStrategy'
    """
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


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _literal(node: cst.BaseExpression) -> Any:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return None


def _string_like(original: cst.BaseExpression, value: str) -> cst.SimpleString:
    quote = "'" if isinstance(original, cst.SimpleString) and original.quote == "'" else '"'
    return cst.SimpleString(f"{quote}{value}{quote}")


class Migrator(VisitorBasedCodemodCommand):
    """Find (and, with ``settings.fix``, rewrite) every registry finding in a module."""

    DESCRIPTION = "Report and rewrite legacy FSDP, Lightning and FairScale spellings."
    METADATA_DEPENDENCIES = (
        QualifiedNameProvider,
        PositionProvider,
        ScopeProvider,
        ParentNodeProvider,
    )

    def __init__(self, context: CodemodContext, settings: Settings) -> None:
        super().__init__(context)
        self.settings = settings
        self.findings: list[Finding] = []
        self.renames: dict[str, str] = {}  # old qualified name -> new, for RenameCommand
        self._fallback_depth = 0
        self._param_renames: set[int] = set()  # ids of Name nodes to rename (FSDP102)
        self._attribute_renames: dict[int, str] = {}  # id of Attribute -> new attr
        # id of a call's func -> (rule, old name, translated args or None if not certain)
        self._call_sites: dict[int, tuple[Rule, str, list[cst.Arg] | None]] = {}
        self._call_fixes: set[int] = set()  # ids of call funcs whose fix applies

    # Bookkeeping ---------------------------------------------------------------------

    def _qualified(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}

    def _report(self, node: cst.CSTNode, rule: Rule, fixable_here: bool = True) -> bool:
        """Record a finding; return whether this run applies its fix.

        ``fixable_here`` is False where the rule has a fix in general but not at this
        site (a form the fix does not handle with certainty).
        """
        if self._fallback_depth or not self.settings.enabled(rule):
            return False
        position = self.get_metadata(PositionProvider, node).start
        fixable = fixable_here and rule.code in FIXERS and rule.fixable
        applies = fixable and self.settings.applies_fix(rule)
        self.findings.append(
            Finding(position.line, position.column + 1, rule.code, rule.message, fixable, applies)
        )
        return applies

    def visit_Try(self, node: cst.Try) -> None:
        if _is_import_fallback(node):
            self._fallback_depth += 1

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try:
        if _is_import_fallback(original_node):
            self._fallback_depth -= 1
        return updated_node

    # References: names, attributes, imports -------------------------------------------

    def _reference(self, node: cst.BaseExpression) -> bool:
        site = self._call_sites.get(id(node))
        if site is not None:  # the class of a call this run may rewrite whole
            if self._report(node, site[0], fixable_here=site[2] is not None):
                self._call_fixes.add(id(node))
            return False
        for qualified in self._qualified(node):
            match = INDEX.reference(qualified)
            if match is None:
                continue
            old, rule = match
            # A call-site rule rewrites calls only; a bare reference is left for a human.
            if self._report(node, rule, fixable_here=rule.code not in CALL_SITE_RULES):
                new = _restyle(rule.new, old) if rule.new else None
                same_module = new and new.rpartition(".")[0] == old.rpartition(".")[0]
                renamed = rule.kind is ChangeKind.SYMBOL_RENAME
                if isinstance(node, cst.Attribute) and qualified == old and same_module and renamed:
                    # module.old -> module.new in place: RenameCommand would spell out the
                    # full path and drop an `import x as module` alias.
                    self._attribute_renames[id(node)] = new.rpartition(".")[2]
                else:
                    self._queue_rename(rule, old)
            return False  # reported: do not report its parts again
        return True

    def _queue_rename(self, rule: Rule, old: str) -> None:
        if rule.kind is ChangeKind.SYMBOL_RENAME and rule.new:
            self.renames[old] = _restyle(rule.new, old)

    def visit_Name(self, node: cst.Name) -> bool:
        return self._reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return self._reference(node)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.Attribute:
        new_attr = self._attribute_renames.get(id(original_node))
        return updated_node.with_changes(attr=cst.Name(new_attr)) if new_attr else updated_node

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return False
        module = _dotted(node.module)
        for alias in node.names:
            match = INDEX.reference(f"{module}.{_dotted(alias.name)}")
            if match is not None and self._report(alias, match[1]):
                self._queue_rename(match[1], match[0])
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            match = INDEX.reference(_dotted(alias.name) or "")
            if match is not None and self._report(alias, match[1]):
                self._queue_rename(match[1], match[0])
        return False

    # Calls -----------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> bool:
        for qualified in self._qualified(node.func):
            match = INDEX.reference(qualified)
            if match is not None and match[1].code in CALL_SITE_RULES and qualified == match[0]:
                self._call_sites[id(node.func)] = (
                    match[1],
                    match[0],
                    self._strategy_arguments(node),
                )
        return True

    def _strategy_arguments(self, call: cst.Call) -> list[cst.Arg] | None:
        """``DDPFullyShardedStrategy`` keyword arguments as ``FSDPStrategy`` ones.

        Returns None where a translation is not certain: positional or FairScale-only
        arguments, a non-literal ``reshard_after_forward``, a checkpointing value that
        is not a class.
        """
        out: list[cst.Arg] = []
        for arg in call.args:
            name = arg.keyword.value if arg.keyword else None
            if name is None or name in _FAIRSCALE_ONLY:
                return None
            if name == "min_num_params":
                policy = cst.parse_expression(
                    "partial(size_based_auto_wrap_policy, min_num_params=0)"
                )
                threshold = policy.args[1].with_changes(value=arg.value)
                value = policy.with_changes(args=[policy.args[0], threshold])
                out.append(arg.with_changes(keyword=cst.Name("auto_wrap_policy"), value=value))
            elif name == "reshard_after_forward":
                flag = _dotted(arg.value)
                if flag not in ("True", "False"):
                    return None
                strategy = '"FULL_SHARD"' if flag == "True" else '"SHARD_GRAD_OP"'
                out.append(
                    arg.with_changes(
                        keyword=cst.Name("sharding_strategy"), value=cst.SimpleString(strategy)
                    )
                )
            elif name == "flatten_parameters":
                if _dotted(arg.value) != "True":
                    return None  # torch's FSDP1 always flattens: only True is dropped safely
            elif name == "activation_checkpointing":
                classes = self._class_set(arg.value)
                if classes is None:
                    return None
                out.append(
                    arg.with_changes(
                        keyword=cst.Name("activation_checkpointing_policy"), value=classes
                    )
                )
            else:
                out.append(arg)
        if out and call.args and out[-1] is not call.args[-1]:
            out[-1] = _take_ending(out[-1], call.args[-1])
        return out

    def _rewrite_call_site(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        rule, old, args = self._call_sites[id(original.func)]
        new = _restyle(rule.new, old)
        module, _, name = new.rpartition(".")
        if isinstance(updated.func, cst.Attribute):
            func = updated.func.with_changes(attr=cst.Name(name))
        else:
            func = cst.Name(name)
            AddImportsVisitor.add_needed_import(self.context, module, name)
            self._forget(original.func)
        if any(a.keyword and a.keyword.value == "auto_wrap_policy" for a in args):
            AddImportsVisitor.add_needed_import(self.context, "functools", "partial")
            AddImportsVisitor.add_needed_import(self.context, _WRAP, "size_based_auto_wrap_policy")
        return updated.with_changes(func=func, args=args)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node.func) in self._call_fixes:
            return self._rewrite_call_site(original_node, updated_node)
        names = self._qualified(original_node.func)
        if _PARTIAL in names:
            return self._partial(original_node, updated_node)
        for name in names:
            for rule in INDEX.calls.get(name, ()):
                updated_node = self._call_rule(rule, original_node, updated_node)
        return updated_node

    def _partial(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``partial(transformer_auto_wrap_policy, transformer_layer_cls=X)`` and friends."""
        if not original.args or original.args[0].keyword is not None:
            return updated
        target = self._qualified(original.args[0].value)
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
        AddImportsVisitor.add_needed_import(self.context, module, new_name)
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
            and bool(self._qualified(call.func) & POLICY_CONSUMERS)
        )

    def _imported_at_module_level(self, node: cst.BaseExpression) -> bool:
        scope = self.get_metadata(ScopeProvider, node, None)
        name = _dotted(node)
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
        RemoveImportsVisitor.remove_unused_import_by_node(self.context, node)

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
            for arg in original.args:
                if (
                    arg.keyword
                    and arg.keyword.value == rule.argument
                    and _dotted(arg.value) in ("True", "False")
                ):
                    self._report(arg, rule)
            return updated
        for arg in original.args:  # other argument rules: report the keyword
            if arg.keyword and arg.keyword.value == rule.argument:
                self._report(arg, rule)
        return updated

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
            old = _literal(arg.value)
            if old in mapping:  # 16 and "16" are distinct keys: exact match
                if self._report(arg, rule):
                    args[index] = args[index].with_changes(
                        value=_string_like(arg.value, mapping[old])
                    )
        return updated.with_changes(args=args)

    def _activation_checkpointing(
        self, rule: Rule, original: cst.Call, updated: cst.Call
    ) -> cst.Call:
        args = list(updated.args)
        for index, arg in enumerate(original.args):
            if not (arg.keyword and arg.keyword.value == rule.argument):
                continue
            value = self._class_set(arg.value, updated.args[index].value)
            if self._report(arg, rule, fixable_here=value is not None) and value is not None:
                args[index] = args[index].with_changes(
                    keyword=cst.Name(rule.new_argument), value=value
                )
        return updated.with_changes(args=args)

    def _class_set(
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
        name = _dotted(node)
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
            if not (isinstance(inner, cst.Call) and _PARTIAL in self._qualified(inner.func)):
                continue
            if not inner.args or not (
                self._qualified(inner.args[0].value) & {f"{_WRAP}.transformer_auto_wrap_policy"}
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
            value = self._class_set(rest[0].value)
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
                        self._param_renames.update(
                            id(access.node) for access in assignment.references
                        )
                self._param_renames.add(id(param.name))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if id(original_node) in self._param_renames:
            return updated_node.with_changes(value="nonwrapped_numel")
        return updated_node

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        bases = (
            set().union(*(self._qualified(b.value) for b in original_node.bases))
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

    # Module ----------------------------------------------------------------------------

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        tree = super().transform_module_impl(tree)
        for old, new in sorted(self.renames.items()):
            tree = RenameCommand(self.context, old, new).transform_module(tree)
        return tree


def _take_ending(kept: cst.Arg, dropped: cst.Arg) -> cst.Arg:
    """``kept``, now last, ending the way the dropped last argument did.

    Its own trailing comment stays; the line break and indentation before ``)`` come
    from ``dropped``.
    """
    comma, tail = kept.comma, dropped.comma
    if not isinstance(tail, cst.Comma):
        comma = cst.MaybeSentinel.DEFAULT
    elif isinstance(comma, cst.Comma) and isinstance(
        comma.whitespace_after, cst.ParenthesizedWhitespace
    ):
        if isinstance(tail.whitespace_after, cst.ParenthesizedWhitespace):
            last_line = tail.whitespace_after.last_line
            comma = comma.with_changes(
                whitespace_after=comma.whitespace_after.with_changes(last_line=last_line)
            )
    return kept.with_changes(comma=comma, whitespace_after_arg=dropped.whitespace_after_arg)


def _is_import_fallback(node: cst.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        elements = (
            handler.type.elements
            if isinstance(handler.type, cst.Tuple)
            else [cst.Element(handler.type)]
        )
        if any(_dotted(e.value) in _IMPORT_ERRORS for e in elements):
            return True
    return False


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
    module = cst.parse_module(source)
    command = Migrator(CodemodContext(filename=filename), settings)
    new_bytes = command.transform_module(module).bytes  # without fixes: unchanged
    return Outcome(sorted(command.findings), new_bytes if new_bytes != source else None)


def select_codes(codes: Collection[str]) -> tuple[str, ...]:
    """Normalise ``--select``-style codes (upper case, stripped)."""
    return tuple(code.strip().upper() for code in codes if code.strip())
