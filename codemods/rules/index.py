"""Each rule's behaviour, and the registry indexed by what the engine meets in a file.

A rule behaves as its own module says (:mod:`codemods.rules`), else as its kind does
(:mod:`codemods.rules.kinds`). Whether a rule's fix exists follows from that behaviour; the
suite requires every rule not marked manual to turn its example into its ``after``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from pathlib import Path

from codemods.registry import REGISTRY, ChangeKind, Rule
from codemods.registry.names import MODULES_NAMED_LIKE_FUNCTIONS
from codemods.rules import own_behaviours
from codemods.rules.api import Behaviour, CallSiteFix
from codemods.rules.kinds.call_argument import ArgumentReported
from codemods.rules.kinds.default_change import DefaultChange
from codemods.rules.kinds.keyword_rename import KeywordRename
from codemods.rules.kinds.method_rename import MethodRename
from codemods.rules.kinds.reference import Renamed, Reported
from codemods.rules.kinds.string_value import StringValue

_BY_KIND: dict[ChangeKind, type[Behaviour]] = {
    ChangeKind.SYMBOL_RENAME: Renamed,
    ChangeKind.REMOVAL: Reported,
    ChangeKind.KEYWORD_RENAME: KeywordRename,
    ChangeKind.STRING_VALUE: StringValue,
    ChangeKind.METHOD_RENAME: MethodRename,
    ChangeKind.DEFAULT_CHANGE: DefaultChange,
}


@functools.cache
def behaviour_for(rule: Rule) -> Behaviour:
    """The behaviour of ``rule`` (one instance per rule; behaviours keep no state)."""
    own = own_behaviours().get(rule.code)
    if own is not None:
        return own(rule)
    if rule.kind is ChangeKind.CALL_REWRITE:
        return (ArgumentReported if rule.argument else Reported)(rule)
    return _BY_KIND[rule.kind](rule)


def where_it_lives(rule: Rule) -> list[str]:
    """The files a rule is written in: its registry entry, then its behaviour's module.

    Paths are relative to the directory holding ``codemods`` where they are inside it.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> where_it_lives(REGISTRY["FSDP208"])
        ['codemods/registry/lightning_strategy_rules.py', 'codemods/rules/fsdp208.py']
    """
    package = Path(__file__).resolve().parents[1]
    entry = f'code="{rule.code}"'
    files = [
        path
        for path in sorted((package / "registry").glob("*.py"))
        if entry in path.read_text(encoding="utf-8")
    ]
    source = inspect.getsourcefile(type(behaviour_for(rule)))
    if source is not None:
        files.append(Path(source).resolve())
    return [_shown(path, package.parent) for path in files]


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def fix_for(rule: Rule) -> CallSiteFix | None:
    """The rename fix of ``rule``, or None where its fix renames nothing."""
    return behaviour_for(rule).rename


class Index:
    """The behaviours of some rules, by what the engine looks up as it visits a file."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.references: dict[str, Behaviour] = {}  # any use of the name is a finding
        self.calls: dict[str, list[Behaviour]] = {}  # calls of the name are inspected
        self.partials: dict[str, list[Behaviour]] = {}  # partial(name, ...) is inspected
        self.definitions: list[Behaviour] = []
        self.classes: list[Behaviour] = []
        self.blocks: list[Behaviour] = []
        self.modules: list[Behaviour] = []
        for rule in rules:
            behaviour = behaviour_for(rule)
            for name in behaviour.references():
                self.references[name] = behaviour
            for name in behaviour.calls():
                self.calls.setdefault(name, []).append(behaviour)
            for name in behaviour.partials():
                self.partials.setdefault(name, []).append(behaviour)
            if behaviour.definitions:
                self.definitions.append(behaviour)
            if behaviour.classes:
                self.classes.append(behaviour)
            if behaviour.blocks:
                self.blocks.append(behaviour)
            if behaviour.modules:
                self.modules.append(behaviour)

    def reference(self, qualified: str, module: bool = False) -> tuple[str, Rule] | None:
        """The old name and rule of a reference to ``qualified`` (or to something inside it).

        ``module`` says ``qualified`` certainly names a module (``import a.b``). A module
        that shares its name with a function (:data:`MODULES_NAMED_LIKE_FUNCTIONS`) is
        not that function, nor is anything inside it.

        Example:
            >>> INDEX.reference("fairscale.nn.wrap")[1].code  # fairscale.nn's wrap()
            'FSDP303'
            >>> INDEX.reference("fairscale.nn.wrap.enable_wrap")[1].code
            'FSDP302'
            >>> INDEX.reference("fairscale.nn.wrap.config_auto_wrap_policy") is None
            True
            >>> INDEX.reference("fairscale.nn.wrap", module=True) is None
            True
        """
        probe = qualified
        while probe:
            shadowed = probe in MODULES_NAMED_LIKE_FUNCTIONS and (module or probe != qualified)
            if probe in self.references and not shadowed:
                return probe, self.references[probe].rule
            probe = probe.rpartition(".")[0]
        return None


INDEX = Index(REGISTRY.rules)
