"""FSDP128: a model state dict keyed by modules, passed to ``set_(model_)state_dict``.

torch 2.4 deprecated ``{submodule: its_state_dict}`` (keys that are modules rather than
parameter names). Only a dict display in the call is judged: its keys must all be
expressions that name objects (``model.encoder``, ``blocks[0]``, ``encoder``), none a
string or number; a dict built elsewhere is not followed. Reported for a human, who
prefixes each key with the submodule's name (the rule's recipe).
"""

from __future__ import annotations

import ast

from codemods.rules.api import Behaviour, Detector, Engine
from codemods.syntax.cst_nodes import is_plain_positional, keyword
from codemods.syntax.lazy_libcst import cst


def keyed_by_objects(value: cst.BaseExpression) -> bool:
    """Whether ``value`` is a non-empty dict display whose keys all name objects."""
    if not isinstance(value, cst.Dict) or not value.elements:
        return False
    keys = [getattr(element, "key", None) for element in value.elements]
    return all(
        isinstance(key, (cst.Name, cst.Attribute, cst.Subscript, cst.Call))
        and not (isinstance(key, cst.Name) and (key.value.isupper() or key.value == "None"))
        for key in keys
    )


def _ast_object_key(key: ast.expr | None) -> bool:
    """A key :func:`keyed_by_objects` accepts (``True`` and ``False`` are names to libcst)."""
    kind = type(key)
    if kind is ast.Name:
        return not (key.id.isupper() or key.id == "None")  # type: ignore[union-attr]
    if kind is ast.Constant:
        return key.value is True or key.value is False  # type: ignore[union-attr]
    return kind in (ast.Attribute, ast.Subscript, ast.Call)


def ast_keyed_by_objects(value: ast.expr) -> bool:
    """:func:`keyed_by_objects` on ``ast`` (``**other``'s key is None)."""
    if type(value) is not ast.Dict or not value.keys:
        return False
    return all(_ast_object_key(key) for key in value.keys)


class Fsdp128(Behaviour):
    """Report ``model_state_dict`` arguments that are dict displays keyed by modules."""

    def calls(self) -> tuple[str, ...]:
        return self.rule.old

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        found = [a for a in original.args if keyword(a) == "model_state_dict"]
        positional = [a for a in original.args if is_plain_positional(a)]
        names = engine.qualified(original.func)
        if (
            not found
            and len(positional) > 1
            and any(n.endswith("set_model_state_dict") for n in names)
        ):
            found = [positional[1]]  # set_model_state_dict(model, model_state_dict)
        if found and keyed_by_objects(found[0].value):
            engine.report(found[0], self.rule)
        return updated

    def ast_call(self, detector: Detector, call: ast.Call) -> None:
        from codemods.syntax.ast_nodes import plain_positional, unparenthesized

        found: list[ast.AST] = [a for a in call.keywords if a.arg == "model_state_dict"]
        positional = [a for a in call.args if plain_positional(a)]
        names = detector.qualified(call.func)
        if (
            not found
            and len(positional) > 1
            and any(n.endswith("set_model_state_dict") for n in names)
        ):
            found = [positional[1]]
        if not found:
            return
        arg = found[0]
        if type(arg) is ast.keyword:
            if ast_keyed_by_objects(arg.value):
                detector.report(arg, self.rule)
        elif ast_keyed_by_objects(arg):  # type: ignore[arg-type]
            detector.report(unparenthesized(detector, arg), self.rule)


BEHAVIOUR = Fsdp128
