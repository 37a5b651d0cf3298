"""The shape of a registry entry: one API change of torch, Lightning or FairScale.

Everything here is plain data so that the registry imports without torch: the lint
hook, the codemod, the runtime layer and the docs all read the same entries.
"""

from __future__ import annotations

import enum

#: ``typing`` is for the checkers alone: at run time the named tuples are made by
#: :mod:`codemods.registry.named_tuple`, their annotations left as strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple, Union

    #: A literal that a string-value rule maps (``"fsdp_native"``, ``16``).
    Literal = Union[str, int]
else:
    from codemods.registry.named_tuple import NamedTuple


class Framework(str, enum.Enum):
    """The project whose API changed."""

    TORCH = "torch"
    LIGHTNING = "lightning"
    FAIRSCALE = "fairscale"

    @property
    def display(self) -> str:
        """The name as users write it in prose."""
        return {"torch": "torch", "lightning": "Lightning", "fairscale": "FairScale"}[self.value]


class ChangeKind(str, enum.Enum):
    """What sort of edit turns the old spelling into the new one."""

    SYMBOL_RENAME = "symbol rename"
    KEYWORD_RENAME = "keyword rename"
    CALL_REWRITE = "call rewrite"
    METHOD_RENAME = "method rename"
    STRING_VALUE = "string value change"
    DEFAULT_CHANGE = "default value change"
    REMOVAL = "removal"


class FixSafety(str, enum.Enum):
    """How far an automatic fix can be trusted (ruff's notion of fix safety).

    ``SAFE`` fixes keep behaviour and are applied by default; ``UNSAFE`` fixes may
    change behaviour and need ``--unsafe-fixes``; ``MANUAL`` findings are reported
    for a human.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    MANUAL = "manual"


class Example(NamedTuple):
    """A before/after pair of complete, parseable Python snippets."""

    before: str
    after: str

    @classmethod
    def reported_only(cls, source: str) -> Example:
        r"""A case the rule reports and leaves for a human: ``after`` is ``before``.

        Example:
            >>> case = Example.reported_only("import old\n")
            >>> case.after == case.before
            True
        """
        return cls(source, source)


class Rule(NamedTuple):
    """One API change, with everything the lint, the codemod, ``compat`` and the docs need.

    Attributes:
        code: Stable rule code used in ``--select`` and ``# noqa`` (``FSDP101``).
        name: Short kebab-case name (``default-auto-wrap-policy``).
        framework: The project whose API changed.
        kind: What sort of edit the change is.
        old: Every fully qualified name the old spelling is reachable under. For a
            keyword or value change these are the callables that take ``argument``.
        new: The fully qualified current spelling, or ``None`` where nothing replaces it.
        message: One line: what is wrong and what to write instead.
        why: Why the old spelling is a problem (shown by ``--explain`` and the docs).
        example: A before/after pair; ``after`` is what the fix produces.
        fix: The safety of the automatic fix.
        introduced: Release that introduced the new form, if known (a release of
            ``framework``; for FairScale rules, of torch: see ``version_framework``).
        deprecated: Release that started warning about the old form, if any.
        removed: Release that removed the old form, if it is gone.
        argument: The old keyword argument, for keyword and value changes.
        new_argument: The keyword that replaces ``argument``, if it is renamed.
        values: Old-to-new literal pairs, for string value changes.
        references: Upstream PRs, issues or docs that record the change.
        opt_in: Not reported unless selected by code (advice rather than a deprecation).
        keeps_name: ``new`` is a module, and each old name moves there under its own
            last part (``compat.fsdp.wrap.wrap`` to ``torch.distributed.fsdp.wrap.wrap``).
        flat: ``old`` and ``new`` are modules and the new one keeps none of the old one's
            submodules: a name imported from a submodule of ``old`` moves to ``new``
            itself (``from torch.distributed._composable.fsdp.fully_shard import
            fully_shard`` to ``from torch.distributed.fsdp import fully_shard``).
        in_definitions: ``argument`` is also found as a parameter of the user's own
            functions and lambdas (a policy written for the old keyword), with no import.
        cases: More before/after pairs the fix must reproduce, beyond ``example``;
            ``after`` equal to ``before`` (:meth:`Example.reported_only`) for a form
            that is reported and left for a human. A manual rule's cases are all such.
        untouched: Snippets that look like the old spelling but must give no finding
            and no change (Fixit's VALID cases).
        warns: Regular expressions, each matching the text of one deprecation warning
            that torch or Lightning emits for the old spelling and that this rule
            answers (the deprecation census maps the installed releases' warnings to
            rules through them).
        unsafe_forms: For a rule whose fix is safe, the forms where it is unsafe (applied
            only with ``--unsafe-fixes``, and named in the docs' fix column), as a phrase
            completing "unsafe for ...".
        dual_stack: Where a range starts below ``introduced`` (and reaches it), the fix
            writes the new form beside the old one, chosen at run time by whether the
            new form imports: that runs on every release of the range.
        found_in: Qualified names any use of which the rule's own behaviour inspects,
            beyond what its kind looks for (a positional form of ``argument``, a string
            spelling on another callable). Where set, the pre-filter admits every file
            that uses one of them, and the kind's narrower test is not applied.
    """

    code: str
    name: str
    framework: Framework
    kind: ChangeKind
    old: tuple[str, ...]
    new: str | None
    message: str
    why: str
    example: Example
    fix: FixSafety
    introduced: str | None = None
    deprecated: str | None = None
    removed: str | None = None
    argument: str | None = None
    new_argument: str | None = None
    values: tuple[tuple[Literal, Literal], ...] = ()
    references: tuple[str, ...] = ()
    opt_in: bool = False
    keeps_name: bool = False
    flat: bool = False
    in_definitions: bool = False
    cases: tuple[Example, ...] = ()
    untouched: tuple[str, ...] = ()
    warns: tuple[str, ...] = ()
    found_in: tuple[str, ...] = ()
    unsafe_forms: str = ""
    dual_stack: bool = False

    def new_for(self, old: str) -> str | None:
        """The new spelling of one of the old names (None for removals).

        Example:
            >>> from codemods.registry import REGISTRY
            >>> REGISTRY["FSDP113"].new_for("compat.fsdp.wrap.ModuleWrapPolicy")
            'torch.distributed.fsdp.wrap.ModuleWrapPolicy'
        """
        if self.new is None or not self.keeps_name:
            return self.new
        return f"{self.new}.{old.rpartition('.')[2]}"

    @property
    def old_spelling(self) -> str:
        """The old form as one readable string, e.g. ``f(unwrapped_params=...)``."""
        return _spell(self.old[0], self.argument)

    @property
    def short_old_spelling(self) -> str:
        """The old form with a keyword's callable unqualified, for messages.

        Example:
            >>> from codemods.registry import REGISTRY
            >>> REGISTRY["FSDP204"].short_old_spelling
            'Trainer(strategy=...)'
        """
        name = self.old[0].rsplit(".", 1)[-1]
        if self.kind is ChangeKind.DEFAULT_CHANGE:
            return f"{name}(...) without {self.argument}="
        if self.argument:
            return _spell(name, self.argument)
        return self.old[0]

    @property
    def version_framework(self) -> Framework:
        """Whose releases the version fields count.

        FairScale never deprecated its FSDP, so FairScale rules are dated by the torch
        release that offers the replacement.
        """
        return Framework.TORCH if self.framework is Framework.FAIRSCALE else self.framework

    @property
    def fixable(self) -> bool:
        """Whether an automatic fix exists (safe or unsafe)."""
        return self.fix is not FixSafety.MANUAL


class Capability(NamedTuple):
    """A version-gated feature that is not a rename: what a feature flag checks.

    Attributes:
        name: The feature flag's name in :mod:`compat.features`.
        framework: The project that gained the feature.
        since: First release that has it.
        summary: One line saying what became possible.
        note: What happens before ``since``, or caveats seen on real runs.
    """

    name: str
    framework: Framework
    since: str
    summary: str
    note: str = ""


class Registry:
    """The whole table: rules by code, and the capabilities feature flags test for.

    Attributes:
        rules: The rules, each code once.
        capabilities: The capabilities.
    """

    __slots__ = ("_by_code", "capabilities", "rules")

    def __init__(self, rules: tuple[Rule, ...], capabilities: tuple[Capability, ...] = ()):
        codes = [rule.code for rule in rules]
        duplicates = sorted({code for code in codes if codes.count(code) > 1})
        if duplicates:
            raise ValueError(f"duplicate rule codes in the registry: {', '.join(duplicates)}")
        self.rules = rules
        self.capabilities = capabilities
        self._by_code = {rule.code: rule for rule in rules}

    def __repr__(self) -> str:
        return f"Registry(rules={self.rules!r}, capabilities={self.capabilities!r})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Registry:
            return NotImplemented
        return (self.rules, self.capabilities) == (other.rules, other.capabilities)

    def __hash__(self) -> int:
        return hash((self.rules, self.capabilities))

    def __getitem__(self, code: str) -> Rule:
        rule = self._by_code.get(code)
        if rule is not None:
            return rule
        raise KeyError(f"no rule {code!r}; known codes: {', '.join(r.code for r in self.rules)}")

    def __iter__(self):
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def capability(self, name: str) -> Capability:
        """Return the capability called ``name``.

        Raises:
            KeyError: If there is none.
        """
        for cap in self.capabilities:
            if cap.name == name:
                return cap
        raise KeyError(f"no capability {name!r}")


def _spell(qualified: str, argument: str | None) -> str:
    return f"{qualified}({argument}=...)" if argument else qualified
