"""Uses of an FSDP1-wrapped model that FSDP2 spells differently, for FSDP401.

On an FSDP2 model, ``model.clip_grad_norm_`` does not exist, and ``state_dict()`` /
``load_state_dict()`` return and take DTensor shards where FSDP1 (by default) gathered
and took a full state dict. Where such a call is certainly on the wrapped model (the
name the wrapper call bound, later in the same scope) it is rewritten to what works on
both; anywhere else it keeps the file FSDP1.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from codemods.rules.api import Engine
from codemods.syntax.cst_nodes import keyword
from codemods.syntax.lazy_libcst import cst

STATE_DICT = "torch.distributed.checkpoint.state_dict"


@dataclass(frozen=True)
class Use:
    """A call on the wrapped model and its FSDP2 spelling.

    Attributes:
        call: The original node replaced (the call, or the statement holding it).
        code: The replacement's source, for an expression.
        imports: ``(module, name)`` imports the replacement needs.
        build: For a statement: what takes the place of the updated node.
        method: The FSDP1 method called.
    """

    call: cst.CSTNode
    code: str
    imports: tuple[tuple[str, str | None], ...]
    build: Callable[[Any], Any] | None = None
    method: str = ""

    def replacement(self) -> cst.CSTNode | Callable[[Any], Any]:
        """What :meth:`Engine.replace` puts in the original node's place."""
        return self.build or cst.parse_expression(self.code)


def _plain(call: cst.Call, most: int, keywords: tuple[str, ...] = ()) -> bool:
    """At most ``most`` arguments, positional or one of ``keywords``, no ``*``."""
    return len(call.args) <= most and all(
        not arg.star and keyword(arg) in (None, *keywords) for arg in call.args
    )


def rewrite(engine: Engine, call: cst.Call, receiver: str) -> Use | None:
    """The FSDP2 spelling of ``receiver.method(...)``, or None where it is not certain."""
    use = _rewrite(engine, call, receiver)
    return None if use is None else dataclasses.replace(use, method=call.func.attr.value)


def _rewrite(engine: Engine, call: cst.Call, receiver: str) -> Use | None:
    method = call.func.attr.value
    args = [engine.module.code_for_node(arg).rstrip(", ") for arg in call.args]
    if method == "clip_grad_norm_" and _plain(call, 2, ("max_norm", "norm_type")):
        # The same arguments after the parameters; DTensor gradients are reduced across
        # ranks by torch's clip_grad_norm_, as FSDP1's method did. Its norm is a DTensor,
        # partial on some releases (torch 2.9: `.item()` reads the rank's share): a norm
        # the code reads is made whole, a plain tensor as FSDP1's was.
        code = f"torch.nn.utils.clip_grad_norm_({', '.join([f'{receiver}.parameters()', *args])})"
        if not isinstance(engine.parent(call), cst.Expr):
            code += ".full_tensor()"
        return Use(call, code, (("torch", None),))
    if method == "no_sync" and not call.args:
        return _no_sync(engine, call, receiver)
    full = "StateDictOptions(full_state_dict=True)"
    imports = ((STATE_DICT, "StateDictOptions"),)
    if method == "state_dict" and not call.args:
        code = f"get_model_state_dict({receiver}, options={full})"
        return Use(call, code, (*imports, (STATE_DICT, "get_model_state_dict")))
    if method == "load_state_dict" and len(call.args) == 1 and _plain(call, 1):
        code = f"set_model_state_dict({receiver}, {args[0]}, options={full})"
        return Use(call, code, (*imports, (STATE_DICT, "set_model_state_dict")))
    return None


def _no_sync(engine: Engine, call: cst.Call, receiver: str) -> Use | None:
    """``with model.no_sync(): body`` as FSDP2's switch, turned back on however it ends.

    FSDP1's context manager turns the gradient reduction off for the block and back on
    after it; ``set_requires_gradient_sync(False)`` before a ``try`` whose ``finally``
    turns it on again does the same on FSDP2 (the same accumulated gradients, reduced
    by the next backward outside). Only a plain one-item ``with`` that is a statement;
    its item may be ``model.no_sync() if accumulating else nullcontext()``, the switch
    then set to ``not accumulating`` (the null context leaves it on, as it was).
    """
    item = engine.parent(call)
    sync = "False"
    if isinstance(item, cst.IfExp) and item.body is call and _null_context(engine, item.orelse):
        # `with (model.no_sync() if accumulating else nullcontext()):`, the usual idiom.
        test = item.test.with_changes(lpar=[], rpar=[])
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            sync = engine.module.code_for_node(test.expression)  # `not last`: sync when last
        else:
            sync = f"not {engine.module.code_for_node(test)}"
            if not isinstance(test, (cst.Name, cst.Attribute, cst.Call, cst.Comparison)):
                sync = f"not ({sync[4:]})"
        engine.forget(item.orelse.func)  # its import goes where nothing else uses it
        item = engine.parent(item)
    statement = engine.parent(item) if isinstance(item, cst.WithItem) else None
    if not isinstance(statement, cst.With) or len(statement.items) != 1:
        return None
    if item.asname is not None or statement.asynchronous is not None:
        return None
    if not isinstance(statement.body, cst.IndentedBlock):
        return None  # `with m.no_sync(): x` on one line: no block to put in a `try`
    config = engine.module.config_for_parsing
    off = cst.parse_statement(f"{receiver}.set_requires_gradient_sync({sync})\n", config)
    on = cst.parse_statement(f"{receiver}.set_requires_gradient_sync(True)\n", config)

    def build(updated: cst.With) -> cst.FlattenSentinel:
        guarded = cst.Try(
            body=updated.body,
            finalbody=cst.Finally(body=cst.IndentedBlock(body=[on])),
        )
        return cst.FlattenSentinel([off.with_changes(leading_lines=updated.leading_lines), guarded])

    return Use(statement, "", (), build)


#: Context managers that do nothing (the other side of a conditional ``no_sync()``).
NULL_CONTEXTS = ("contextlib.nullcontext", "contextlib.suppress")


def _null_context(engine: Engine, node: cst.BaseExpression) -> bool:
    """Whether ``node`` is ``nullcontext()`` (or ``suppress()``): a context doing nothing."""
    return (
        isinstance(node, cst.Call)
        and not node.args
        and bool(engine.qualified(node.func) & set(NULL_CONTEXTS))
    )
