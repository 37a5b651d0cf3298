"""FSDP1's ``device_id`` in the plain FSDP2 code (FSDP401).

FSDP1 moved each unit to ``device_id`` (a device without an index meant the current
one) and left the process's current device as it was; FSDP2's ``fully_shard`` takes no
device and shards on the current device of the mesh's type. Ports set the current
device before they shard (``FSDP2-PORTS.md``, row 11: torchtitan's
``device_module.set_device``). A file that sets a device itself (any ``set_device``
call) keeps its own; where it sets none and ``device_id`` is not the current device
already, the rewrite sets it before the call's ``fully_shard``, as FSDP1 resolved it
(``set_device_like_fsdp1``, :mod:`codemods.rules.fsdp401.helpers`: a device of a type
with an index; the CPU, or no index, was the current one), and its finding says what
else that moves: without it every rank would shard on the current device, the
accelerator's first, where FSDP1 used each rank's own.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.syntax.cst_nodes import dotted, literal
from codemods.syntax.lazy_libcst import cst

#: The note for a ``device_id`` dropped with nothing written: the file sets the device.
DROPPED = (
    "`device_id` dropped: FSDP2 moves the model to the current device "
    "(call `torch.cuda.set_device(local_rank)` first)"
)
#: The note where the rewrite sets the device (``{device}``: ``device_id``'s source).
SET = (
    "`device_id` becomes the current device (`set_device_like_fsdp1({device})`) before "
    "`fully_shard`, which shards on the current device (the file sets none): FSDP1 left "
    "the current device as it was, and after that call `.cuda()` and "
    "`torch.cuda.current_device()` give `{device}` too"
)
_SETTERS = frozenset({"set_device", "set_device_index"})


def is_current(engine: Engine, value: cst.BaseExpression) -> bool:
    """Whether ``value`` is the current device for FSDP1: no device to set.

    ``x.current_device()``, and a device without an index (``"cuda"``, ``"cpu"``,
    ``torch.device("cuda")``), which FSDP1 took as the current one (or the CPU).

    Example:
        >>> class Engine:
        ...     qualified = staticmethod(lambda node: {"torch.device"})
        >>> [is_current(Engine(), cst.parse_expression(s)) for s in (
        ...     "torch.cuda.current_device()", "'cuda'", "torch.device('cpu')",
        ...     "local_rank", "'cuda:1'", "torch.device('cuda', rank)")]
        [True, True, True, False, False, False]
    """
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "current_device":
            return not value.args
        names = engine.qualified(func) or {dotted(func)}  # a free `torch`: as spelled
        if "torch.device" not in names or len(value.args) != 1:
            return False
        value = value.args[0].value
    text = literal(value)
    return isinstance(text, str) and ":" not in text


def sets_device(engine: Engine) -> bool:
    """Whether the module calls a ``set_device`` (``torch.cuda.set_device(rank)``) anywhere."""
    key = "FSDP401:sets_device"
    if key not in engine.scratch:
        engine.scratch[key] = any(
            isinstance(call.func, cst.Attribute) and call.func.attr.value in _SETTERS
            for call in engine.nodes(cst.Call)
        )
    return engine.scratch[key]
