"""FSDP1's ``MixedPrecision`` as FSDP2's ``MixedPrecisionPolicy``, unit by unit.

What FSDP1 does, and what the bridge does for it:

- ``param_dtype`` / ``reduce_dtype``: the same fields of ``MixedPrecisionPolicy``.
- Input casting: FSDP1's root casts its forward inputs to ``param_dtype`` when
  ``cast_root_forward_inputs`` (default ``True``) or ``cast_forward_inputs`` is set; a
  non-root unit casts only with ``cast_forward_inputs`` (default ``False``). FSDP2 casts
  per unit with its own policy's ``cast_forward_inputs``, so the root unit gets the
  first rule and the others the second. (Passing FSDP1's ``cast_forward_inputs=False``
  to every unit would leave an fp32 input to a bf16 model uncast.)
- ``_module_classes_to_ignore`` (``_BatchNorm`` by default), with a policy: those
  modules become units without mixed precision (:mod:`compat.fsdp2.units`) and get
  FSDP1's hooks that run them in fp32 and cast their outputs back
  (:func:`run_in_full_precision`).
- ``buffer_dtype``: FSDP1 casts each unit's floating-point buffers to it before the
  first forward and hands them back in their own dtype in state dicts; FSDP2 has no
  buffer precision. A non-persistent buffer (never in a state dict) is cast here, which
  is exact; a persistent one of another dtype raises (:func:`buffer_casts`).
- ``keep_low_precision_grads=True`` (gradients left in ``param_dtype``) has no FSDP2
  equivalent and raises, as does ``FSDP_USE_FULL_PREC_IN_EVAL=1`` (FSDP1 then computes
  in full precision in eval mode).
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.nn as nn

from compat.fsdp2.availability import fsdp2_module

FULL_PRECISION_IN_EVAL = "FSDP_USE_FULL_PREC_IN_EVAL"


def check_mixed_precision(precision: Any) -> None:
    """Raise for the ``MixedPrecision`` fields FSDP2 cannot reproduce.

    Raises:
        NotImplementedError: ``keep_low_precision_grads=True``, or FSDP1's
            full-precision-in-eval switch set in the environment.
    """
    if precision is None:
        return
    if getattr(precision, "keep_low_precision_grads", False):
        raise NotImplementedError(
            "mixed_precision.keep_low_precision_grads=True: FSDP2 always hands back gradients "
            "in the parameters' dtype. By hand: drop the flag (the optimizer then steps on "
            "full-precision gradients) or cast the gradients yourself after backward"
        )
    if precision.param_dtype is not None and os.environ.get(FULL_PRECISION_IN_EVAL) == "1":
        raise NotImplementedError(
            f"{FULL_PRECISION_IN_EVAL}=1: FSDP1 computes in full precision in eval mode, FSDP2 "
            "has no such switch. By hand: unset it, or evaluate a full-precision copy"
        )


def mp_policy(precision: Any, is_root: bool) -> Any:
    """FSDP2's ``MixedPrecisionPolicy`` for one unit with FSDP1 ``precision``.

    Args:
        precision: The unit's FSDP1 ``MixedPrecision`` (``None``: full precision).
        is_root: Whether the unit is the root (FSDP1 casts the root's inputs by default).
    """
    policy_class = fsdp2_module().MixedPrecisionPolicy
    if precision is None:
        return policy_class()
    cast = bool(precision.cast_forward_inputs) or (
        is_root and bool(getattr(precision, "cast_root_forward_inputs", True))
    )
    return policy_class(
        param_dtype=precision.param_dtype,
        reduce_dtype=precision.reduce_dtype,
        cast_forward_inputs=cast,
    )


def run_in_full_precision(root: nn.Module, classes: tuple[type, ...]) -> None:
    """FSDP1's hooks on ``classes``' modules: compute in fp32, hand outputs back cast.

    Each such module casts its floating-point inputs to fp32 before its forward and its
    outputs back to the inputs' dtype after, as FSDP1 does for the modules it keeps out
    of mixed precision (it registers these on every such module under the root, ignored
    ones included).
    """
    for module in root.modules():
        if isinstance(module, classes):
            state: dict[str, torch.dtype] = {}
            module.register_forward_pre_hook(_to_fp32(state), prepend=False)
            module.register_forward_hook(_back(state), prepend=False)


def _cast_tree(value: Any, dtype: torch.dtype, seen: dict[str, torch.dtype] | None) -> Any:
    if isinstance(value, torch.Tensor):
        if not torch.is_floating_point(value) or value.dtype == dtype:
            return value
        if seen is not None:
            seen["dtype"] = value.dtype
        return value.to(dtype)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_cast_tree(item, dtype, seen) for item in value)
    if isinstance(value, tuple):  # a named tuple
        return type(value)(*(_cast_tree(item, dtype, seen) for item in value))
    if isinstance(value, dict):
        return {key: _cast_tree(item, dtype, seen) for key, item in value.items()}
    return value


def _to_fp32(state: dict[str, torch.dtype]) -> Any:
    def hook(module: nn.Module, args: tuple[Any, ...]) -> Any:
        return _cast_tree(args, torch.float32, state)

    return hook


def _back(state: dict[str, torch.dtype]) -> Any:
    def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        if "dtype" in state:
            return _cast_tree(output, state["dtype"], None)
        return None

    return hook


def buffer_casts(units: list[Any], ignored_buffers: list[set[int]]) -> list[list[tuple]]:
    """The buffers each unit must cast for FSDP1's ``buffer_dtype``, checked up front.

    FSDP1 casts each floating-point buffer with the ``buffer_dtype`` of the deepest unit
    holding it, leaving out the buffers of the ignored modules that unit sees.

    Args:
        units: The units in FSDP1's order (:func:`compat.fsdp2.units.fsdp1_units`).
        ignored_buffers: Per unit, the ids of the buffers it leaves alone.

    Returns:
        Per unit, ``(module, buffer name, dtype)`` of each buffer to cast.

    Raises:
        NotImplementedError: A persistent buffer whose dtype ``buffer_dtype`` changes.
    """
    seen: set[int] = set()
    plans: list[list[tuple]] = []
    for index, unit in enumerate(units):
        dtype = getattr(unit.kwargs.get("mixed_precision"), "buffer_dtype", None)
        plan: list[tuple] = []
        for owner_name, owner in unit.module.named_modules():
            for name, buffer in owner._buffers.items():
                if buffer is None or id(buffer) in seen:
                    continue
                seen.add(id(buffer))
                if dtype is None or id(buffer) in ignored_buffers[index]:
                    continue
                if not torch.is_floating_point(buffer) or buffer.dtype == dtype:
                    continue
                if name not in owner._non_persistent_buffers_set:
                    full = ".".join(filter(None, (unit.name, owner_name, name)))
                    raise NotImplementedError(
                        f"mixed_precision.buffer_dtype={dtype}: FSDP1 computes with the "
                        f"persistent buffer {full!r} ({buffer.dtype}) in {dtype} but saves it "
                        f"as {buffer.dtype}; FSDP2 has no buffer precision. By hand: cast the "
                        "buffers yourself before sharding (checkpoints then hold them in "
                        f"{dtype}), or drop buffer_dtype"
                    )
                plan.append((owner, name, dtype))
        plans.append(plan)
    return plans


def cast_buffers(plan: list[tuple]) -> None:
    """Cast the buffers :func:`buffer_casts` listed for one unit, in place."""
    for owner, name, dtype in plan:
        buffer = owner._buffers[name]
        buffer.data = buffer.to(dtype)


__all__ = [
    "FULL_PRECISION_IN_EVAL",
    "buffer_casts",
    "cast_buffers",
    "check_mixed_precision",
    "mp_policy",
    "run_in_full_precision",
]
