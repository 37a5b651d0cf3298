"""Each rule's behaviour, and the registry indexed by what the engine meets in a file.

A rule behaves as its own module says (:mod:`codemods.rules`), else as its kind does
(:mod:`codemods.rules.kinds`). Whether a rule's fix exists follows from that behaviour; the
suite requires every rule not marked manual to turn its example into its ``after``.

The shipped registry's index (:data:`INDEX`) is read from :data:`TABLE`, written by
``python -m codemods.rules.index``: the names each rule looks for, without loading the
behaviour modules, which load when a file meets one of the names (a commit hook's
one-file lint paid about 13 ms of CPU for loading all of them, issue 44).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from codemods.registry import REGISTRY, ChangeKind, Rule
from codemods.registry.names import MODULES_NAMED_LIKE_FUNCTIONS
from codemods.rules.api import Behaviour, CallSiteFix

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import overload

#: The shipped registry's index (:func:`table`), read instead of loading every behaviour.
TABLE = Path(__file__).with_name("index_table.txt")
#: What a behaviour answers with names, then what it says by a flag.
NAMED = ("references", "calls", "partials")
FLAGS = ("definitions", "classes", "blocks", "modules")

#: Each kind's behaviour, as ``(module of codemods.rules.kinds, class)``: a module is
#: imported for the first rule that needs it (a one-file lint meets few kinds).
_BY_KIND: dict[ChangeKind, tuple[str, str]] = {
    ChangeKind.SYMBOL_RENAME: ("reference", "Renamed"),
    ChangeKind.REMOVAL: ("reference", "Reported"),
    ChangeKind.KEYWORD_RENAME: ("keyword_rename", "KeywordRename"),
    ChangeKind.STRING_VALUE: ("string_value", "StringValue"),
    ChangeKind.METHOD_RENAME: ("method_rename", "MethodRename"),
    ChangeKind.DEFAULT_CHANGE: ("default_change", "DefaultChange"),
}


@functools.cache
def behaviour_for(rule: Rule) -> Behaviour:
    """The behaviour of ``rule`` (one instance per rule; behaviours keep no state)."""
    own = _own_behaviour(rule.code)
    if own is not None:
        return own(rule)
    if rule.kind is ChangeKind.CALL_REWRITE and rule.argument:
        module, name = "call_argument", "ArgumentReported"
    elif rule.kind is ChangeKind.CALL_REWRITE:
        module, name = _BY_KIND[ChangeKind.REMOVAL]
    else:
        module, name = _BY_KIND[rule.kind]
    return getattr(importlib.import_module(f"codemods.rules.kinds.{module}"), name)(rule)


def _own_behaviour(code: str) -> type[Behaviour] | None:
    """The behaviour class of the rule's own module (:mod:`codemods.rules`), if it has one.

    Only that module is imported (``codemods.rules.own_behaviours`` imports them all).
    """
    name = f"codemods.rules.{code.lower()}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name == name:
            return None
        raise
    return module.BEHAVIOUR


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
    import inspect  # here: a lint never asks, and inspect costs it about 3 ms to import

    source = inspect.getsourcefile(type(behaviour_for(rule)))
    if source is not None:
        files.append(Path(source).resolve())
    return [_shown(path, package.parent) for path in files]


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def fix_for(rule: Rule) -> CallSiteFix | None:
    """The rename fix of ``rule``, or None where its fix renames nothing."""
    return behaviour_for(rule).rename


class Behaviours(Sequence[Behaviour]):
    """Some rules' behaviours, each loaded when first asked for.

    Attributes:
        rules: The rules, in the registry's order.
    """

    __slots__ = ("rules",)

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules = list(rules)

    if TYPE_CHECKING:

        @overload
        def __getitem__(self, index: int) -> Behaviour: ...

        @overload
        def __getitem__(self, index: slice) -> list[Behaviour]: ...

    def __getitem__(self, index: int | slice) -> Behaviour | list[Behaviour]:
        if isinstance(index, slice):
            return [behaviour_for(rule) for rule in self.rules[index]]
        return behaviour_for(self.rules[index])

    def __len__(self) -> int:
        return len(self.rules)

    def where(self, keep: Callable[[Rule], bool]) -> list[Behaviour]:
        """The behaviours of the rules ``keep`` accepts; the others are not loaded."""
        return [behaviour_for(rule) for rule in self.rules if keep(rule)]


class _ByName(Mapping[str, Behaviour]):
    """A name's behaviour, loaded when looked up (:attr:`Index.references`)."""

    def __init__(self, rules: dict[str, Rule]) -> None:
        self.rules = rules

    def __getitem__(self, name: str) -> Behaviour:
        return behaviour_for(self.rules[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)


def entries(rules: Iterable[Rule]) -> Iterator[tuple[Rule, str, str]]:
    """What each rule's behaviour looks for: ``(rule, what, name)``, ``(rule, flag, "")``."""
    for rule in rules:
        behaviour = behaviour_for(rule)
        for what in NAMED:
            for name in getattr(behaviour, what)():
                yield rule, what, name
        for flag in FLAGS:
            if getattr(behaviour, flag):
                yield rule, flag, ""


def table(rules: Iterable[Rule]) -> str:
    """The text of ``index_table.txt`` for ``rules``: an entry a line, tab-separated.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> table(REGISTRY.rules).splitlines()[0].split()
        ['FSDP101', 'references', 'torch.distributed.fsdp.wrap.default_auto_wrap_policy']
    """
    rows = (f"{rule.code}\t{what}\t{name or '-'}\n" for rule, what, name in entries(rules))
    return "".join(rows)


class Index:
    """The behaviours of some rules, by what the engine looks up as it visits a file.

    ``Index(rules)`` asks each rule's behaviour; :meth:`from_table` reads the same from
    :data:`TABLE`, and loads a behaviour only when it is looked up.
    """

    def __init__(self, rules: Iterable[Rule], found: Iterable[tuple[Rule, str, str]] = ()) -> None:
        references: dict[str, Rule] = {}  # any use of the name is a finding
        self.references = _ByName(references)
        self.calls: dict[str, Behaviours] = {}  # calls of the name are inspected
        self.partials: dict[str, Behaviours] = {}  # partial(name, ...) is inspected
        self.definitions = Behaviours()
        self.classes = Behaviours()
        self.blocks = Behaviours()
        self.modules = Behaviours()
        self._found: dict[tuple[str, bool], tuple[str, Rule] | None] = {}  # see reference
        for rule, what, name in (*entries(rules), *found):
            if what == "references":
                references[name] = rule
            elif what in NAMED:
                by_name = getattr(self, what)
                behaviours = by_name.get(name)
                if behaviours is None:  # made once a name: the shipped index is read per start
                    behaviours = by_name[name] = Behaviours()
                behaviours.rules.append(rule)
            else:
                getattr(self, what).rules.append(rule)

    @classmethod
    def from_table(cls, text: str) -> Index:
        """The index :func:`table` wrote for the shipped registry."""
        rules = {rule.code: rule for rule in REGISTRY}
        rows = (line.split("\t") for line in text.splitlines())
        return cls((), ((rules[code], what, name) for code, what, name in rows))

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
        key = (qualified, module)
        if key in self._found:  # a run asks the same names in file after file
            return self._found[key]
        found = None
        probe = qualified
        while probe:
            shadowed = probe in MODULES_NAMED_LIKE_FUNCTIONS and (module or probe != qualified)
            rule = self.references.rules.get(probe)
            if rule is not None and not shadowed:
                found = probe, rule
                break
            probe = probe.rpartition(".")[0]
        self._found[key] = found
        return found


def _shipped() -> Index:
    try:
        text = TABLE.read_text(encoding="utf-8")
        return Index.from_table(text)
    except (OSError, KeyError, ValueError):  # no data, or a table older than the registry
        return Index(REGISTRY.rules)


INDEX = _shipped()

if __name__ == "__main__":
    TABLE.write_text(table(REGISTRY.rules), encoding="utf-8")
