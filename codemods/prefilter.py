"""The cheap text test that decides which files are worth parsing at all.

libcst parses about 15 times slower than ``ast``, so a file is parsed only if its bytes
could hold a finding. For each rule that means, in this order:

- an import statement naming the package root of one of its old names (any use of an
  old name needs one; a rule found in the user's own definitions needs none);
- for each old name, its last part and its parent's both appear (however it is imported
  or aliased, both are spelled somewhere: ``from compat.fsdp.wrap import X as Y`` and
  ``w.X`` after ``import compat.fsdp.wrap as w`` alike); for a call rule, the argument
  and the callable's last part; for a value rule, one of the old values.

Each test only ever rules a file out where no finding can be; the suite checks that no
fixture or registry example with a finding is ruled out. Files that pass go through a
second, ``ast``-based stage (:mod:`codemods.namescan`) before libcst parses them.
"""

from __future__ import annotations

import codecs
import functools
import re
from dataclasses import dataclass

from codemods.registry import REGISTRY, ChangeKind, Rule
from codemods.settings import DEFINITION_RULES, Settings

#: An import statement's line (``from x import y``, ``import a, b as c``, ``import os; ...``).
_IMPORT_LINE = re.compile(rb"(?m)^[ \t]*(?:from|import)[ \t][^\n]*")
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")


def imported_names(source: bytes) -> frozenset[bytes]:
    r"""Every identifier on the import lines of ``source`` (a superset of its package roots).

    Example:
        >>> sorted(imported_names(b"import os, torch.nn as tnn\nx = 1\n"))
        [b'as', b'import', b'nn', b'os', b'tnn', b'torch']
    """
    source = source.removeprefix(codecs.BOM_UTF8)  # a BOM would hide a first-line import
    return frozenset(
        name for line in _IMPORT_LINE.findall(source) for name in _IDENTIFIER.findall(line)
    )


@dataclass(frozen=True)
class RuleFilter:
    """What must appear in a file for one rule to find anything in it.

    Attributes:
        roots: Package roots, one of which an import line must name; empty where the
            rule needs no import.
        words: Alternatives, each a group of words that must all appear.
        pattern: For value rules: a pattern one of the old values matches.
    """

    roots: frozenset[bytes]
    words: tuple[tuple[bytes, ...], ...] = ()
    pattern: re.Pattern[bytes] | None = None

    def admits(self, source: bytes, scan: _Scan | None = None) -> bool:
        """Whether ``source`` may hold a finding.

        The cheapest tests come first: substring searches for a package root and the
        words (longest, likely rarest, first), then the import lines, then word
        boundaries and value patterns. ``scan`` shares the searches and the import lines
        between the rules checking one file.
        """
        scan = scan or _Scan(source)
        if self.roots and not any(scan.contains(root) for root in self.roots):
            return False  # no package root anywhere: certainly no import of one
        candidates = [g for g in self.words if all(scan.contains(word) for word in g)]
        if not candidates:
            return False
        if self.roots and not self.roots & scan.imported():
            return False
        if self.pattern is not None and self.pattern.search(source) is None:
            return False
        return any(all(_spelled(word, source) for word in group) for group in candidates)


class _Scan:
    """What the rules ask of one file, each answered once."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self._contains: dict[bytes, bool] = {}
        self._imported: frozenset[bytes] | None = None

    def contains(self, word: bytes) -> bool:
        found = self._contains.get(word)
        if found is None:
            found = self._contains[word] = word in self.source
        return found

    def imported(self) -> frozenset[bytes]:
        if self._imported is None:
            self._imported = imported_names(self.source)
        return self._imported


@functools.cache
def _word(word: bytes) -> re.Pattern[bytes]:
    return re.compile(rb"\b" + re.escape(word) + rb"\b")


def _spelled(word: bytes, source: bytes) -> bool:
    """``word`` appears as a whole identifier (``wrap`` not inside ``auto_wrap_policy``)."""
    return word in source and _word(word).search(source) is not None


def _name_words(name: str) -> tuple[bytes, ...]:
    """The words a use of the qualified ``name`` must spell: its last part and its parent's."""
    parts = name.split(".")
    return tuple(dict.fromkeys(part.encode() for part in parts[-2:] if part != parts[0]))


def rule_filter(rule: Rule) -> RuleFilter:
    r"""The :class:`RuleFilter` of ``rule``.

    Example:
        >>> f = rule_filter(REGISTRY["FSDP101"])
        >>> f.admits(b"from torch.distributed.fsdp.wrap import default_auto_wrap_policy")
        True
        >>> f.admits(b"import torch\ndefault_auto_wrap_policy = 1")
        False
    """
    roots = frozenset(name.split(".")[0].encode() for name in rule.old)
    callables = tuple(sorted({(name.rpartition(".")[2].encode(),) for name in rule.old}))
    if rule.code in DEFINITION_RULES:  # the user's own policies: no import needed
        return RuleFilter(frozenset(), ((rule.argument.encode(),),))
    if rule.kind is ChangeKind.STRING_VALUE:
        words = [re.escape(str(v)) for v, _ in rule.values if isinstance(v, str)]
        numbers = [str(v) for v, _ in rule.values if isinstance(v, int)]
        if numbers:  # a bare number is too common: look for `argument=16`
            words.append(rf"\b{rule.argument}\s*=\s*(?:{'|'.join(numbers)})\b")
        return RuleFilter(roots, callables, re.compile("|".join(words).encode()))
    if rule.argument is None or rule.kind is ChangeKind.DEFAULT_CHANGE:
        groups = {_name_words(name) for name in rule.old}
    else:  # a call's argument (or a partial's): the argument and the callable
        groups = {(rule.argument.encode(), name.rpartition(".")[2].encode()) for name in rule.old}
    return RuleFilter(roots, tuple(sorted(_longest_first(g) for g in groups)))


def _longest_first(group: tuple[bytes, ...]) -> tuple[bytes, ...]:
    return tuple(sorted(group, key=len, reverse=True))


@functools.lru_cache(maxsize=16)
def _filters(settings: Settings) -> tuple[RuleFilter, ...]:
    return tuple(rule_filter(rule) for rule in REGISTRY if settings.enabled(rule))


def may_have_findings(source: bytes, settings: Settings) -> bool:
    """False only where no rule enabled by ``settings`` can find anything in ``source``."""
    scan = _Scan(source)
    return any(f.admits(source, scan) for f in _filters(settings))


def worth_parsing(source: bytes, settings: Settings) -> bool:
    """Both stages: the text test, then :mod:`codemods.namescan`'s ``ast`` scan."""
    from codemods import namescan

    return may_have_findings(source, settings) and namescan.may_have_findings(source, settings)
