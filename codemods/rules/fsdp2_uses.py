"""Uses of an FSDP1-wrapped model that FSDP2 spells differently, for FSDP401.

On an FSDP2 model, ``model.clip_grad_norm_`` does not exist, and ``state_dict()`` /
``load_state_dict()`` return and take DTensor shards where FSDP1 (by default) gathered
and took a full state dict. Where such a call is certainly on the wrapped model (the
name the wrapper call bound, later in the same scope) it is rewritten to what works on
both; anywhere else it keeps the file FSDP1.
"""

from __future__ import annotations

from dataclasses import dataclass

from codemods.kinds.base import Engine
from codemods.lazy_libcst import cst
from codemods.syntax import keyword

STATE_DICT = "torch.distributed.checkpoint.state_dict"


@dataclass(frozen=True)
class Use:
    """A call on the wrapped model and its FSDP2 spelling.

    Attributes:
        call: The original call node.
        code: Its replacement's source.
        imports: ``(module, name)`` imports the replacement needs.
    """

    call: cst.Call
    code: str
    imports: tuple[tuple[str, str | None], ...]


def _plain(call: cst.Call, most: int, keywords: tuple[str, ...] = ()) -> bool:
    """At most ``most`` arguments, positional or one of ``keywords``, no ``*``."""
    return len(call.args) <= most and all(
        not arg.star and keyword(arg) in (None, *keywords) for arg in call.args
    )


def rewrite(engine: Engine, call: cst.Call, receiver: str) -> Use | None:
    """The FSDP2 spelling of ``receiver.method(...)``, or None where it is not certain."""
    method = call.func.attr.value
    args = [engine.module.code_for_node(arg).rstrip(", ") for arg in call.args]
    if method == "clip_grad_norm_" and _plain(call, 2, ("max_norm", "norm_type")):
        # The same arguments after the parameters; DTensor gradients are reduced across
        # ranks by torch's clip_grad_norm_, as FSDP1's method did.
        code = f"torch.nn.utils.clip_grad_norm_({', '.join([f'{receiver}.parameters()', *args])})"
        return Use(call, code, (("torch", None),))
    full = "StateDictOptions(full_state_dict=True)"
    imports = ((STATE_DICT, "StateDictOptions"),)
    if method == "state_dict" and not call.args:
        code = f"get_model_state_dict({receiver}, options={full})"
        return Use(call, code, (*imports, (STATE_DICT, "get_model_state_dict")))
    if method == "load_state_dict" and len(call.args) == 1 and _plain(call, 1):
        code = f"set_model_state_dict({receiver}, {args[0]}, options={full})"
        return Use(call, code, (*imports, (STATE_DICT, "set_model_state_dict")))
    return None
