"""The cheap text test that decides which files are worth parsing at all.

libcst parses many times slower than ``ast``, so a file is parsed only if its bytes
could hold a finding. A use of an old name ``a.b.P.X`` needs an import of its package
``a``, and wherever the name is bound, its text shows either ``P.X`` (a dotted use or
import) or ``P`` on an import line with ``X`` spelled somewhere (``from a.b.P import X
as Y``, or ``import a.b.P as m`` and then ``m.X``). So, for each rule:

- a package root of its old names appears in the file and on an import line (a rule
  found in the user's own definitions needs no import);
- for one of its old names, ``P.X`` appears, or ``P`` is on an import line and ``X``
  is spelled as a whole word; a call rule also needs its argument spelled, a hook rule
  its hook, a value rule one of its old values.

Every test is a substring search, shared by the rules checking a file; a package or a
class counts as imported where it is on an import's logical line, searched among those
lines alone (:func:`~codemods.screen.import_lines.import_text`). Each test only rules a file out
where no finding can be; the suite checks that no fixture or registry example with a
finding is ruled out. Files that pass go through a second, ``ast``-based stage
(:mod:`codemods.screen.namescan`) before libcst parses them.
"""

from __future__ import annotations

import ast
import functools
import re

from codemods.records import Frozen, Record
from codemods.registry import REGISTRY, Rule
from codemods.screen import filter_table, search_order
from codemods.screen.alias_text import aliases, assigns
from codemods.screen.import_lines import IDENTIFIER_BYTES, import_text, whole, whole_words
from codemods.settings import Settings
from codemods.syntax.alias_positions import parse

#: What may stand between a dot and the name after it (a line broken inside brackets).
_BLANKS = frozenset(b" \t\f\r\n\\")


class _Scan:
    """What the rules ask of one file, each answered once."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self._contains: dict[bytes, bool] = {}
        self._imported: dict[bytes, bool] = {}
        self._imported_root: dict[bytes, bool] = {}
        self._imports: bytes | None = None  # the import lines, once asked
        self._spelled: dict[bytes, bool] = {}
        self._paths: dict[tuple[bytes, ...], bool] = {}

    def contains(self, text: bytes) -> bool:
        found = self._contains.get(text)
        if found is None:
            found = self._contains[text] = text in self.source
        return found

    def spelled(self, word: bytes) -> bool:
        """``word`` appears as a whole identifier (not inside another)."""
        found = self._spelled.get(word)
        if found is None:
            found = self._spelled[word] = self.contains(word) and whole(self.source, word)
        return found

    def spells_path(self, middle: tuple[bytes, ...]) -> bool:
        """Every part of a module path is :meth:`spelled` (asked once for each path)."""
        if middle not in self._paths:
            self._paths[middle] = all(map(self.spelled, middle))
        return self._paths[middle]

    def spelled_as_member(self, leaf: bytes, parent: bytes) -> bool:
        """``leaf`` appears where it can name a member of the module ``parent``.

        That is bare where an import's line spells it too (``from a.parent import leaf
        as x``: ``x`` is then used bare), or after a dot that follows ``parent``, a local
        alias (``as m``) or no name (``(p).leaf``): ``torch.distributed.fsdp`` does not
        spell ``fsdp`` of ``torch.distributed._composable``, ``c.fsdp`` may. A bare use
        elsewhere names what no import binds (a parameter, a string, a comment's word).
        A chain may break its line after the dot, inside brackets: where a comment may
        end the line before, the word counts.
        """
        if not self.contains(leaf):
            return False
        source = self.source
        for start in whole_words(source, leaf):
            dot = start - 1
            broken = False
            while dot >= 0 and source[dot] in _BLANKS:
                broken = broken or source[dot] == 0x0A
                dot -= 1
            if broken and b"#" in source[source.rfind(b"\n", 0, dot) + 1 : dot + 1]:
                return True  # `.  # why` then the word: a comment may sit between
            if dot < 0 or source[dot] != 0x2E:
                if self.imported(leaf):
                    return True  # bare, and an import's line spells it
                continue  # a bare use of a name no import binds
            start = dot
            while start > 0 and source[start - 1] in IDENTIFIER_BYTES:
                start -= 1
            owner = source[start:dot]
            if not owner or owner == parent or aliases(owner, source):
                return True
        return False

    def _import_lines(self) -> bytes:
        """The file's import lines (:func:`import_text`), found once."""
        if self._imports is None:
            self._imports = import_text(self.source)
        return self._imports

    def imports_root(self, root: bytes) -> bool:
        """The package ``root`` is named on an import's line.

        A name under a package is only ever reached through an import of it (an alias
        by assignment, ``F = fsdp.X``, needs ``fsdp`` imported first), so unlike
        :meth:`imported` the rest of the file is not searched: most files of a big tree
        spell no root, and the search of the whole file for each root was a third of
        the pre-filter's time on torch's tree.
        """
        found = self._imported_root.get(root)
        if found is None:
            found = self._imported_root[root] = whole(self._import_lines(), root)
        return found

    def imported(self, word: bytes) -> bool:
        """``word`` is on an import's line (:func:`import_text`) or a module-level alias's."""
        found = self._imported.get(word)
        if found is None:
            found = self._imported[word] = whole(self._import_lines(), word) or (
                self.contains(word) and assigns(word, self.source)
            )
        return found


class RuleFilter(Record):
    """What must appear in a file for one rule to find anything in it.

    Attributes:
        roots: Package roots, one of which an import line must name; empty where the
            rule needs no import.
        names: ``(P, X, middle)`` for each old name ``root.middle.P.X`` (or each callable,
            for call rules): the parts of its module path between the root and ``P``,
            each of which any reference to the name spells as a whole word (in its
            import or its attribute chain), so the text must spell them all.
        word: A word that must also be spelled: a call rule's argument, a hook's name,
            a definition rule's parameter.
        pattern: For value rules: a regular expression (its source, compiled when a
            file first gets that far) one of the old values matches.
    """

    _fields = ("roots", "names", "word", "pattern")

    def __init__(
        self,
        roots: frozenset[bytes],
        names: tuple[tuple[bytes, bytes, tuple[bytes, ...]], ...] = (),
        word: bytes | None = None,
        pattern: bytes | None = None,
    ) -> None:
        self.roots = roots
        self.names = names
        self.word = word
        self.pattern = pattern

    def __hash__(self) -> int:
        return hash(self._values())

    @functools.cached_property
    def _by_path(
        self,
    ) -> tuple[tuple[bytes, tuple[bytes, ...], tuple[tuple[bytes, ...], ...]], ...]:
        """:attr:`names` by module path, in search order (:func:`search_order.by_path`)."""
        return search_order.by_path(self.names, _shared_words())

    def admits(
        self,
        source: bytes,
        scan: _Scan | None = None,
        imported: bool = False,
        candidates: list[tuple[bytes, bytes]] | None = None,
    ) -> bool:
        """Whether ``source`` may hold a finding of the rule.

        ``imported``: one of the rule's package roots is known to be imported.
        ``candidates``: the names :meth:`candidates` gives, where the caller has them.
        """
        scan = scan or _Scan(source)
        if self.roots and not imported and not any(scan.imports_root(root) for root in self.roots):
            return False
        if candidates is None:
            candidates = self.candidates(scan)
        if self.names and not candidates:
            return False
        if self.word is not None and not scan.contains(self.word):
            return False
        if self.pattern is not None and re.search(self.pattern, source) is None:
            return False
        if self.word is not None and not scan.spelled(self.word):
            return False
        return not self.names or any(
            (not parent and scan.imported(leaf))  # a whole package (lightning_lite)
            or scan.spelled(parent + b"." + leaf)  # whole: not `_checkpoint.checkpoint_wrapper`
            or (scan.imported(parent) and scan.spelled_as_member(leaf, parent))
            for parent, leaf in candidates
        )

    def candidates(self, scan: _Scan) -> list[tuple[bytes, bytes]]:
        """``(P, X)`` of each old name whose words the file all spells.

        Both parts are spelled wherever the name is used, and each part of the module
        path between them. That path first: its few words are shared by many names
        and answered once a file, while most files spell none of the names at all
        (see _by_path for the order).
        """
        return [
            (p, x)
            for gate, middle, names in self._by_path
            if scan.contains(gate) and scan.spells_path(middle)
            for p, x, first, second in names
            if scan.contains(first) and scan.contains(second)
        ]


@functools.lru_cache(maxsize=1)
def _shared_words() -> dict[bytes, int]:
    return filter_table.shipped_shared_words()


def rule_filter(rule: Rule) -> RuleFilter:
    r"""The :class:`RuleFilter` of ``rule``, from what its kind needs to see.

    Its words are the prebuilt table's for a rule of the shipped registry, else derived
    (:mod:`codemods.screen.filter_table`); each rule's filter is made once.

    Example:
        >>> f = rule_filter(REGISTRY["FSDP101"])
        >>> f.admits(b"from torch.distributed.fsdp.wrap import default_auto_wrap_policy")
        True
        >>> f.admits(b"import torch\ndefault_auto_wrap_policy = 1")
        False
    """
    found = _made.get(rule)
    if found is None:
        roots, names, word, pattern, _ = filter_table.row_for(rule)
        found = _made[rule] = RuleFilter(roots, names, word=word, pattern=pattern)
    return found


#: Each rule's filter, once made (a filter keeps nothing of the files it is asked about).
_made: dict[Rule, RuleFilter] = {}


@functools.lru_cache(maxsize=16)
def _filters(settings: Settings) -> tuple[RuleFilter, ...]:
    return tuple(rule_filter(rule) for rule in REGISTRY if settings.enabled(rule))


class _Group(Frozen):
    """The filters that one key text gates, and what else the key implies.

    Attributes:
        key: A package root, or a rootless filter's word; any finding of the group's
            rules needs it in the file.
        shared: Parts of the module path that every old name under this root spells
            (``distributed`` for torch's): a use of any of them spells each part,
            in its import or its attribute chain.
        filters: The filters themselves.
        gated: Every filter's module paths (:attr:`RuleFilter._by_path`) by gate word:
            ``(gate, ((middle, names, index of the filter), ...))``. A gate that many
            filters share (``fsdp``) is asked once for all of them, not once a filter
            (a torch file that imports torch asked each of the 28 torch filters).
    """

    __slots__ = _fields = ("key", "shared", "filters", "gated")

    key: bytes
    shared: tuple[bytes, ...]
    filters: tuple[RuleFilter, ...]
    gated: tuple[
        tuple[bytes, tuple[tuple[tuple[bytes, ...], tuple[tuple[bytes, ...], ...], int], ...]], ...
    ]

    def __init__(
        self,
        key: bytes,
        shared: tuple[bytes, ...],
        filters: tuple[RuleFilter, ...],
    ) -> None:
        gated: dict[bytes, list[tuple[tuple[bytes, ...], tuple[tuple[bytes, ...], ...], int]]] = {}
        for index, f in enumerate(filters):
            for gate, middle, names in f._by_path:
                gated.setdefault(gate, []).append((middle, names, index))
        self._set(
            key=key,
            shared=shared,
            filters=filters,
            gated=tuple((gate, tuple(paths)) for gate, paths in gated.items()),
        )

    def admits(self, source: bytes, scan: _Scan, imported: bool) -> bool:
        """Whether a filter of the group admits ``source`` (as :meth:`RuleFilter.admits`)."""
        contains, spells_path = scan.contains, scan.spells_path
        candidates: dict[int, list[tuple[bytes, bytes]]] = {}
        for gate, paths in self.gated:
            if contains(gate):
                for middle, names, index in paths:
                    if spells_path(middle):
                        for p, x, first, second in names:
                            if contains(first) and contains(second):
                                candidates.setdefault(index, []).append((p, x))
        for index, f in enumerate(self.filters):
            found = candidates.get(index)
            if found is None:
                if f.names:
                    continue  # no name of the rule is spelled whole
                found = []
            if f.admits(source, scan, imported=imported, candidates=found):
                return True
        return False


@functools.lru_cache(maxsize=16)
def _groups(settings: Settings) -> tuple[_Group, ...]:
    """The enabled rules' filters, grouped by key, keys in a fixed order."""
    rules = [rule for rule in REGISTRY if settings.enabled(rule)]
    grouped: dict[bytes, list[RuleFilter]] = {}
    paths: dict[bytes, list[frozenset[bytes]]] = {}  # root -> each old name's middle parts
    for rule, f in zip(rules, _filters(settings)):
        for key in f.roots or {f.word}:
            grouped.setdefault(key, []).append(f)
        for root, middle in filter_table.row_for(rule)[4]:  # a rule with roots only
            paths.setdefault(root, []).append(middle)
    return tuple(
        _Group(
            key,
            tuple(sorted(frozenset.intersection(*paths.get(key, [frozenset()])))),
            tuple(filters),
        )
        for key, filters in sorted(grouped.items())
    )


def may_have_findings(source: bytes, settings: Settings) -> bool:
    """False only where no rule enabled by ``settings`` can find anything in ``source``."""
    if settings.lightning_bases:
        return True  # a base defined in another file of the run: its hooks are looked at
    scan = _Scan(source)
    for group in _groups(settings):
        # Most files hold none of the keys, or only "torch"; a package root counts only
        # where an import may name it ("compatible" or a comment on Lightning do not).
        rooted = group.filters[0].roots != frozenset()  # else the key is a rootless word
        if (
            # a root is looked for among the import lines only: a few hundred bytes
            (scan.imports_root(group.key) if rooted else scan.contains(group.key))
            and all(scan.contains(part) for part in group.shared)
            and group.admits(source, scan, imported=rooted)
        ):
            return True
    return False


class Passed(Frozen):
    """A source both stages let through, with the tree the second one parsed.

    Attributes:
        tree: ``ast.parse(source)``; None where ``ast`` cannot parse it (Python 2, a
            newer syntax): libcst then reports why.
    """

    __slots__ = _fields = ("tree",)

    tree: ast.Module | None

    def __init__(self, tree: ast.Module | None) -> None:
        self._set(tree=tree)


def screen(source: bytes, settings: Settings, tree: ast.Module | None = None) -> Passed | None:
    """Both stages: the text test, then :mod:`codemods.screen.namescan`'s ``ast`` scan.

    None: no rule of ``settings`` can find anything in ``source`` (``tree``: parsed already).
    """
    if not may_have_findings(source, settings):
        return None
    from codemods.screen import namescan

    try:
        tree = parse(source) if tree is None else tree
    except (SyntaxError, ValueError):
        return Passed(None)
    return Passed(tree) if namescan.may_have_findings(tree, settings) else None


def worth_parsing(source: bytes, settings: Settings) -> bool:
    """Whether :func:`screen` lets ``source`` through."""
    return screen(source, settings) is not None
