"""FairScale's ZeRO stack (archived) on torch's: ``OSS``, ``ShardedDataParallel``, the scaler.

``compat.fairscale`` re-exports these, so ``python -m compat`` serves
``from fairscale.optim.oss import OSS`` where FairScale is not installed. Each takes
FairScale's arguments, builds torch's counterpart and warns with the rule's code,
naming what runs differently:

- :class:`OSS` is torch's ``ZeroRedundancyOptimizer`` (FSDP307);
- :func:`ShardedDataParallel` is torch's ``DistributedDataParallel`` (FSDP308): every
  gradient is all-reduced instead of reduced to the rank owning its shard, which trains
  the same with more communication;
- :func:`ShardedGradScaler` is torch's shard-aware scaler (FSDP309).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, Callable

import torch
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer

from compat.deprecation import warn_deprecated

_OSS_DETAIL = (
    "compat runs it as torch's ZeroRedundancyOptimizer: the state is consolidated to one "
    "rank only (`state_dict(all_ranks=True)` has no torch form), and it expects a "
    "DistributedDataParallel model (every rank holds full gradients)."
)
#: OSS arguments torch's optimizer has no use for, with FairScale's defaults.
_OSS_ONLY = {"broadcast_buffer_size": -1, "broadcast_fp16": False, "force_broadcast_object": False}
_SDP_DETAIL = (
    "compat builds torch's DistributedDataParallel: every gradient is all-reduced rather "
    "than reduced to the rank owning its optimizer shard (the same training, more traffic)."
)
#: ShardedDataParallel arguments DDP has no use for, with FairScale's defaults.
_SDP_ONLY = {
    "reduce_buffer_size": 2**23,
    "auto_refresh_trainable": True,
    "reduce_fp16": False,
    "warn_on_trainable_params_changed": True,
}


def _dropped(code: str, given: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Warn once, by name, about arguments set away from FairScale's default."""
    names = [name for name, default in defaults.items() if given.get(name, default) != default]
    if names:
        listed = ", ".join(f"`{name}`" for name in names)
        warn_deprecated(code, detail=f"{listed}: no torch meaning (dropped).")


def _materialized(params: Iterable[Any]) -> list[Any]:
    """The parameters (or groups) as lists: they are read twice, once here.

    Raises:
        TypeError: For a single tensor, as torch's optimizers refuse it.
    """
    if isinstance(params, torch.Tensor):
        raise TypeError("OSS: params must be an iterable of tensors or dicts, not a tensor")
    groups = []
    for item in params:
        if isinstance(item, dict):
            inner = item["params"]
            item = {**item, "params": [inner] if isinstance(inner, torch.Tensor) else list(inner)}
        groups.append(item)
    return groups


def _one_dtype(groups: list[Any]) -> bool:
    """Whether every parameter has one dtype: torch's ZeRO buckets assume one per device.

    Examples:
        >>> _one_dtype([nn.Parameter(torch.ones(2)), {"params": [nn.Parameter(torch.ones(1))]}])
        True
        >>> _one_dtype([nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2).double())])
        False
    """
    tensors = [p for item in groups for p in (item["params"] if isinstance(item, dict) else [item])]
    return len({p.dtype for p in tensors}) <= 1


class OSS(ZeroRedundancyOptimizer):
    """FairScale's ``OSS(params, optim=..., group=..., **defaults)`` on torch's ZeRO (FSDP307).

    Args:
        params: The parameters or parameter groups, as for any optimizer.
        optim: The optimizer class each rank runs on its shard (torch's
            ``optimizer_class``).
        group: The process group (torch's ``process_group``).
        **options: FairScale's ``broadcast_buffer_size``, ``broadcast_fp16`` and
            ``force_broadcast_object`` (dropped, with a warning where set), then the
            optimizer's own defaults (``lr=...``).
    """

    def __init__(
        self,
        params: Iterable[Any],
        optim: type[torch.optim.Optimizer] = torch.optim.SGD,
        group: Any = None,
        **options: Any,
    ) -> None:
        warn_deprecated("FSDP307", detail=_OSS_DETAIL)
        fairscale_only = {name: options.pop(name) for name in _OSS_ONLY if name in options}
        _dropped("FSDP307", fairscale_only, _OSS_ONLY)
        groups = _materialized(params)
        # FairScale's OSS broadcast each rank's parameters packed in one flat buffer; torch's
        # bucket view is that, and it broadcasts buffers the optimizer holds. Its per-parameter
        # default sends `param.data` temporaries instead: on torch 2.2 a temporary's Python
        # object is then freed by gloo's worker thread, which needs the GIL, while
        # destroy_process_group joins that thread holding it (a hang at teardown).
        super().__init__(
            groups,
            optimizer_class=optim,
            process_group=group,
            parameters_as_bucket_view=_one_dtype(groups),
            **options,
        )

    def consolidate_state_dict(self, recipient_rank: int = 0, *, to: int | None = None) -> None:
        """Gather the whole state on ``recipient_rank`` (torch's ``to``); call on every rank."""
        super().consolidate_state_dict(to=recipient_rank if to is None else to)

    def state_dict(self, all_ranks: bool = False) -> dict[str, Any]:
        """The consolidated state, on the rank it was consolidated to.

        Raises:
            NotImplementedError: For ``all_ranks=True``: torch keeps it on one rank.
        """
        if all_ranks:
            raise NotImplementedError(
                "OSS.state_dict(all_ranks=True): torch's ZeroRedundancyOptimizer "
                "consolidates the state on one rank; broadcast it yourself "
                "(torch.distributed.broadcast_object_list) where every rank needs it [FSDP307]"
            )
        return super().state_dict()

    def clip_grad_norm(
        self,
        max_norm: float,
        norm_type: float = 2.0,
        filter_params_fn: Callable[[list[nn.Parameter]], list[nn.Parameter]] | None = None,
    ) -> torch.Tensor:
        """Clip the gradients of every parameter to a total norm, as FairScale's did.

        Beside DDP every rank holds all the gradients, so the norm each rank computes
        locally is the global one FairScale gathered from the shards.
        """
        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        if filter_params_fn is not None:
            params = list(filter_params_fn(params))
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)


def ShardedDataParallel(  # noqa: N802 - FairScale's class name
    module: nn.Module,
    sharded_optimizer: Any = None,
    process_group: Any = None,
    broadcast_buffers: bool = True,
    sync_models_at_startup: bool = True,
    **options: Any,
) -> nn.Module:
    """FairScale's ``ShardedDataParallel`` as torch's ``DistributedDataParallel`` (FSDP308).

    ``sharded_optimizer`` is not needed (DDP gives every rank all the gradients); DDP
    always broadcasts rank 0's parameters at construction, so
    ``sync_models_at_startup=False`` is refused rather than ignored.

    Raises:
        ValueError: For ``sync_models_at_startup=False``.
        TypeError: For an argument FairScale's class did not take either.
    """
    warn_deprecated("FSDP308", detail=_SDP_DETAIL)
    unknown = sorted(set(options) - set(_SDP_ONLY))
    if unknown:
        raise TypeError(f"ShardedDataParallel() got unexpected arguments: {', '.join(unknown)}")
    if not sync_models_at_startup:
        raise ValueError(
            "ShardedDataParallel(sync_models_at_startup=False): torch's DistributedDataParallel "
            "always broadcasts rank 0's parameters when it is built [FSDP308]"
        )
    _dropped("FSDP308", options, _SDP_ONLY)
    # DDP's own default is True; passing it makes torch 2.13 warn about the argument.
    buffers = {} if broadcast_buffers else {"broadcast_buffers": False}
    return nn.parallel.DistributedDataParallel(module, process_group=process_group, **buffers)


def ShardedGradScaler(  # noqa: N802 - FairScale's class name
    init_scale: float = 2.0**16,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
    enabled: bool = True,
    process_group: Any = None,
    *,
    device: str = "cuda",
) -> Any:
    """FairScale's ``ShardedGradScaler`` arguments, in its order, for torch's scaler (FSDP309).

    Args:
        init_scale: The first loss scale.
        growth_factor: The factor the scale grows by after ``growth_interval`` good steps.
        backoff_factor: The factor it shrinks by after a step with infs or NaNs.
        growth_interval: Good steps between two growths.
        enabled: False makes every method a pass-through.
        process_group: Where the inf/NaN check is all-reduced (default: the world).
        device: torch's, not FairScale's: FairScale scaled on CUDA only (its scaler, like
            torch's for ``"cuda"``, disables itself without CUDA). torch's scaler takes it
            after 2.2; up to 2.2 it scales on CUDA only, as FairScale's.

    Raises:
        ValueError: For a ``device`` other than ``"cuda"`` on torch 2.2 or older.
    """
    warn_deprecated("FSDP309")
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler as TorchScaler

    group = {} if process_group is None else {"process_group": process_group}
    if "device" in inspect.signature(TorchScaler.__init__).parameters:
        group["device"] = device
    elif device != "cuda":
        raise ValueError(
            f"device={device!r}: torch {torch.__version__}'s ShardedGradScaler scales on CUDA "
            "only (its device argument came after torch 2.2)"
        )
    return TorchScaler(
        init_scale=init_scale,
        growth_factor=growth_factor,
        backoff_factor=backoff_factor,
        growth_interval=growth_interval,
        enabled=enabled,
        **group,
    )


__all__ = ["OSS", "ShardedDataParallel", "ShardedGradScaler"]
