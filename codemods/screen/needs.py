"""What each kind of change needs to see in a file before it can find anything there.

The pre-filter's two stages (:mod:`codemods.screen.prefilter`, a text test, and
:mod:`codemods.screen.namescan`, an ``ast`` scan) decide which files are worth parsing with
libcst. They ask every rule the same question through :func:`needs` and never branch on
the kind of change themselves: each kind declares its answer once, in :data:`_BY_KIND`.
This module stays free of libcst, which costs more to import than most runs spend
screening.

Example:
    >>> from codemods.registry import REGISTRY
    >>> needs(REGISTRY["FSDP204"]).keyword
    'strategy'
    >>> needs(REGISTRY["FSDP102"]).parameter
    'unwrapped_params'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from codemods.records import Frozen
from codemods.registry import ChangeKind, Rule


class Needs(Frozen):
    """What must appear in a module for one rule to find something in it.

    Attributes:
        names: Qualified names any use of which (or of something inside them) may be a
            finding; for a hook rule, the classes the hook is defined on.
        calls: Callables whose calls may be findings when they pass ``keyword``.
        keyword: The keyword argument those calls must pass.
        word: A word the module must spell as well (a hook's name).
        pattern: A regular expression one of the rule's old values matches.
        parameter: A parameter name found in the module's own function definitions,
            which needs no import.
    """

    __slots__ = _fields = ("names", "calls", "keyword", "word", "pattern", "parameter")

    names: tuple[str, ...]
    calls: tuple[str, ...]
    keyword: str | None
    word: str | None
    pattern: str | None
    parameter: str | None

    def __init__(
        self,
        names: tuple[str, ...] = (),
        calls: tuple[str, ...] = (),
        keyword: str | None = None,
        word: str | None = None,
        pattern: str | None = None,
        parameter: str | None = None,
    ) -> None:
        self._set(
            names=names,
            calls=calls,
            keyword=keyword,
            word=word,
            pattern=pattern,
            parameter=parameter,
        )

    @property
    def roots(self) -> frozenset[str]:
        """The package roots of every name the rule looks for (one must be imported)."""
        return frozenset(name.split(".")[0] for name in (*self.names, *self.calls))


def _references(rule: Rule) -> Needs:
    return Needs(names=rule.old)


def _arguments(rule: Rule) -> Needs:
    if rule.argument is None:  # a call rewrite of the whole call: any use of the callee
        return Needs(names=rule.old)
    parameter = rule.argument if rule.in_definitions else None
    return Needs(calls=rule.old, keyword=rule.argument, parameter=parameter)


def _values(rule: Rule) -> Needs:
    words = [re.escape(str(v)) for v, _ in rule.values if isinstance(v, str)]
    numbers = [str(v) for v, _ in rule.values if isinstance(v, int)]
    if numbers:  # a bare number is too common: look for `argument=16`
        words.append(rf"\b{rule.argument}\s*=\s*(?:{'|'.join(numbers)})\b")
    return Needs(calls=rule.old, keyword=rule.argument, pattern="|".join(words))


def _hooks(rule: Rule) -> Needs:
    owners = tuple(sorted({name.rpartition(".")[0] for name in rule.old}))
    return Needs(names=owners, word=rule.old[0].rpartition(".")[2])


#: Each kind of change, and what it needs to see. A default change is found in any
#: call of the callable (the argument it is about is the one missing).
_BY_KIND: dict[ChangeKind, Callable[[Rule], Needs]] = {
    ChangeKind.SYMBOL_RENAME: _references,
    ChangeKind.REMOVAL: _references,
    ChangeKind.DEFAULT_CHANGE: _references,
    ChangeKind.CALL_REWRITE: _arguments,
    ChangeKind.KEYWORD_RENAME: _arguments,
    ChangeKind.STRING_VALUE: _values,
    ChangeKind.METHOD_RENAME: _hooks,
}


@functools.cache
def needs(rule: Rule) -> Needs:
    """What ``rule`` needs to see in a module (see :class:`Needs`)."""
    if rule.found_in:  # its behaviour looks further than its kind: any use may count
        if rule.kind is ChangeKind.REMOVAL:  # but a removed name is spelled where it is used
            # (in any case: Lightning takes `sharding_strategy="no_shard"` for NO_SHARD)
            leaves = sorted({re.escape(name.rpartition(".")[2]) for name in rule.old})
            return Needs(names=rule.found_in, pattern=rf"(?i)\b(?:{'|'.join(leaves)})\b")
        return Needs(names=rule.found_in)
    return _BY_KIND[rule.kind](rule)


__all__ = ["Needs", "needs"]
