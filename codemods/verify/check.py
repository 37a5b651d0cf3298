r"""Does a rewrite break the module? The check a fixed file passes before it is written.

:func:`breakages` compares the old module and its rewrite, binding by binding, and lists
what the rewrite breaks:

1. a name left undefined (a reference, in any scope, that reaches the module's globals
   where nothing binds it and builtins lack it), and the old module did not have it so
   (by name and by number of such references);
2. an import left unused that the old module used, or an import the rewrite added and
   does not use (at module level, or in a function or class by the same qualified name);
3. a reference left to a name the rewrite renamed (``renamed``: old local name to new),
   where the old module bound that name by an import;
4. a package imported at module level that the old module imported only inside a block
   (:mod:`codemods.verify.guards`: an optional dependency made a hard one).

What the old module already had (an undefined name made by a star import or
``globals()``, an unused import) is never blamed on the rewrite: every check compares
the two. Check 1 is skipped when the new module has a star import, as pyflakes does.
Annotations and ``__all__`` strings count as uses; ``del``, ``global`` and bindings
under ``if``/``try`` count as bindings. There is no flow analysis: a function's local
read before it is assigned is the function's own business, not a module-level name.
Module-level imports of an ``__init__.py`` are re-exports: pass ``reexports=True``.
A renamed import that the old module did not use either may stay unused.

Speed: a fix changes a few statements (:mod:`codemods.verify.statement_diff`). Their facts are
computed again; those of the others are the same in both modules and are read only for
the few names whose facts the changed statements alter. The cost is one parse of the
old module and a parse of the changed statements (``benchmarks/verify_speed.py``).

Example:
    >>> old = "from a import Old\n\nprint(Old.name)\n"
    >>> new = "from a import New\n\nprint(Old.name)\n"
    >>> for found in breakages(old, new, {"Old": "New"}):
    ...     print(found)
    `New` imported at 1:15 but unused
    Old still used at 3:7
"""

from __future__ import annotations

import ast
import builtins
import io
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from codemods.syntax.alias_positions import parse
from codemods.verify.guards import unguarded_imports
from codemods.verify.scopes import Facts, Pos
from codemods.verify.statement_diff import Split

#: Names every module has without binding them.
DEFINED = frozenset(dir(builtins)) | {
    "__file__", "__cached__", "__builtins__", "__path__", "__annotations__",
    "__module__", "__qualname__", "__class__", "WindowsError",
}  # fmt: skip


@dataclass(frozen=True, order=True)
class Breakage:
    """One way a rewrite breaks a module, at the first place it shows.

    Attributes:
        line: 1-based line in the new module.
        col: 1-based column (characters) in the new module.
        name: The name concerned (empty for a syntax error).
        reason: What is wrong, with the place: ``Old still used at 35:12``.
    """

    line: int
    col: int
    name: str
    reason: str

    def __str__(self) -> str:
        return self.reason


def breakages(
    old: bytes | str,
    new: bytes | str,
    renamed: Mapping[str, str] | None = None,
    *,
    reexports: bool = False,
) -> list[Breakage]:
    """What the rewrite ``new`` of ``old`` breaks: sorted, empty when the rewrite is sound.

    Args:
        old: The module before the rewrite (source text, or bytes in its encoding).
        new: The module after it.
        renamed: Local names the rewrite renamed, old to new (``{"Old": "New"}`` for
            ``from m import Old`` become ``from m import New``).
        reexports: Count every module-level import as used (an ``__init__.py``).

    Returns:
        The breakages, by position; ``[]`` also when ``old`` does not parse (nothing to
        compare against). A ``new`` that does not parse is one breakage.
    """
    renamed = {k: v for k, v in (renamed or {}).items() if k != v}
    old_text = _text(old)
    new_text = _text(new)
    if old_text is None:
        return []
    if new_text is None:
        return [Breakage(1, 1, "", "does not decode")]
    if old_text == new_text and not renamed:
        return []
    try:
        old_tree = parse(old_text)
    except (SyntaxError, ValueError):
        return []
    pair = _Pair(old_text, old_tree, new_text, frozenset(renamed))
    if pair.error is not None:
        return [pair.error]
    found = pair.compare(renamed, reexports)
    found += [Breakage(*item) for item in unguarded_imports(old_text, new_text)]
    return sorted(set(found))


def _text(source: bytes | str) -> str | None:
    r"""The source as text with ``\n`` line ends (positions do not move)."""
    if isinstance(source, bytes):
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
            source = source.decode(encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError):
            return None
    return source.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


class _Module:
    """One side's facts: the changed statements' in full, the others' read on demand."""

    def __init__(self) -> None:
        self.changed: list[Facts] = []
        self.same: list[Facts] = []

    def all(self) -> Iterable[Facts]:
        yield from self.changed
        yield from self.same

    def bound(self, name: str) -> bool:
        return any(name in facts.bound for facts in self.all())

    def refs(self, name: str, changed_only: bool = False) -> list[Pos]:
        side = self.changed if changed_only else self.all()
        return [pos for facts in side for pos in facts.refs.get(name, ())]

    def exports(self, name: str) -> list[Pos]:
        return [pos for facts in self.all() for pos in facts.exports.get(name, ())]

    def imported(self, name: str) -> Pos | None:
        found = [facts.imports[name] for facts in self.all() if name in facts.imports]
        return min(found, default=None)

    def star(self) -> bool:
        return any(facts.star for facts in self.all())

    def summary(self) -> dict[str, tuple[bool, int, bool, int]]:
        """For each name in the changed statements: bound, references, imported, exported."""
        names = set()
        for facts in self.changed:
            names.update(facts.bound, facts.refs, facts.imports, facts.exports)
        return {
            name: (
                self.bound(name),
                len(self.refs(name)),
                self.imported(name) is not None,
                len(self.exports(name)),
            )
            for name in names
        }

    def local_imports(self) -> dict[tuple[str, str], list]:
        merged: dict[tuple[str, str], list] = {}
        # The unchanged statements loaded count too: a function redefined under the
        # same name shares its imports' key with the one the rewrite changed.
        for facts in self.all():
            for key, (pos, used) in facts.local_imports.items():
                entry = merged.setdefault(key, [pos, False])
                entry[0], entry[1] = min(entry[0], pos), entry[1] or used
        return merged

    def watched(self, name: str) -> list[tuple[str, str, Pos]]:
        return [ref for facts in self.changed for ref in facts.watched.get(name, ())]


class _Pair:
    """The old module and its rewrite, with the facts of what the rewrite changed."""

    def __init__(self, old: str, tree: ast.Module, new: str, watch: frozenset[str]) -> None:
        self.new_text = new
        self.split = Split(old, tree, new, watch)
        self.error = None
        if self.split.error is not None:
            self.error = _syntax_error(self.split.error)
        self.old = _Module()
        self.new = _Module()
        self.old.changed = self.split.old_changed
        self.new.changed = self.split.new_changed

    def load(self, names: Iterable[str]) -> None:
        """Read the unchanged statements that mention ``names`` (or a star import)."""
        self.old.same, self.new.same = self.split.kept_facts(names)

    def compare(self, renamed: Mapping[str, str], reexports: bool) -> list[Breakage]:
        """Every breakage, in any order (positions still in UTF-8 bytes until reported)."""
        old, new = self.old.summary(), self.new.summary()
        names = {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
        names |= self.split.class_changes()
        local = {name for side in (self.old, self.new) for _, name in side.local_imports()}
        self.load(names | set(renamed) | local)
        found: list[tuple[Pos, str, str]] = []
        still_used = set()
        for name in renamed:
            for pos in self._still_used(name):
                found.append((pos, name, f"{name} still used at {{where}}"))
                still_used.add(name)
        if not self.new.star():
            for name in sorted(names - still_used - DEFINED):
                found += self._undefined(name)
        # A renamed import continues the old one: unused before, it may stay unused.
        origin = {new: old for old, new in renamed.items()}
        for name in sorted(names):
            pos = self.new.imported(name)
            if pos is None or reexports or self._used(self.new, name):
                continue
            was = name
            if self.old.imported(name) is None and name in origin:
                was = origin[name]
            if self.old.imported(was) is None or self._used(self.old, was):
                found.append((pos, name, f"`{name}` imported at {{where}} but unused"))
        before = self.old.local_imports()
        for (scope, name), (pos, used) in self.new.local_imports().items():
            was = before.get((scope, name)) or before.get((scope, origin.get(name, name)))
            if not used and (was is None or was[1]):
                found.append(
                    (pos, name, f"`{name}` imported at {{where}} but unused (in `{scope}`)")
                )
        return [self._breakage(*item) for item in found]

    def _still_used(self, name: str) -> list[Pos]:
        """Where the rewrite reads ``name`` after renaming the import that bound it."""
        places: list[Pos] = []
        if self.old.imported(name) is not None and self.new.imported(name) is None:
            places += self.new.refs(name) + self.new.exports(name)
        after = self.new.local_imports()
        for scope, local in self.old.local_imports():
            if local != name or (scope, name) in after:
                continue
            # References in that function (or nested in it) that no longer reach a
            # binding made inside it.
            inside = scope + "."
            for origin, binder, pos in self.new.watched(name):
                if (origin == scope or origin.startswith(inside)) and not binder.startswith(inside):
                    places.append(pos)
        return [min(places)] if places else []

    def _undefined(self, name: str) -> list[tuple[Pos, str, str]]:
        found = []
        for kind, new, old in (
            ("", self.new.refs(name), self.old.refs(name)),
            (" in __all__", self.new.exports(name), self.old.exports(name)),
        ):
            new = [] if self.new.bound(name) else new
            old = [] if self.old.bound(name) else old
            if len(new) > len(old):
                note = f" ({len(new)} uses, {len(old)} before)" if old else ""
                added = self.new.refs(name, changed_only=True) if old and not kind else []
                pos = min(added or new)
                found.append((pos, name, f"`{name}`{kind} undefined at {{where}}{note}"))
        return found

    @staticmethod
    def _used(side: _Module, name: str) -> bool:
        return bool(side.refs(name) or side.exports(name))

    def _breakage(self, pos: Pos, name: str, reason: str) -> Breakage:
        line, col = pos
        text = self.new_text.split("\n", line)[line - 1] if line else ""
        if not text.isascii():
            col = len(text.encode()[:col].decode(errors="ignore"))
        return Breakage(line, col + 1, name, reason.format(where=f"{line}:{col + 1}"))


def _syntax_error(error: SyntaxError) -> Breakage:
    line = getattr(error, "lineno", None) or 1
    col = getattr(error, "offset", None) or 1
    message = getattr(error, "msg", None) or str(error)
    return Breakage(line, col, "", f"does not parse: {message} at {line}:{col}")
