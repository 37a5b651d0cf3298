"""A file that runs code under ``torch.inference_mode()``: FSDP2 may raise there.

FSDP1's model runs under inference mode on any number of ranks. FSDP2's all-gather
preserves its buffers' version counters, which inference tensors do not have: on
torch 2.13, a ``fully_shard`` model on a single rank raises "Inference tensors do not
track version counter" at its first forward under ``torch.inference_mode()`` (checked
on gloo: FSDP1 runs, FSDP2 raises with one rank and runs with two; pytorch#197327
fixes the single-rank path after 2.13, and pytorch#146709 the multi-rank one in
2025). A conversion in such a file says so (mochi's pipelines shard their encoders
and run them only under inference mode).
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.syntax.lazy_libcst import cst

#: Where ``inference_mode`` is imported from.
INFERENCE_MODE = frozenset(
    {
        "torch.inference_mode",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
    }
)
NOTE = (
    "the file runs code under `torch.inference_mode()` (line {line}), where an FSDP2 "
    "model may raise: on torch 2.13 with a single rank its first forward there fails "
    'with "Inference tensors do not track version counter" (FSDP1\'s ran): use '
    "`torch.no_grad()` for the sharded model"
)


def inference_note(engine: Engine) -> list[str]:
    """:data:`NOTE` where the file uses ``torch.inference_mode``, else nothing (once a file)."""
    found = engine.scratch.get("FSDP401-inference")
    if found is None:
        found = engine.scratch["FSDP401-inference"] = _note(engine)
    return found


def _note(engine: Engine) -> list[str]:
    for name in engine.nodes(cst.Name):
        if name.value != "inference_mode":  # type: ignore[attr-defined]
            continue
        parent = engine.parent(name)
        node = parent if isinstance(parent, cst.Attribute) and parent.attr is name else name
        if engine.qualified(node) & INFERENCE_MODE:
            return [NOTE.format(line=engine.position(node).start.line)]
    return []
