"""What the text pre-filter reads of each rule, prebuilt for the shipped registry.

Each rule's filter (:class:`codemods.screen.prefilter.RuleFilter`) follows from what
its kind needs to see (:func:`codemods.screen.needs.needs`), split into the words the
text test searches for (:func:`row`). Deriving them for every rule at each start cost a
commit hook's one-file lint about 3 ms of CPU (issue 44). :data:`TABLE`, written by
``python -m codemods.screen.filter_table``, holds the same rows for the shipped
registry, read instead (:func:`row_for`); the suite checks that it is the registry's,
and a rule it does not hold (a test's, a new entry not yet written) is derived.

Example:
    >>> from codemods.registry import REGISTRY
    >>> roots, names, word, pattern, paths = row(REGISTRY["FSDP102"])
    >>> roots, names, word, pattern, paths
    (frozenset(), (), b'unwrapped_params', None, ())
    >>> row_for(REGISTRY["FSDP301"]) == row(REGISTRY["FSDP301"])
    True
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Optional

    from codemods.registry import Rule
    from codemods.screen import search_order

    #: One rule's row: its filter's ``roots``, ``names`` (``(P, X, middle)`` of each old
    #: name ``root.middle.P.X``), ``word`` and ``pattern`` (the bytes of its source), and,
    #: for a rule with roots, each old name's root with the parts of its module path
    #: between the root and its last name (what a rule's group shares, in the pre-filter).
    Row = tuple[
        frozenset[bytes],
        tuple[search_order.Name, ...],
        Optional[bytes],
        Optional[bytes],
        tuple[tuple[bytes, frozenset[bytes]], ...],
    ]

#: The shipped registry's rows (:func:`table`). The registry (and ``typing`` with it) and
#: what its rules need are imported where they are asked: :func:`keys` reads this alone.
TABLE = os.path.join(os.path.dirname(__file__), "filter_table.txt")


def parent_and_leaf(name: str) -> search_order.Name:
    """``(P, X, middle)`` of ``root.middle.P.X`` (see the pre-filter's ``RuleFilter``).

    Example:
        >>> parent_and_leaf("torch.distributed._tensor.device_mesh.DeviceMesh")
        (b'device_mesh', b'DeviceMesh', (b'distributed', b'_tensor'))
    """
    parent, _, leaf = name.rpartition(".")
    middle = tuple(part.encode() for part in parent.split(".")[1:-1])
    return parent.rpartition(".")[2].encode(), leaf.encode(), middle


def row(rule: Rule) -> Row:
    """What the pre-filter reads of ``rule``, derived from what its kind needs."""
    from codemods.screen.needs import needs

    need = needs(rule)
    if need.parameter is not None:  # the user's own functions: no import needed
        return frozenset(), (), need.parameter.encode(), None, ()
    named = (*need.names, *need.calls)
    roots = frozenset(root.encode() for root in need.roots)
    word = need.word or (need.keyword if need.pattern is None else None)
    paths = []
    for name in named if roots else ():
        root, *middle = name.split(".")[:-1] or [name]  # a package: its own root
        paths.append((root.encode(), frozenset(part.encode() for part in middle)))
    return (
        roots,
        tuple(sorted({parent_and_leaf(name) for name in named})),
        word.encode() if word else None,
        need.pattern.encode() if need.pattern else None,
        tuple(paths),
    )


def shared_words(rules: Iterable[Rule]) -> dict[bytes, int]:
    """How many of the old names of ``rules`` need each word (:func:`search_order.word_counts`)."""
    from codemods.screen import search_order  # here: keys() (a plain file's answer) never asks
    from codemods.screen.needs import needs

    each = [{*needs(rule).names, *needs(rule).calls} for rule in rules]
    return search_order.word_counts(parent_and_leaf(name) for names in each for name in names)


def table(rules: Iterable[Rule]) -> str:
    r"""The text of ``filter_table.txt`` for ``rules``: a row a line, then the shared words.

    A row's line holds tab-separated fields: the code, the roots, the names
    (``P/X/middle``), the word, the pattern, the paths (``root/middle``), and a hook
    rule's method names (what a run of several files searches them for, to follow a
    class to its Lightning base in another); spaces part a field's items, dots a module
    path's parts; an empty field is none. Then a line ``*``, a word and its count for
    each shared word, in the words' order.

    Example:
        >>> from codemods.registry import REGISTRY
        >>> table([REGISTRY["FSDP102"]]).splitlines()[0].split("\t")
        ['FSDP102', '', '', 'unwrapped_params', '', '', '']
    """
    rules = list(rules)
    lines = []
    for rule in rules:
        roots, names, word, pattern, paths = row(rule)
        fields = [
            rule.code,
            " ".join(sorted(root.decode() for root in roots)),
            " ".join(f"{p.decode()}/{x.decode()}/{_dotted(middle)}" for p, x, middle in names),
            (word or b"").decode(),
            (pattern or b"").decode(),
            " ".join(f"{root.decode()}/{_dotted(sorted(middle))}" for root, middle in paths),
            " ".join(_hooks(rule)),
        ]
        if any(("\t" in field or "\n" in field) for field in fields):
            raise ValueError(f"{rule.code}: a tab or a line break in its pre-filter row")
        lines.append("\t".join(fields))
    lines += [f"*\t{word.decode()}\t{n}" for word, n in sorted(shared_words(rules).items())]
    return "".join(line + "\n" for line in lines)


def _hooks(rule: Rule) -> list[str]:
    """The method names of a hook rule (as ``ProjectClasses`` searches files for them)."""
    from codemods.registry import ChangeKind

    if rule.kind is not ChangeKind.METHOD_RENAME:
        return []
    return sorted({old.rpartition(".")[2] for old in rule.old})


def _dotted(parts: Iterable[bytes]) -> str:
    return ".".join(part.decode() for part in parts)


def read(data: bytes) -> tuple[dict[str, Row], dict[bytes, int]]:
    """The rows and the shared words that :func:`table` wrote (its UTF-8 bytes).

    Read as bytes, which the rows hold: decoding and encoding each name again cost
    more than the rest of the reading.
    """
    rows: dict[str, Row] = {}
    shared: dict[bytes, int] = {}
    for line in data.splitlines():
        fields = line.split(b"\t")
        if fields[0] == b"*":
            _, word, count = fields
            shared[word] = int(count)
            continue
        code, roots, names, word, pattern, paths, _ = fields
        rows[code.decode()] = (
            frozenset(roots.split()),
            tuple([_name(name) for name in names.split()]),
            word or None,
            pattern or None,
            tuple([_path(path) for path in paths.split()]),
        )
    if not shared:
        raise ValueError("no shared words")
    return rows, shared


def _name(text: bytes) -> search_order.Name:
    p, x, middle = text.split(b"/")
    return p, x, tuple(middle.split(b".")) if middle else ()


def _path(text: bytes) -> tuple[bytes, frozenset[bytes]]:
    root, middle = text.split(b"/")
    return root, frozenset(middle.split(b".")) if middle else frozenset()


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple[dict[str, tuple[Rule, Row]], dict[bytes, int]] | None:
    try:
        with open(TABLE, "rb") as file:
            rows, shared = read(file.read())
        by_code = {rule.code: rule for rule in _registry()}
        return {code: (by_code[code], found) for code, found in rows.items()}, shared
    except (OSError, KeyError, ValueError):  # no table, or one older than the registry
        return None


def row_for(rule: Rule) -> Row:
    """The row of ``rule``: the table's for a rule of the shipped registry, else :func:`row`."""
    shipped = _shipped()
    found = shipped[0].get(rule.code) if shipped is not None else None
    return found[1] if found is not None and found[0] is rule else row(rule)


def shipped_shared_words() -> dict[bytes, int]:
    """:func:`shared_words` of the shipped registry's rules."""
    shipped = _shipped()
    return shipped[1] if shipped is not None else shared_words(_registry())


def _registry() -> Iterable[Rule]:
    """The shipped registry, imported when first asked (:func:`keys` never asks)."""
    from codemods.registry import REGISTRY

    return REGISTRY


def keys(data: bytes, hooks: bool = False) -> tuple[frozenset[bytes], frozenset[bytes]]:
    """What one of the pre-filter's groups needs, read from :func:`table`'s bytes.

    Every rule's package roots (a group needs one where an import may name it), and the
    word of each rule that needs no import (a group needs it anywhere): a file that
    holds none of them has nothing any rule can find, whatever the settings. With
    ``hooks``, every hook rule's method names among the second (a run of several files
    follows the classes of a file that holds one).

    Example:
        >>> from codemods.registry import REGISTRY
        >>> data = table([REGISTRY["FSDP101"], REGISTRY["FSDP102"]]).encode()
        >>> roots, anywhere = keys(data)
        >>> sorted(roots), sorted(anywhere)
        ([b'compat', b'torch'], [b'unwrapped_params'])
    """
    roots: set[bytes] = set()
    found: set[bytes] = set()
    for line in data.splitlines():
        fields = line.split(b"\t")
        if fields[0] == b"*":
            continue
        roots.update(fields[1].split())
        if fields[3] and not fields[1]:
            found.add(fields[3])
        if hooks:
            found.update(fields[6].split())
    return frozenset(roots), frozenset(found)


if __name__ == "__main__":
    with open(TABLE, "wb") as out:  # "\n" line ends on every system
        out.write(table(_registry()).encode())
