"""FSDP128: a model state dict keyed by modules, passed to ``set_(model_)state_dict``.

torch 2.4 deprecated ``{submodule: its_state_dict}`` (keys that are modules rather than
parameter names). Only a dict display in the call is judged: its keys must all be
expressions that name objects (``model.encoder``, ``blocks[0]``, ``encoder``), none a
string or number; a dict built elsewhere is not followed. Reported for a human, who
prefixes each key with the submodule's name (the rule's recipe).
"""

from __future__ import annotations

import libcst as cst

from codemods.kinds.base import Behaviour, Engine
from codemods.syntax import is_plain_positional, keyword

_OBJECT_KEYS = (cst.Name, cst.Attribute, cst.Subscript, cst.Call)


def keyed_by_objects(value: cst.BaseExpression) -> bool:
    """Whether ``value`` is a non-empty dict display whose keys all name objects."""
    if not isinstance(value, cst.Dict) or not value.elements:
        return False
    keys = [getattr(element, "key", None) for element in value.elements]
    return all(
        isinstance(key, _OBJECT_KEYS)
        and not (isinstance(key, cst.Name) and (key.value.isupper() or key.value == "None"))
        for key in keys
    )


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


BEHAVIOUR = Fsdp128
