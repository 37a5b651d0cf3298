"""Decide, before rewriting a file, which renames apply to it as a whole.

A rename changes every use of an old name in the file and moves its imports, so it
applies only where the fix is certain about every use: a call it can translate (the
rule's ``CallSiteFix``, see :mod:`codemods.rules.api`), a bare use that means the same
under the new name, or one the fix declares safe (``passed_as``). It never applies
where the old name also appears in a ``try: ... except ImportError:`` fallback or a
version-gated branch (the file already bridges both APIs) or on a line whose ``noqa``
silences it, nor where two renames would bind the same name to different things.
Fixes that depend on each other (``requires``) or that another old name rules out
(``blocked_by``) are then settled together.
"""

from __future__ import annotations

from codemods.records import Frozen, Record
from codemods.registry import REGISTRY, Rule
from codemods.registry.names import COMPAT_STRATEGY_FLAVOURS
from codemods.rules.api import PARTIAL, Resolver, Site, Translation, unchanged
from codemods.rules.index import fix_for
from codemods.syntax.cst_nodes import is_plain_positional
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from codemods.rules.protocols import PlanningEngine

#: What a node refers to: (old name, its rule, the node's qualified name).
Found = tuple[str, Rule, str]


class Reference(Frozen):
    """One use of an old name outside an import.

    Attributes:
        node: The name or attribute.
        rule: The rule whose old name it is.
        old: That old name.
        qualified: What the node refers to: ``old`` itself, or something inside it
            (``Old.method``).
    """

    __slots__ = _fields = ("node", "rule", "old", "qualified")

    node: cst.BaseExpression
    rule: Rule
    old: str
    qualified: str

    def __init__(self, node: cst.BaseExpression, rule: Rule, old: str, qualified: str) -> None:
        self._set(node=node, rule=rule, old=old, qualified=qualified)


class Plan(Record):
    """What the renames will do in one file.

    Attributes:
        present: Codes of every rule with a use or an import in the file.
        fixable: Renaming rules whose fix is certain here, if every enabled fix ran.
        applies: Renaming rules whose fix this run applies.
        superseded: Rules not reported, because a fix that applies rewrites their sites.
        why_not: Why a renaming rule present here has no certain fix in this file (see
            :func:`why_not`), by code.
    """

    _fields = ("present", "fixable", "applies", "superseded", "why_not")

    def __init__(
        self,
        present: set[str] | None = None,
        fixable: set[str] | None = None,
        applies: set[str] | None = None,
        superseded: set[str] | None = None,
        why_not: dict[str, str] | None = None,
    ) -> None:
        self.present = set() if present is None else present
        self.fixable = set() if fixable is None else fixable
        self.applies = set() if applies is None else applies
        self.superseded = set() if superseded is None else superseded
        self.why_not = {} if why_not is None else why_not


def why_not_settled(code: str, present: set[str]) -> str:
    """Why a certain fix of ``code`` is dropped by :meth:`Planner._settle`.

    Example:
        >>> why_not_settled("FSDP301", {"FSDP302", "FSDP304"})
        'it moves only together with FSDP302, which stays in this file'
    """
    fix = fix_for(REGISTRY[code])
    blockers = [b for b in fix.blocked_by if b in present]
    if blockers:
        return f"{', '.join(blockers)} in this file keeps it (see --explain {blockers[0]})"
    companions = [r for r in fix.requires if r in present]
    verb = "stays" if len(companions) == 1 else "stay"
    return f"it moves only together with {', '.join(companions)}, which {verb} in this file"


def why_not(
    code: str,
    uncertain_line: int | None,
    held: bool,
    clash: bool,
    reasons: Sequence[str] = (),
) -> str | None:
    """Why rule ``code``'s rename is not certain in a file: the first reason that holds.

    Both planners (libcst's and the ``ast`` detector's) word it here, so lint and migrate
    say the same. ``reasons``: why the fix leaves the call on ``uncertain_line``, where
    the fix says (``CallSiteFix.blockers``).

    Example:
        >>> why_not("FSDP301", 12, False, False)
        'not every use in this file is one its fix rewrites with certainty (line 12: a call whose arguments do not all translate, or a use it does not rewrite); it renames every use together'
        >>> why_not("FSDP301", 5, False, False, ["`verbose` has no torch FSDP meaning"])
        'not every use in this file is one its fix rewrites with certainty (line 5: `verbose` has no torch FSDP meaning); it renames every use together'
    """  # noqa: E501
    if held:
        return (
            "the file also binds the name another way (a fallback, another import or "
            "assignment), or a noqa comment keeps one use"
        )
    if uncertain_line is not None:
        why = "; ".join(reasons) or (
            "a call whose arguments do not all translate, or a use it does not rewrite"
        )
        return (
            f"not every use in this file is one its fix rewrites with certainty (line "
            f"{uncertain_line}: {why}); it renames every use together"
        )
    if clash:
        return "its new name would also name something else in this file"
    return None


def restyle(new: str, old: str) -> str:
    """``new`` under the package root ``old`` uses (``pytorch_lightning`` vs ``lightning``).

    Example:
        >>> restyle("lightning.pytorch.strategies.FSDPStrategy", "pytorch_lightning.strategies.X")
        'pytorch_lightning.strategies.FSDPStrategy'
        >>> restyle("lightning.pytorch.strategies.FSDPStrategy", "compat.strategies.fabric.X")
        'lightning.fabric.strategies.FSDPStrategy'
        >>> restyle("lightning.fabric.utilities.seed", "lightning_lite.utilities.seed")
        'lightning_fabric.utilities.seed'
        >>> restyle("lightning.fabric", "lightning_lite")
        'lightning_fabric'
    """
    unified = "lightning.pytorch."
    for flavour, root in COMPAT_STRATEGY_FLAVOURS:
        if new.startswith(unified) and old.startswith(flavour):
            new = root + new[len(unified) :]
    for unified, standalone, target in (
        ("lightning.pytorch.", "pytorch_lightning.", "pytorch_lightning."),
        ("lightning.fabric.", "lightning_fabric.", "lightning_fabric."),
        # Lightning Lite's standalone package became the standalone lightning_fabric.
        ("lightning.fabric.", "lightning_lite", "lightning_fabric."),
    ):
        if f"{new}.".startswith(unified) and f"{old}.".startswith(standalone):
            return (target + new[len(unified) :]).rstrip(".")
    return new


def new_name(rule: Rule, old: str) -> str | None:
    """What ``old`` is renamed to, or None where the fix renames nothing."""
    if fix_for(rule) is None:
        return None
    new = rule.new_for(old)
    return restyle(new, old) if new else None


def keeps_spelling(rule: Rule, old: str, bare: str | None = None) -> bool:
    """Whether a use of a name an import binds is that import's finding.

    It is where all the fix changes in the use is the import's rename: an ``as`` alias
    is kept, and a from-import's own name is renamed with its uses
    (``default_auto_wrap_policy`` then ``size_based_auto_wrap_policy`` at every use).
    A fix that also rewrites the calls (FSDP112's arguments) changes them, and they are
    reported, except a ``bare`` use (neither called, nor given arguments through
    ``partial``, nor looked into) where the fix says such a use means the same under the
    new name (``isinstance(m, Old)``), or where it is passed as a keyword the fix follows
    (``enable_wrap(wrapper_cls=Old)``, FSDP301).

    Args:
        rule: The rule whose old name the import brings in.
        old: The old name the import matched.
        bare: None for a use that is called, given arguments or looked into; else the
            keyword it is passed as (``""`` for none).

    Example:
        >>> from codemods.registry import REGISTRY
        >>> keeps_spelling(REGISTRY["FSDP123"], "torch.distributed._tensor.DTensor")
        True
        >>> fairscale = "fairscale.nn.FullyShardedDataParallel"
        >>> keeps_spelling(REGISTRY["FSDP301"], fairscale)
        False
        >>> keeps_spelling(REGISTRY["FSDP301"], fairscale, bare="wrapper_cls")
        True
    """
    if not rule.fixable or new_name(rule, old) is None:
        return False  # no rename (or a manual one): each use is for a human
    fix = fix_for(rule)
    rewritten = fix.translate is not unchanged and (fix.calls_of is None or old in fix.calls_of)
    if rewritten:  # calls are rewritten too
        followed = {keyword for _, keyword in fix.passed_as}
        if bare is None or not (fix.bare_references or bare in followed):
            return False
    return True


class Planner:
    """Builds the :class:`Plan` for a module, asking the engine about its names.

    Args:
        engine: Answers name questions from libcst metadata (``parent``, ``find``,
            ``imported``, ``new_name``, ``silenced``, ``qualified``), tells which
            statements hold nothing to plan from (``cold``) and knows the run's
            settings (``settings.can_fix``, ``settings.applies_fix``).
    """

    def __init__(self, engine: PlanningEngine) -> None:
        self.resolver: Resolver = engine
        self.parent = engine.parent
        self.find = engine.find
        self.imported = engine.imported
        self.new_name = engine.new_name
        self.can_fix = engine.settings.can_fix
        self.applies_fix = engine.settings.applies_fix
        self.silenced = engine.silenced
        self.cold = engine.cold
        self.position = engine.position
        self.bindings = engine.bindings

    def plan(self, module: cst.Module, parents: dict[Any, Any] | None = None) -> Plan:
        """The plan for ``module``; ``parents`` gets the parents of the nodes it reached."""
        from codemods.rules.plan_walk import Collector

        collector = Collector(self.find, self.imported, self.silenced, self.rebound, self.cold)
        collector.collect(module, parents)
        plan = Plan(present=set(collector.olds))
        exported = self._exported(module) if plan.present else {}
        by_rule: dict[str, list[Reference]] = {}
        # The walk takes each node's last child first: reversed, its uses (none inside
        # another) are in source order, and the first doubtful one is the ast planner's.
        for reference in (Reference(*found) for found in reversed(collector.references)):
            by_rule.setdefault(reference.rule.code, []).append(reference)
        certain: set[str] = set()
        for code in plan.present:
            if fix_for(REGISTRY[code]) is None:
                continue
            if code in exported:
                plan.why_not[code] = exported[code]
                continue
            doubtful = next((r for r in by_rule.get(code, ()) if not self.certain(r)), None)
            if code not in collector.held and doubtful is None:
                certain.add(code)
                continue
            line = self.position(doubtful.node).start.line if doubtful is not None else None
            reasons = self.blockers(doubtful) if doubtful is not None else []
            plan.why_not[code] = why_not(code, line, code in collector.held, False, reasons)  # type: ignore[assignment]
        clashes = self._clashes(certain, collector.olds)
        clashes |= self._shadowed(certain - clashes, collector.olds)
        certain -= clashes
        plan.why_not.update((code, why_not(code, None, False, True)) for code in clashes)  # type: ignore[misc]
        candidates = {c for c in certain if self.can_fix(REGISTRY[c])}
        plan.fixable = self._settle(candidates, plan.present)
        for code in candidates - plan.fixable:
            plan.why_not[code] = why_not_settled(code, plan.present)
        plan.applies = self._settle(
            {c for c in plan.fixable if self.applies_fix(REGISTRY[c])}, plan.present
        )
        for code in plan.applies:
            plan.superseded.update(fix_for(REGISTRY[code]).supersedes)
        return plan

    def _exported(self, module: cst.Module) -> dict[str, str]:
        from codemods.rules.plan_exports import cst_exported

        return cst_exported(module, self.imported, new_name)

    def rebound(self, node: cst.Import | cst.ImportFrom) -> set[str]:
        """Rules whose old name ``node`` imports under a name the same scope binds otherwise.

        ``if have_fairscale: from fairscale.nn import FSDP`` / ``else: FSDP = None``: a
        use of ``FSDP`` is not certainly the old name, so its calls are not translated,
        and moving the import alone would leave them with the old arguments.
        """
        if isinstance(node.names, cst.ImportStar):
            return set()
        scope = self.resolver.scope(node)
        codes: set[str] = set()
        for alias in node.names:
            if isinstance(node, cst.Import) and alias.asname is None:
                continue  # `import a.b` binds the package `a`, not the old name
            rules = {rule.code for _, rule in self.imported(node.with_changes(names=[alias]))}
            if not rules or scope is None:
                continue
            local = alias.evaluated_alias or alias.evaluated_name
            for assignment in scope.assignments[local]:
                other = getattr(assignment, "node", None)
                if other is node:
                    continue
                same = isinstance(other, (cst.Import, cst.ImportFrom)) and rules <= {
                    rule.code for _, rule in self.imported(other)
                }
                if not same:
                    codes |= rules
        return codes

    def _shadowed(self, codes: set[str], olds: dict[str, set[str]]) -> set[str]:
        from codemods.rules.plan_shadows import shadowed_renames

        return shadowed_renames(codes, olds, self.bindings, new_name)

    def _clashes(self, codes: set[str], olds: dict[str, set[str]]) -> set[str]:
        """Rules whose renames would give one short name two meanings in the file."""
        by_leaf: dict[str, dict[str, set[str]]] = {}  # leaf -> new name -> codes
        for code in codes:
            for old in olds[code]:
                new = self.new_name(REGISTRY[code], old)
                if new:
                    by_leaf.setdefault(new.rpartition(".")[2], {}).setdefault(new, set()).add(code)
        return {
            code
            for news in by_leaf.values()
            if len(news) > 1
            for group in news.values()
            for code in group
        }

    @staticmethod
    def _settle(candidates: set[str], present: set[str]) -> set[str]:
        """Drop fixes whose companions stay behind or whose blockers are present."""
        chosen = set(candidates)
        changed = True
        while changed:
            changed = False
            for code in sorted(chosen):
                fix = fix_for(REGISTRY[code])
                missing = [r for r in fix.requires if r in present and r not in chosen]
                if missing or any(b in present for b in fix.blocked_by):
                    chosen.discard(code)
                    changed = True
        return chosen

    def certain(self, reference: Reference) -> bool:
        """Whether the fix of ``reference.rule`` is certain about this use."""
        fix = fix_for(reference.rule)
        node = reference.node
        parent = self.parent(node)
        if reference.qualified != reference.old:  # `Old.attribute`: a bare use of the class
            return fix.bare_references
        if isinstance(parent, cst.Call) and parent.func is node:
            return self.translate(reference.rule, reference.old, parent, parent) is not None
        call = self.partial_of(node)
        if call is not None and fix.partials:
            return self.translate(reference.rule, reference.old, call, call, True) is not None
        if isinstance(parent, cst.Arg) and parent.keyword is not None:
            outer = self.parent(parent)
            for code, keyword in fix.passed_as:
                if parent.keyword.value == keyword and isinstance(outer, cst.Call):
                    found = self.find(outer.func)
                    if found is not None and found[1].code == code:
                        return self.translate(found[1], found[0], outer, outer) is not None
        return fix.bare_references

    def blockers(self, reference: Reference) -> list[str]:
        """Why the fix leaves ``reference``, where it is a call the fix can say that of."""
        fix, node = fix_for(reference.rule), reference.node
        parent = self.parent(node)
        if fix.blockers is None or reference.qualified != reference.old:
            return []
        if isinstance(parent, cst.Call) and parent.func is node:
            return fix.blockers(Site(self.resolver, reference.old, parent, parent))
        call = self.partial_of(node)
        if call is not None:
            return fix.blockers(Site(self.resolver, reference.old, call, call, True))
        return []

    def translate(
        self, rule: Rule, old: str, original: cst.Call, updated: cst.Call, partial: bool = False
    ) -> Translation | None:
        """``rule``'s translation of one call (None where it is not certain)."""
        return fix_for(rule).translate(Site(self.resolver, old, original, updated, partial))

    def partial_of(self, node: cst.BaseExpression) -> cst.Call | None:
        """The ``functools.partial(node, ...)`` call ``node`` is the function of, if any."""
        arg = self.parent(node)
        call = self.parent(arg) if isinstance(arg, cst.Arg) else None
        if not (isinstance(call, cst.Call) and call.args and call.args[0] is arg):
            return None
        if not is_plain_positional(arg) or PARTIAL not in self.resolver.qualified(call.func):
            return None
        return call


__all__ = ["Plan", "Planner", "Reference"]
