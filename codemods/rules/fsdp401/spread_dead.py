"""The entries of a ``**kwargs`` dict that a plain FSDP2 conversion leaves dead (FSDP401).

Where the wrapper calls a dict fed are all ``fully_shard`` code and nothing else reads
the dict, the keys written from their values (:mod:`codemods.rules.fsdp401.spread`)
are read by no one: their entries go (from the display, ``update(...)``, or the
``d["key"] = value`` line), and the binding too where no key is left, with the imports
only they used. Keys the new code reads back from the dict stay, as they were set. The
dual stack removes nothing: its FSDP1 branch passes the dict as built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codemods.rules.api import Engine
from codemods.syntax.lazy_libcst import cst

#: Where the survey keeps each wrapper call's :class:`Spread` (``engine.scratch``).
SPREADS = "FSDP401-spreads"


@dataclass(frozen=True)
class Spread:
    """A dict a wrapper call passes as ``**name``, as read: what its conversion leaves dead.

    Attributes:
        binding: The statement binding the dict.
        static: ``(value, where it is set)`` of each key written from its value.
        runtime: Whether the new code reads some key back from the dict.
        others: Whether anything else reads or changes it (a log line, a later change).
        passes: The calls unpacking it (``id``), the wrapper call among them.
    """

    binding: cst.CSTNode
    static: tuple[tuple[cst.BaseExpression, cst.CSTNode], ...]
    runtime: bool
    others: bool
    passes: frozenset[int]


def dead_entries(engine: Engine, calls: list[cst.Call]) -> list[tuple[Spread, list[cst.Call]]]:
    """Each dict whose every unpacking is one of ``calls`` (converted), with those calls."""
    spreads = engine.scratch.get(SPREADS, {})
    by_binding: dict[int, list[cst.Call]] = {}
    for call in calls:
        spread = spreads.get(id(call))
        if spread is not None:
            by_binding.setdefault(id(spread.binding), []).append(call)
    out = []
    for group in by_binding.values():
        first = spreads[id(group[0])]
        if not first.others and first.passes == {id(call) for call in group}:
            out.append((first, group))
    return out


def remove_dead(engine: Engine, spread: Spread, calls: list[cst.Call]) -> list[cst.CSTNode]:
    """Remove the entries no converted call reads; returns the nodes removed (for imports)."""
    spreads = engine.scratch[SPREADS]
    # A key written from its value by every call: the same node set it for each.
    static = [pair for pair in spread.static if all(pair in spreads[id(c)].static for c in calls)]
    # An entry with a comment stays (the comment may say more than the code).
    static = [(value, where) for value, where in static if not _says_more(engine, value, where)]
    runtime = any(spreads[id(c)].runtime for c in calls) or len(static) < len(spread.static)
    line = _line(engine, spread.binding)
    # Every line setting a key must go with the binding (an update's is its call's parent).
    settings = [_setting_line(engine, w) for _, w in static if w is not spread.binding]
    whole = not runtime and line is not None and not _commented(line) and None not in settings
    if whole:  # no key left to read: the binding goes
        engine.replace(line, cst.RemovalSentinel.REMOVE)
    removed: list[cst.CSTNode] = [spread.binding] if whole else []
    # container -> (the statement setting through it, indices of its items to drop)
    dropped: dict[int, tuple[cst.CSTNode, cst.CSTNode, set[int]]] = {}
    for value, where in static:
        if where is not spread.binding and isinstance(where, cst.Assign):  # `d["key"] = v`
            if (statement := _line(engine, where)) is not None:
                engine.replace(statement, cst.RemovalSentinel.REMOVE)
                removed.append(where)
            continue
        if where is spread.binding and whole:
            continue
        element = engine.parent(value)  # the display's entry, or the call's keyword
        container = engine.parent(element)
        index = next(i for i, item in enumerate(_elements(container)) if item is element)
        dropped.setdefault(id(container), (container, where, set()))[2].add(index)
        removed.append(element)
    for container, where, indices in dropped.values():
        if where is not spread.binding and len(indices) == len(_elements(container)):
            # `d.update(...)` left with nothing to set: the line goes
            if (statement := _line(engine, engine.parent(where))) is not None:
                engine.replace(statement, cst.RemovalSentinel.REMOVE)
                continue
        engine.replace(container, _without(indices))
    return removed


def _setting_line(engine: Engine, where: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The line of ``d["key"] = value`` or ``d.update(...)`` (None: it shares its line)."""
    return _line(engine, where if isinstance(where, cst.Assign) else engine.parent(where))


def _elements(container: cst.CSTNode) -> list[Any]:
    return list(container.elements if isinstance(container, cst.Dict) else container.args)


def _without(indices: set[int]) -> Any:
    """A replacement dropping the items at ``indices`` (their layout otherwise kept)."""

    def replace(updated: cst.CSTNode) -> cst.CSTNode:
        items = [item for i, item in enumerate(_elements(updated)) if i not in indices]
        last = _elements(updated)[-1]
        if items and items[-1] is not last:  # the new last item ends as the old one did
            items[-1] = items[-1].with_changes(comma=last.comma)
        if isinstance(updated, cst.Dict):
            if not items:  # `{}`, on one line
                return updated.with_changes(
                    elements=[], lbrace=cst.LeftCurlyBrace(), rbrace=cst.RightCurlyBrace()
                )
            return updated.with_changes(elements=items)
        if not items:  # `dict()`, on one line
            return updated.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))
        return updated.with_changes(args=items)

    return replace


def _line(engine: Engine, node: cst.CSTNode | None) -> cst.SimpleStatementLine | None:
    """The line ``node`` (a small statement) is alone on, if it is, and its block has more."""
    line = engine.parent(node) if node is not None else None
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return None
    block = engine.parent(line)  # a block of one statement cannot lose it
    return line if isinstance(block, cst.Module) or len(getattr(block, "body", ())) > 1 else None


def _says_more(engine: Engine, value: cst.CSTNode, where: cst.CSTNode) -> bool:
    """Whether a comment goes with the entry setting ``value`` (on its line, or above it)."""
    if engine.parent(value) is where:  # `d["key"] = value`: its line
        line = _line(engine, where)
        return line is None or _commented(line)
    return "#" in engine.module.code_for_node(engine.parent(value))


def _commented(line: cst.SimpleStatementLine) -> bool:
    """Whether a comment sits above or beside the line (it may say more than the code)."""
    above = any(isinstance(e, cst.EmptyLine) and e.comment for e in line.leading_lines)
    return above or line.trailing_whitespace.comment is not None
