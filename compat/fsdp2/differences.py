"""What a bridged model does otherwise than FSDP1, said when it matters.

The bridge keeps FSDP1's numbers where FSDP2 can, and raises where it cannot; two
differences remain that depend on code it does not see, so it warns with
:class:`BridgeDifferenceWarning`:

- ``use_orig_params=False`` (FSDP1's default): FSDP1 hands the optimizer one flat
  parameter per unit, the bridge (FSDP2) the original parameters. Code that builds
  optimizer groups per module or by name (``module._parameters``, no weight decay on
  biases and norms) saw only flat parameters on FSDP1 and sees the ones it names on the
  bridge: the groups, and so the losses, differ. Said once per bridged call.
- mixed precision with ``reduce_dtype`` other than ``param_dtype``, and gradients
  accumulated without synchronisation (``no_sync()``): FSDP1 accumulates them in
  ``param_dtype`` (bf16), FSDP2 in ``reduce_dtype`` (fp32), so the numbers differ
  slightly (more exact on the bridge). Said at the first ``no_sync()`` of such a model.

Filter them as any warning (``warnings.filterwarnings("ignore",
category=BridgeDifferenceWarning)``) once the difference is accepted.
"""

from __future__ import annotations

import warnings
from typing import Any


class BridgeDifferenceWarning(UserWarning):
    """A bridged model behaves otherwise than FSDP1 here (see :mod:`compat.fsdp2.differences`)."""


ORIGINAL_PARAMETERS = (
    "use_orig_params=False: FSDP1 gives the optimizer one flat parameter per unit, the "
    "bridge (FSDP2) the original parameters. Optimizer groups built per module or by name "
    "(module._parameters, no weight decay on biases and norms) get the parameters they "
    "name here, where FSDP1's flat parameters gave them none: the groups and the losses "
    "differ. Build the groups from named_parameters() and accept the change, or keep FSDP1"
)


def accumulation_message(precision: Any) -> str:
    """What ``no_sync()`` accumulation does otherwise on the bridge with ``precision``."""
    return (
        f"no_sync() with mixed precision (param_dtype={precision.param_dtype}, reduce_dtype="
        f"{precision.reduce_dtype}): FSDP1 accumulates the unsynchronised gradients in "
        f"{precision.param_dtype}, the bridge (FSDP2) in {precision.reduce_dtype}, so the "
        "numbers differ slightly from FSDP1's. Accept it, or reduce every micro-batch"
    )


def accumulates_otherwise(precision: Any) -> bool:
    """Whether ``no_sync()`` accumulates in another dtype on FSDP2 than on FSDP1."""
    param = getattr(precision, "param_dtype", None)
    reduce = getattr(precision, "reduce_dtype", None)
    return param is not None and reduce is not None and reduce != param


def warn_differences(use_orig_params: bool, precision: Any, stacklevel: int = 1) -> None:
    """Warn, at the bridged call, for what it makes differ (the optimizer's parameters)."""
    if not use_orig_params:
        warnings.warn(ORIGINAL_PARAMETERS, BridgeDifferenceWarning, stacklevel=stacklevel + 1)


__all__ = [
    "BridgeDifferenceWarning",
    "ORIGINAL_PARAMETERS",
    "accumulates_otherwise",
    "accumulation_message",
    "warn_differences",
]
