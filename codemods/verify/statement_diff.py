"""Which statements a rewrite left as they were, and the facts of those it changed.

A fix edits a few statements of a module. The verifier needs the scope facts
(:class:`codemods.verify.scopes.Facts`) of both versions of the module, but the facts of a
statement the rewrite left alone are the same in both, and they matter only for the
few names whose facts the edited statements change. So the old module is cut into
units: its top-level statements, and the header and body statements of each
top-level class (a class can be most of a file). Each unit's text is looked for in
the new module, in order. What lies between the units found is parsed alone, in its
context (at top level, or in the body of its class), which also proves that it is
whole statements: the new module parses as the units found and those stretches.
Where a stretch does not parse alone, both modules are compared whole.
"""

from __future__ import annotations

import ast
import bisect
import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from codemods.syntax.alias_positions import parse
from codemods.verify.scopes import Facts, class_level, scan

MODULE_LEVEL, HEADER, BODY, LAST = range(4)
_STAR = re.compile(r"\bimport\s*\*")


@dataclass(eq=False)
class _Class:
    """A top-level class whose body statements are units of their own."""

    name: str
    indent: str
    old_bound: set
    new_bound: set = field(default_factory=set)


@dataclass
class _Unit:
    offset: int
    line: int  # 0-based
    statements: list[ast.stmt]
    kind: int = MODULE_LEVEL
    owner: _Class | None = None
    bound: set = field(default_factory=set)  # what a body unit binds in its class


class Split:
    """The old module and its rewrite, unit by unit.

    Attributes:
        old_changed, new_changed: The facts of the units the rewrite changed, and of
            the new text that replaces them.
        error: The new module's syntax error, if it does not parse.
    """

    def __init__(self, old: str, tree: ast.Module, new: str, watch: frozenset[str]) -> None:
        self.old, self.new, self.watch = old, new, watch
        self.old_changed: list[Facts] = []
        self.new_changed: list[Facts] = []
        self.error: SyntaxError | None = None
        self.units = _units(old, tree)
        self.offsets = [unit.offset for unit in self.units]
        ends = self.offsets[1:] + [len(old)]
        texts = [old[a:b] for a, b in zip(self.offsets, ends)]
        #: Unit index -> its offset in the new module, for the units left as they were.
        self.kept: dict[int, int] = {}
        _align(texts, new, self.kept)
        header = -1
        for index, unit in enumerate(self.units):  # a class's body goes with its header
            if unit.kind == HEADER:
                header = index
            elif unit.owner is not None and header not in self.kept:
                self.kept.pop(index, None)
        try:
            self._read_changes(texts)
        except (SyntaxError, ValueError):
            self._read_whole()

    def _read_changes(self, texts: list[str]) -> None:
        """Parse each changed stretch of the new module in its context, then scan."""
        added: dict[int, list[ast.stmt]] = {}  # id(_Class) -> its new body statements
        pieces: list[tuple[list[ast.stmt], int, _Class | None]] = []
        changed: list[int] = []
        previous, start = -1, 0
        for index in sorted(self.kept) + [len(self.units)]:
            end = self.kept.get(index, len(self.new))
            changed += range(previous + 1, index)
            before = self.units[previous] if previous >= 0 else None
            after = self.units[index] if index < len(self.units) else None
            pieces += self._parse(self.new[start:end], start, before, after, added)
            if after is not None:
                previous, start = index, end + len(texts[index])
        for owner, indexes in self._classes().items():
            bound, special = class_level(added.get(id(owner), []))
            if special:
                raise ValueError("a class-level import or declaration: read the class whole")
            owner.new_bound = bound.union(*(self.units[k].bound for k in indexes if k in self.kept))
        for statements, offset, owner in pieces:
            within = None if owner is None else (owner.name, owner.new_bound)
            self.new_changed.append(scan(statements, offset, self.watch, within))
        self.old_changed = self._scan_old(changed, 0, old=True)

    def _parse(
        self,
        text: str,
        start: int,
        before: _Unit | None,
        after: _Unit | None,
        added: dict[int, list[ast.stmt]],
    ) -> list[tuple[list[ast.stmt], int, _Class | None]]:
        """The statements of one changed stretch, parsed where the units around it put it.

        Returns:
            ``(statements, line offset, the class whose body they are in)`` lists.

        Raises:
            SyntaxError, ValueError: The stretch is not whole statements there.
        """
        inside = before.owner if before is not None and before.kind != MODULE_LEVEL else None
        resumes = after is not None and after.kind in (BODY, LAST)  # the class goes on after
        code = _first_code_line(text)
        if code is None:
            if before is not None and before.kind == HEADER and not resumes:
                raise ValueError("a class left without a body")
            return []
        line = self.new.count("\n", 0, start)
        indent = code[: len(code) - len(code.lstrip(" \t"))]
        if inside is not None and indent == inside.indent:
            body = parse(f"class _:\n{text}").body
            if resumes and len(body) != 1:
                raise ValueError("the class body ends before its next statement")
            added.setdefault(id(inside), []).extend(body[0].body)  # type: ignore[attr-defined]
            inner: list[ast.stmt] = body[0].body  # type: ignore[attr-defined]
            return [(inner, line - 1, inside), (body[1:], line - 1, None)]
        if indent or resumes or (before is not None and before.kind in (HEADER, BODY)):
            raise ValueError("not at the indentation its place needs")
        return [(parse(text).body, line, None)]

    def _classes(self) -> dict[_Class, list[int]]:
        """Each split class, with the indexes of its body units."""
        found: dict[_Class, list[int]] = {}
        for index, unit in enumerate(self.units):
            if unit.owner is not None and unit.kind != HEADER:
                found.setdefault(unit.owner, []).append(index)
        return found

    def _read_whole(self) -> None:
        self.kept.clear()
        self.new_changed = []
        self.old_changed = self._scan_old(range(len(self.units)), 0, old=True)
        try:
            self.new_changed.append(scan(parse(self.new).body, 0, self.watch))
        except (SyntaxError, ValueError) as error:
            self.error = error if isinstance(error, SyntaxError) else SyntaxError(str(error))

    def _scan_old(self, indexes: Iterable[int], shift: int, old: bool) -> list[Facts]:
        """Facts of old units, at module level together and per class with its context."""
        plain: list[ast.stmt] = []
        by_class: dict[int, tuple[_Class, list[ast.stmt]]] = {}
        for k in indexes:
            unit = self.units[k]
            if unit.kind in (MODULE_LEVEL, HEADER):
                plain += unit.statements
            else:
                entry = by_class.setdefault(id(unit.owner), (unit.owner, []))  # type: ignore[arg-type]
                entry[1].extend(unit.statements)
        found = [scan(plain, shift)] if plain else []
        for owner, statements in by_class.values():
            bound = owner.old_bound if old else owner.new_bound
            found.append(scan(statements, shift, within=(owner.name, bound)))
        return found

    def class_changes(self) -> set:
        """Names bound in a split class by the old module or the new, not by both."""
        names: set = set()
        for owner, indexes in self._classes().items():
            if any(k in self.kept for k in indexes):
                names |= owner.old_bound ^ owner.new_bound
        return names

    def kept_facts(self, names: Iterable[str]) -> tuple[list[Facts], list[Facts]]:
        """Facts of the unchanged units that mention ``names`` or a star import: (old, new)."""
        found = set()
        for start in _mentions(self.old, names):
            k = bisect.bisect_right(self.offsets, start) - 1
            if k in self.kept:
                found.add(k)
        old: list[Facts] = []
        new: list[Facts] = []
        for k in sorted(found):
            shift = self.new.count("\n", 0, self.kept[k]) - self.units[k].line
            old += self._scan_old([k], 0, old=True)
            new += self._scan_old([k], shift, old=False)
        return old, new


def _mentions(text: str, names: Iterable[str]) -> Iterable[int]:
    """Where ``text`` has one of ``names`` as a word, or a star import."""
    for name in names:
        at = text.find(name)
        while at >= 0:
            end = at + len(name)
            if not (_word_char(text, at - 1) or _word_char(text, end)):
                yield at
            at = text.find(name, end)
    for match in _STAR.finditer(text):
        yield match.start()


def _word_char(text: str, at: int) -> bool:
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def _first_code_line(text: str) -> str | None:
    """The first line that is neither blank nor a comment."""
    at = 0
    while at < len(text):
        stop = text.find("\n", at)
        stop = len(text) if stop < 0 else stop
        stripped = text[at:stop].strip()
        if stripped and not stripped.startswith("#"):
            return text[at:stop]
        at = stop + 1
    return None


def _groups(statements: list[ast.stmt]) -> list[tuple[int, list[ast.stmt]]]:
    """Statements as (0-based first line, statements); statements sharing a line are one."""
    groups: list[tuple[int, list[ast.stmt]]] = []
    last = -1
    for statement in statements:
        decorators = getattr(statement, "decorator_list", ())
        first = min([statement.lineno] + [d.lineno for d in decorators]) - 1
        if first <= last:
            groups[-1][1].append(statement)
        else:
            groups.append((first, [statement]))
        last = max(last, statement.end_lineno - 1)  # type: ignore[operator]
    return groups


def _units(text: str, tree: ast.Module) -> list[_Unit]:
    """The old module's units, in order; the first starts at offset 0."""
    lines = [0] + [match.end() for match in re.finditer("\n", text)]
    units: list[_Unit] = []
    for line, statements in _groups(tree.body):
        node = statements[0]
        body = _split_body(node, text, lines) if len(statements) == 1 else None
        if body is None:
            units.append(_Unit(lines[line], line, statements))
            continue
        bound = set().union(*(names for _, _, names, _ in body))
        owner = _Class(node.name, body[0][3], bound)  # type: ignore[attr-defined]
        header = copy.copy(node)
        header.body = []  # type: ignore[attr-defined]
        units.append(_Unit(lines[line], line, [header], HEADER, owner))
        units += [_Unit(lines[at], at, group, BODY, owner, bound) for at, group, bound, _ in body]
        units[-1].kind = LAST
    if not units:
        return [_Unit(0, 0, [])]
    units[0].offset = units[0].line = 0
    return units


def _split_body(
    node: ast.stmt, text: str, lines: list[int]
) -> list[tuple[int, list[ast.stmt], set, str]] | None:
    """The body of a class that can be cut into units, ``None`` for other statements.

    Returns:
        Per unit: its line, its statements, the names they bind in the class, and the
        indentation of the body.
    """
    if (
        not isinstance(node, ast.ClassDef)
        or len(node.body) < 2
        or getattr(node, "type_params", None)
    ):
        return None
    header_end = max([node.lineno] + [n.end_lineno or 0 for n in node.bases + node.keywords])
    groups = _groups(node.body)
    if groups[0][0] < header_end:  # `class A: x = 1`: the body shares the header's line
        return None
    first = text[lines[groups[0][0]] :]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    units = []
    for line, statements in groups:
        bound, special = class_level(statements)
        if special:
            return None
        units.append((line, statements, bound, indent))
    return units if indent else None


def _align(texts: list[str], new: str, kept: dict[int, int]) -> None:
    """Find the old units ``texts`` in ``new``, in order: ``kept[index] = offset``.

    A unit counts as found only where it starts a line and ends one (or the file).
    """

    def fits(k: int, at: int, end: int) -> bool:
        text = texts[k]
        return new.startswith(text, at, end) and (
            text.endswith("\n") and not text.endswith("\\\n") or at + len(text) == len(new)
        )

    first, last, start, end = 0, len(texts), 0, len(new)
    while first < last and fits(first, start, end):
        kept[first] = start
        start += len(texts[first])
        first += 1
    while last > first and end - len(texts[last - 1]) >= start:
        at = end - len(texts[last - 1])
        if not (fits(last - 1, at, end) and (at == start or new[at - 1] == "\n")):
            break
        last -= 1
        end = kept[last] = at
    # The middle: find each old unit by its first line, in order.
    lines: dict[str, list[int]] = {}
    at = start
    while at < end:
        stop = new.find("\n", at, end)
        stop = end if stop < 0 else stop
        lines.setdefault(new[at:stop], []).append(at)
        at = stop + 1
    for k in range(first, last):
        candidates = lines.get(texts[k].partition("\n")[0], [])
        low = bisect.bisect_left(candidates, start)
        found = next((at for at in candidates[low : low + 16] if fits(k, at, end)), None)
        if found is not None:
            kept[k] = found
            start = found + len(texts[k])
