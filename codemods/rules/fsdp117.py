"""FSDP117: ``optim_input=`` on FSDP1's optimizer-state-dict methods.

Since torch 1.13 each method takes the optimizer itself (``optim``) and, given it,
maps parameters through ``optim.param_groups``; ``optim_input`` (the parameters or
parameter groups the optimizer was built from) is still honoured when passed, and
torch warns that it "may be removed without changing functionality". That holds only
where ``optim`` is passed too: without it, dropping ``optim_input`` makes torch assume
``model.parameters()``. So the safe fix removes the argument where the call passes
``optim`` (keyword or position) and nothing hides in ``*args`` / ``**kwargs``; other
calls are reported for a human (pass ``optim=`` first).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import is_plain_positional, keep_ending, keyword
from codemods.syntax.lazy_libcst import cst

#: The release whose methods take ``optim`` and ignore nothing when it is given.
OPTIM_SINCE = "1.13"

#: Where each method takes ``optim`` positionally (torch 2.x signatures; in
#: ``full_optim_state_dict`` and ``sharded_optim_state_dict`` it is required).
_OPTIM_POSITION = {
    "full_optim_state_dict": 1,
    "sharded_optim_state_dict": 1,
    "flatten_sharded_optim_state_dict": 2,
    "shard_full_optim_state_dict": 3,
    "scatter_full_optim_state_dict": 3,
    "rekey_optim_state_dict": 4,
}
#: Where ``optim_input`` sits positionally, in the methods that still take it.
_OPTIM_INPUT_POSITION = {
    "full_optim_state_dict": 2,
    "shard_full_optim_state_dict": 2,
    "scatter_full_optim_state_dict": 2,
    "rekey_optim_state_dict": 3,
}


def _method(engine: Engine, call: cst.Call, old: tuple[str, ...]) -> str | None:
    names = engine.qualified(call.func) & set(old)
    return next(iter(names)).rpartition(".")[2] if names else None


#: How one tree's arguments are read: (the keyword an argument passes, or None;
#: whether it is a plain positional argument). libcst's and ast's differ.
_Reader = tuple[Callable[[object], "str | None"], Callable[[object], bool]]


def _optim_input_index(args: list, method: str, read: _Reader) -> int | None:
    """The index in ``args`` of the ``optim_input`` argument, if the call passes one."""
    keyword_of, positional_arg = read
    for index, arg in enumerate(args):
        if keyword_of(arg) == "optim_input":
            return index
    position = _OPTIM_INPUT_POSITION.get(method)
    positional = [i for i, a in enumerate(args) if positional_arg(a)]
    if position is not None and len(positional) > position:
        return positional[position]
    return None


def _passes_optim(args: list, method: str, read: _Reader) -> bool:
    keyword_of, positional_arg = read
    if any(keyword_of(a) == "optim" for a in args):
        return True
    return sum(positional_arg(a) for a in args) > _OPTIM_POSITION[method]


def _ast_reader() -> _Reader:
    from codemods.syntax.ast_nodes import keyword as keyword_of
    from codemods.syntax.ast_nodes import plain_positional

    return keyword_of, plain_positional


_CST_READER: _Reader = (keyword, is_plain_positional)


class Fsdp117(Behaviour):
    """Remove ``optim_input`` where the call also passes ``optim``."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        method = _method(engine, original, self.rule.old)
        args = list(original.args)
        index = None if method is None else _optim_input_index(args, method, _CST_READER)
        if index is None:
            return updated
        later_positional = any(is_plain_positional(a) for a in args[index + 1 :])
        certain = (
            not any(a.star for a in args)
            and _passes_optim(args, method, _CST_READER)
            and not (is_plain_positional(args[index]) and later_positional)
            and engine.target_at_least(OPTIM_SINCE)
        )
        if not engine.report(args[index], self.rule, fixable_here=certain) or not certain:
            return updated
        kept = [a for i, a in enumerate(updated.args) if i != index]
        return updated.with_changes(args=keep_ending(kept, list(updated.args)))

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import arguments, plain_positional, star, unparenthesized

        names = detector.qualified(call.func) & set(self.rule.old)
        method = next(iter(names)).rpartition(".")[2] if names else None
        args = arguments(call)
        index = None if method is None else _optim_input_index(args, method, _ast_reader())
        if index is None:
            return
        arg = args[index]
        later_positional = any(plain_positional(a) for a in args[index + 1 :])
        certain = (
            not any(star(a) for a in args)
            and _passes_optim(args, method, _ast_reader())
            and not (plain_positional(arg) and later_positional)
            and detector.target_at_least(OPTIM_SINCE)
        )
        node = arg if type(arg) is ast.keyword else unparenthesized(detector, arg)
        detector.report(node, self.rule, fixable_here=certain)


BEHAVIOUR = Fsdp117
