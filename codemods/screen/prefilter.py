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
class is imported where an import's logical line names it (those lines are searched
alone: :func:`~codemods.screen.import_lines.import_text`). A test rules a file out only
where no finding can be (no fixture or registry example with one is, the suite checks);
what passes goes on to :mod:`codemods.screen.namescan`'s ``ast`` stage, then libcst.
"""

from __future__ import annotations

import ast
import functools
import re

from codemods.records import Frozen, Record
from codemods.registry import REGISTRY, Rule
from codemods.screen import filter_table, search_order
from codemods.screen.text_scan import Scan
from codemods.settings import Settings
from codemods.syntax.alias_positions import parse

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Protocol

    class _Syntax(Protocol):  # codemods.batch.syntax_errors.SyntaxCheck, a stage above
        def compiles(self) -> bool: ...
        def parsed(self, tree: ast.Module) -> None: ...


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
        shared: How many old names need each word, which orders the searches (see
            :mod:`~codemods.screen.search_order`); None: the registry's counts.
    """

    _fields = ("roots", "names", "word", "pattern")

    def __init__(
        self,
        roots: frozenset[bytes],
        names: tuple[tuple[bytes, bytes, tuple[bytes, ...]], ...] = (),
        word: bytes | None = None,
        pattern: bytes | None = None,
        shared: dict[bytes, int] | None = None,
    ) -> None:
        self.roots = roots
        self.names = names
        self.word = word
        self.pattern = pattern
        self._shared = shared

    def __hash__(self) -> int:
        return hash(self._values())

    @functools.cached_property
    def _by_path(
        self,
    ) -> tuple[tuple[bytes, tuple[bytes, ...], tuple[tuple[bytes, ...], ...]], ...]:
        """:attr:`names` by module path, in search order (:func:`search_order.by_path`)."""
        return search_order.by_path(self.names, self._shared or _shared_words())

    def admits(
        self,
        source: bytes,
        scan: Scan | None = None,
        imported: bool = False,
        candidates: list[tuple[bytes, bytes]] | None = None,
    ) -> bool:
        """Whether ``source`` may hold a finding of the rule.

        ``imported``: one of the rule's package roots is known to be imported.
        ``candidates``: the names :meth:`candidates` gives, where the caller has them.
        """
        scan = scan or Scan(source)
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

    def candidates(self, scan: Scan) -> list[tuple[bytes, bytes]]:
        """``(P, X)`` of each old name whose words the file all spells.

        Any use spells both, and each part of the module path between them: the path
        first, whose few words many names share (once a file; see ``_by_path``).
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
def _enabled(settings: Settings) -> tuple[str, ...]:
    # The groups' key: made once (4 ms) for all settings enabling the same rules.
    return tuple(rule.code for rule in REGISTRY if settings.enabled(rule))


class _Group(Frozen):
    """The filters that one key text gates, and what else the key implies.

    Attributes:
        key: A package root, or a rootless filter's word; any finding of the group's
            rules needs it in the file.
        shared: Parts of the module path that every old name under this root spells
            (``distributed`` for torch's): a use of any of them spells each part,
            in its import or its attribute chain.
        filters: The filters themselves.
        gated: Every filter's module paths (:attr:`RuleFilter._by_path`) by gate word,
            so a gate many filters share (``fsdp``) is asked once for all of them.
    """

    __slots__ = ("key", "shared", "filters", "_gated")
    _fields = ("key", "shared", "filters")

    key: bytes
    shared: tuple[bytes, ...]
    filters: tuple[RuleFilter, ...]

    def __init__(
        self,
        key: bytes,
        shared: tuple[bytes, ...],
        filters: tuple[RuleFilter, ...],
    ) -> None:
        # ``gated`` waits for a file holding the key: a one-file lint asks few groups.
        self._set(key=key, shared=shared, filters=filters, _gated=None)

    @property
    def gated(self) -> tuple[tuple[bytes, tuple[tuple[Any, ...], ...]], ...]:
        """``(gate, ((middle, names, index of the filter), ...))``, made once."""
        if self._gated is None:
            gated: dict[bytes, list[tuple[Any, ...]]] = {}
            for index, f in enumerate(self.filters):
                for gate, middle, names in f._by_path:
                    gated.setdefault(gate, []).append((middle, names, index))
            self._set(_gated=tuple((gate, tuple(paths)) for gate, paths in gated.items()))
        return self._gated  # type: ignore[return-value]

    def admits(self, source: bytes, scan: Scan, imported: bool) -> bool:
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
def _groups(codes: tuple[str, ...]) -> tuple[_Group, ...]:
    """The filters of the rules ``codes`` (:func:`_enabled`), by key, keys in a fixed order."""
    grouped: dict[bytes, list[tuple[RuleFilter, tuple[search_order.Name, ...]]]] = {}
    paths: dict[bytes, list[frozenset[bytes]]] = {}  # root -> each old name's middle parts
    for rule in map(REGISTRY.__getitem__, codes):
        f = rule_filter(rule)
        rooted = filter_table.row_for(rule)[4]  # a rule with roots only
        for key in f.roots or {f.word}:
            names = _names_under(f, rooted, key) if f.roots else ()
            if names or not f.names:
                grouped.setdefault(key, []).append((f, names))
        for root, middle in rooted:
            paths.setdefault(root, []).append(middle)
    return tuple(
        _Group(
            key,
            tuple(sorted(frozenset.intersection(*paths.get(key, [frozenset()])))),
            _ordered(filters),
        )
        for key, filters in sorted(grouped.items())
    )


def _ordered(
    filters: list[tuple[RuleFilter, tuple[search_order.Name, ...]]],
) -> tuple[RuleFilter, ...]:
    """One group's filters, each with its names under the group's root (``filters``).

    Their words are searched in the order of the group's own names: in a file whose
    imports name torch, ``distributed`` (which torch's FSDP names all spell) before
    ``fsdp`` (which ``compat``'s share), a file without the first not searched for the
    second.
    """
    counts = search_order.word_counts(name for _, names in filters for name in names)
    return tuple(
        RuleFilter(f.roots, names, f.word, f.pattern, shared=counts) if names else f
        for f, names in filters
    )


def _names_under(
    f: RuleFilter, rooted: tuple[tuple[bytes, frozenset[bytes]], ...], root: bytes
) -> tuple[search_order.Name, ...]:
    """The old names of ``f`` under the package ``root``.

    A use of ``root.middle.P.X`` needs ``root`` imported, so the group of another root
    need not search a file for its words (``strategies`` of Lightning's names, in the
    many files that import torch alone). ``rooted``: each old name's root and the parts
    of its path (:func:`filter_table.row`); a name it does not place is in every group.
    """
    roots: dict[frozenset[bytes], set[bytes]] = {}
    for owner, parts in rooted:
        roots.setdefault(parts, set()).add(owner)
    return tuple(
        name
        for name in f.names
        if root in roots.get(frozenset(name[2]).union((name[0],) if name[0] else ()), f.roots)
    )


def may_have_findings(source: bytes, settings: Settings) -> bool:
    """False only where no rule enabled by ``settings`` can find anything in ``source``."""
    if settings.lightning_bases:
        return True  # a base defined in another file of the run: its hooks are looked at
    return _admitted(Scan(source), _groups(_enabled(settings)))


def _admitted(scan: Scan, groups: tuple[_Group, ...]) -> bool:
    for group in groups:
        # Most files hold none of the keys, or only "torch"; a package root counts only
        # where an import may name it ("compatible" or a comment on Lightning do not).
        rooted = group.filters[0].roots != frozenset()  # else the key is a rootless word
        if (
            # a root is looked for among the import lines only: a few hundred bytes
            (scan.imports_root(group.key) if rooted else scan.contains(group.key))
            and all(scan.contains(part) for part in group.shared)
            and group.admits(scan.source, scan, imported=rooted)
        ):
            return True
    return False


@functools.lru_cache(maxsize=16)
def _name_groups(codes: tuple[str, ...]) -> tuple[_Group, ...]:
    """:func:`_groups` with each rule's names alone: no rule's word, nor its pattern.

    A parameter rule's word is the name of a parameter (its filter has no roots): kept.
    """
    return tuple(
        _Group(
            group.key,
            group.shared,
            tuple(
                f if not f.roots else RuleFilter(f.roots, f.names, shared=f._shared)
                for f in group.filters
            ),
        )
        for group in _groups(codes)
    )


def names_in_code(source: bytes, settings: Settings, scan: Scan | None = None) -> bool:
    """Whether the code of ``source`` (a file Python compiles) may use an old name.

    The text test on :func:`~codemods.screen.code_text.code_text` (its comments and
    plain strings blanked), each rule's names alone: False only where the ``ast`` scan
    would find none of them either (a name it finds is used in the code, and the text
    test's words of a name are those of its uses). A rule's word (a hook, a keyword)
    and its pattern are not asked: the scan does not ask them, and a rule whose word is
    missing may still make it pass (a ``LightningModule`` used, its hook in a string).
    ``scan``: the text test's scan of ``source``, whose absent words need no search.
    """
    if settings.lightning_bases:
        return True
    from codemods.screen.code_text import code_text  # a file past the text test only

    code = code_text(source)
    return code is None or _admitted(Scan(code, within=scan), _name_groups(_enabled(settings)))


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


def screen(
    source: bytes,
    settings: Settings,
    tree: ast.Module | None = None,
    syntax: _Syntax | None = None,
) -> Passed | None:
    """Both stages: the text test, then :mod:`codemods.screen.namescan`'s ``ast`` scan.

    None: no rule of ``settings`` can find anything in ``source`` (``tree``: parsed already).
    ``syntax``: whether Python compiles ``source``, where a file whose old names are all
    in comments and strings (:func:`names_in_code`) is ruled out unparsed; it is told
    the tree of a file the scan rules out (``SyntaxCheck.parsed``).
    """
    scan = Scan.of(source)  # the detector's walk asks it too
    if not (settings.lightning_bases or _admitted(scan, _groups(_enabled(settings)))):
        return None  # as may_have_findings
    # Asked last: where no bytecode cache vouches for the file, a parse of its own.
    if tree is None and syntax and not names_in_code(source, settings, scan) and syntax.compiles():
        return None
    from codemods.screen import namescan

    try:
        tree = parse(source) if tree is None else tree
    except (SyntaxError, ValueError):
        return Passed(None)
    if namescan.may_have_findings(tree, settings):
        return Passed(tree)
    if syntax is not None:
        syntax.parsed(tree)
    return None
