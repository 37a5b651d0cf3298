"""The cheap text test that decides which files are worth parsing at all.

libcst parses about 15 times slower than ``ast``, so a file is parsed only if its bytes
could hold a finding. A use of an old name ``a.b.P.X`` needs an import of its package
``a``, and wherever the name is bound, its text shows either ``P.X`` (a dotted use or
import) or ``P`` on an import line with ``X`` spelled somewhere (``from a.b.P import X
as Y``, or ``import a.b.P as m`` and then ``m.X``). So, for each rule:

- a package root of its old names appears in the file and on an import line (a rule
  found in the user's own definitions needs no import);
- for one of its old names, ``P.X`` appears, or ``P`` is on an import line and ``X``
  is spelled as a whole word; a call rule also needs its argument spelled, a hook rule
  its hook, a value rule one of its old values.

Plain substring searches come first and are shared by the rules checking a file; the
import lines are scanned only when a rule gets that far. Each test only rules a file out
where no finding can be; the suite checks that no fixture or registry example with a
finding is ruled out. Files that pass go through a second, ``ast``-based stage
(:mod:`codemods.namescan`) before libcst parses them.
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


class _Scan:
    """What the rules ask of one file, each answered once."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self._contains: dict[bytes, bool] = {}
        self._imported: frozenset[bytes] | None = None

    def contains(self, text: bytes) -> bool:
        found = self._contains.get(text)
        if found is None:
            found = self._contains[text] = text in self.source
        return found

    def spelled(self, word: bytes) -> bool:
        """``word`` appears as a whole identifier (``wrap`` not inside ``auto_wrap_policy``)."""
        return self.contains(word) and _word(word).search(self.source) is not None

    def imported(self) -> frozenset[bytes]:
        if self._imported is None:
            self._imported = imported_names(self.source)
        return self._imported


@functools.cache
def _word(word: bytes) -> re.Pattern[bytes]:
    return re.compile(rb"\b" + re.escape(word) + rb"\b")


@dataclass(frozen=True)
class RuleFilter:
    """What must appear in a file for one rule to find anything in it.

    Attributes:
        roots: Package roots, one of which an import line must name; empty where the
            rule needs no import.
        names: ``(P, X)`` for each old name ``...P.X`` (or each callable, for call rules).
        word: A word that must also be spelled: a call rule's argument, a hook's name,
            a definition rule's parameter.
        pattern: For value rules: a pattern one of the old values matches.
    """

    roots: frozenset[bytes]
    names: tuple[tuple[bytes, bytes], ...] = ()
    word: bytes | None = None
    pattern: re.Pattern[bytes] | None = None

    def admits(self, source: bytes, scan: _Scan | None = None) -> bool:
        """Whether ``source`` may hold a finding of the rule."""
        scan = scan or _Scan(source)
        if self.roots and not any(scan.contains(root) for root in self.roots):
            return False
        if self.word is not None and not scan.contains(self.word):
            return False
        # Both parts are spelled wherever the name is used; the longer (rarer) one first.
        candidates = [
            (p, x)
            for p, x in self.names
            if scan.contains(max(p, x, key=len)) and scan.contains(min(p, x, key=len))
        ]
        if self.names and not candidates:
            return False
        if self.roots and not self.roots & scan.imported():
            return False
        if self.pattern is not None and self.pattern.search(source) is None:
            return False
        if self.word is not None and not scan.spelled(self.word):
            return False
        return not self.names or any(
            scan.contains(parent + b"." + leaf)
            or (parent in scan.imported() and scan.spelled(leaf))
            for parent, leaf in candidates
        )


def _parent_and_leaf(name: str) -> tuple[bytes, bytes]:
    parent, _, leaf = name.rpartition(".")
    return parent.rpartition(".")[2].encode(), leaf.encode()


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
    if rule.code in DEFINITION_RULES:  # the user's own policies: no import needed
        return RuleFilter(frozenset(), word=rule.argument.encode())
    if rule.kind is ChangeKind.METHOD_RENAME:  # found through the class the hook lives on
        owners = {_parent_and_leaf(name.rpartition(".")[0]) for name in rule.old}
        hook = rule.old[0].rpartition(".")[2].encode()
        return RuleFilter(roots, tuple(sorted(owners)), word=hook)
    names = tuple(sorted({_parent_and_leaf(name) for name in rule.old}))
    if rule.kind is ChangeKind.STRING_VALUE:
        words = [re.escape(str(v)) for v, _ in rule.values if isinstance(v, str)]
        numbers = [str(v) for v, _ in rule.values if isinstance(v, int)]
        if numbers:  # a bare number is too common: look for `argument=16`
            words.append(rf"\b{rule.argument}\s*=\s*(?:{'|'.join(numbers)})\b")
        return RuleFilter(roots, names, pattern=re.compile("|".join(words).encode()))
    if rule.argument is None or rule.kind is ChangeKind.DEFAULT_CHANGE:
        return RuleFilter(roots, names)
    return RuleFilter(roots, names, word=rule.argument.encode())  # a call's argument


@functools.lru_cache(maxsize=16)
def _filters(settings: Settings) -> tuple[RuleFilter, ...]:
    return tuple(rule_filter(rule) for rule in REGISTRY if settings.enabled(rule))


@functools.lru_cache(maxsize=16)
def _by_key(settings: Settings) -> tuple[tuple[bytes, tuple[RuleFilter, ...]], ...]:
    """The filters, by a text any of their findings needs (a root, or a rootless word)."""
    grouped: dict[bytes, list[RuleFilter]] = {}
    for f in _filters(settings):
        for key in f.roots or {f.word}:
            grouped.setdefault(key, []).append(f)
    return tuple((key, tuple(filters)) for key, filters in sorted(grouped.items()))


def may_have_findings(source: bytes, settings: Settings) -> bool:
    """False only where no rule enabled by ``settings`` can find anything in ``source``."""
    scan = None
    for key, filters in _by_key(settings):
        if key in source:  # most files hold none of the keys, or only "torch"
            scan = scan or _Scan(source)
            if any(f.admits(source, scan) for f in filters):
                return True
    return False


def worth_parsing(source: bytes, settings: Settings) -> bool:
    """Both stages: the text test, then :mod:`codemods.namescan`'s ``ast`` scan."""
    from codemods import namescan

    return may_have_findings(source, settings) and namescan.may_have_findings(source, settings)
