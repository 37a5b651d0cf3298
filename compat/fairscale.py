"""FairScale's FSDP API (archived) mapped onto torch FSDP.

``from compat.fairscale import FullyShardedDataParallel, auto_wrap, enable_wrap, wrap``
keeps FairScale-era code running: each call builds torch's FSDP with the arguments
translated, warns with the FairScale rule's code, and names every argument that has no
torch meaning instead of dropping it silently. FairScale's ZeRO stack (``OSS``,
``ShardedDataParallel``, ``ShardedGradScaler``) is served from :mod:`compat.fairscale_zero`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.nn as nn

from codemods.registry.names import FAIRSCALE_FSDP_ARGUMENTS, FAIRSCALE_PRECISION_DETAILS
from codemods.rules.call_blockers import Argument
from compat.call_source import described
from compat.deprecation import warn_deprecated
from compat.features import import_fsdp_module
from compat.fsdp import FSDP
from compat.fsdp import wrap as compat_wrap
from compat.policies import normalize_policy, select_modules
from compat.signatures import given_arguments, legacy_signature

if TYPE_CHECKING:  # served lazily by __getattr__ below
    from compat.fairscale_zero import OSS, ShardedDataParallel, ShardedGradScaler

_torch_fsdp = import_fsdp_module()

_FAIRSCALE_SIGNATURE = legacy_signature(FAIRSCALE_FSDP_ARGUMENTS, leading=("module",))
# Arguments torch FSDP expresses; the rest have no torch meaning and warn by name.
_TRANSLATED = {
    "process_group",
    "reshard_after_forward",
    "mixed_precision",
    "fp32_reduce_scatter",
    "compute_dtype",
    "buffer_dtype",
    "move_params_to_cpu",
    "cpu_offload",
    "move_grads_to_cpu",
    "compute_device",
}


def translate_fairscale_arguments(module: nn.Module, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Translate FairScale FSDP arguments into torch FSDP keyword arguments.

    Returns:
        Keyword arguments for ``torch.distributed.fsdp.FullyShardedDataParallel``
        (without ``module``).

    Raises:
        TypeError: For an argument FairScale's FSDP did not take either.
    """
    given = given_arguments(
        "FullyShardedDataParallel", _FAIRSCALE_SIGNATURE, (module, *args), kwargs
    )
    given.pop("module")
    call = described(given, positional=[module])  # what migrate's verdict is read from
    options = {**FAIRSCALE_FSDP_ARGUMENTS, **given}
    translated: dict[str, Any] = {"process_group": options["process_group"]}
    if options["compute_device"] is not None:  # where FairScale computed: torch's device_id
        translated["device_id"] = options["compute_device"]
    strategy = _torch_fsdp.ShardingStrategy
    translated["sharding_strategy"] = (
        strategy.FULL_SHARD if options["reshard_after_forward"] else strategy.SHARD_GRAD_OP
    )
    if options["mixed_precision"]:
        compute = options["compute_dtype"] or torch.float16
        translated["mixed_precision"] = _torch_fsdp.MixedPrecision(
            param_dtype=compute,
            reduce_dtype=torch.float32 if options["fp32_reduce_scatter"] else compute,
            buffer_dtype=options["buffer_dtype"] or compute,
        )
    elif given.keys() & set(FAIRSCALE_PRECISION_DETAILS):
        _no_meaning(
            sorted(given.keys() & set(FAIRSCALE_PRECISION_DETAILS)),
            "FairScale used it only with mixed_precision=True",
            call,
        )
    offload = bool(options["move_params_to_cpu"] or options["cpu_offload"])
    if offload:
        translated["cpu_offload"] = _torch_fsdp.CPUOffload(offload_params=True)
    grads = options["move_grads_to_cpu"]
    if grads is not None and bool(grads) != offload:
        _no_meaning(
            ["move_grads_to_cpu"],
            "torch offloads gradients exactly when it offloads parameters",
            call,
        )
    untranslated = sorted(name for name in given if name not in _TRANSLATED)
    if "flatten_parameters" in untranslated and given["flatten_parameters"]:
        untranslated.remove("flatten_parameters")  # torch's FSDP1 always flattens
    if untranslated:
        _no_meaning(untranslated, "dropped", call)
    return translated


def _no_meaning(names: list[str], why: str, call: list[Argument]) -> None:
    listed = ", ".join(f"`{name}`" for name in names)
    detail = f"{listed}: no torch FSDP meaning ({why})."
    warn_deprecated("FSDP301", detail=detail, arguments=call)


def FullyShardedDataParallel(module: nn.Module, *args: Any, **kwargs: Any) -> nn.Module:  # noqa: N802
    """Build torch's FSDP from FairScale ``FullyShardedDataParallel`` arguments (FSDP301).

    Its warning says what ``python -m codemods.migrate --unsafe-fixes`` does with this
    call: rewrites it, or leaves it for a human, and why (:mod:`compat.call_source`).
    """
    given = given_arguments(
        "FullyShardedDataParallel", _FAIRSCALE_SIGNATURE, (module, *args), kwargs
    )
    warn_deprecated("FSDP301", arguments=described(given, positional=[given.pop("module")]))
    return FSDP(module, **translate_fairscale_arguments(module, *args, **kwargs))


# The auto-wrap policy of the innermost enable_wrap() context, for auto_wrap().
_context_policy: contextvars.ContextVar[Callable | None] = contextvars.ContextVar(
    "fairscale_auto_wrap_policy", default=None
)


@contextlib.contextmanager
def enable_wrap(auto_wrap_policy: Callable | None = None, **wrapper_kwargs: Any) -> Iterator[None]:
    """FairScale's ``enable_wrap``: ``wrap``/``auto_wrap`` inside use these arguments (FSDP302)."""
    warn_deprecated("FSDP302")
    wrapper_kwargs.setdefault("wrapper_cls", FullyShardedDataParallel)
    token = _context_policy.set(auto_wrap_policy)
    try:
        with compat_wrap.enable_wrap(**wrapper_kwargs):
            yield
    finally:
        _context_policy.reset(token)


def wrap(module: nn.Module, **wrap_overrides: Any) -> nn.Module:
    """FairScale's ``wrap``: wrap ``module`` inside ``enable_wrap``, else return it (FSDP303)."""
    warn_deprecated("FSDP303")
    return compat_wrap.wrap(module, **wrap_overrides)


def auto_wrap(
    module: nn.Module, auto_wrap_policy: Callable | None = None, **kwargs: Any
) -> nn.Module:
    """FairScale's ``auto_wrap``: wrap the submodules the policy selects, bottom-up (FSDP304).

    Outside ``enable_wrap`` it returns ``module`` unchanged, as FairScale did. The policy
    defaults to the context's, then to FairScale's size policy (1e8 parameters).
    """
    warn_deprecated("FSDP304")
    if not _in_wrap_context():
        return module
    policy = (
        auto_wrap_policy
        or _context_policy.get()
        or compat_wrap.size_based_auto_wrap_policy(min_nonwrapped_numel=int(1e8))
    )
    selected = select_modules(module, normalize_policy(policy), include_root=True)
    for name in selected:  # children come before their parents
        if name:
            parent_name, _, attr = name.rpartition(".")
            parent = module.get_submodule(parent_name)
            setattr(parent, attr, compat_wrap.wrap(getattr(parent, attr), **kwargs))
    return compat_wrap.wrap(module, **kwargs) if "" in selected else module


def _in_wrap_context() -> bool:
    # torch's enable_wrap keeps its state on this private class; FairScale did the same.
    config = getattr(compat_wrap.torch_wrap, "_ConfigAutoWrap", None)
    return bool(config is not None and config.in_autowrap_context)


def default_auto_wrap_policy(
    module: nn.Module,
    recurse: bool,
    unwrapped_params: int | None = None,
    module_is_root: bool = False,
    min_num_params: int = int(1e8),
    force_leaf_modules: set[type[nn.Module]] | None = None,
    exclude_wrap_modules: set[type[nn.Module]] | None = None,
    skip_params_check_for_root: bool = False,
    *,
    nonwrapped_numel: int | None = None,
) -> bool:
    """FairScale's size policy, answered by torch's ``size_based_auto_wrap_policy`` (FSDP305)."""
    warn_deprecated("FSDP305")
    numel = nonwrapped_numel if nonwrapped_numel is not None else unwrapped_params
    if numel is None:
        raise TypeError("default_auto_wrap_policy needs the numel argument")
    if module_is_root and skip_params_check_for_root and not recurse:
        return True
    return compat_wrap.torch_wrap.size_based_auto_wrap_policy(
        module, recurse, numel, min_num_params, force_leaf_modules, exclude_wrap_modules
    )


def checkpoint_wrapper(module: nn.Module, offload_to_cpu: bool = False) -> nn.Module:
    """FairScale's ``checkpoint_wrapper``, as torch's non-reentrant one (FSDP306)."""
    warn_deprecated("FSDP306")
    if offload_to_cpu:
        warn_deprecated(
            "FSDP306",
            detail="`offload_to_cpu`: torch's checkpoint_wrapper does not offload; "
            "wrap with offload_wrapper if memory needs it.",
        )
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
    )
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        checkpoint_wrapper as torch_checkpoint_wrapper,
    )

    return torch_checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT)


#: FairScale's ZeRO stack, served from :mod:`compat.fairscale_zero` when first read, so
#: that FSDP code does not import ``torch.distributed.optim``.
_ZERO_NAMES = ("OSS", "ShardedDataParallel", "ShardedGradScaler")


def __getattr__(name: str) -> Any:
    if name in _ZERO_NAMES:
        from compat import fairscale_zero

        return getattr(fairscale_zero, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ZERO_NAMES])


__all__ = [
    "OSS",
    "FullyShardedDataParallel",
    "ShardedDataParallel",
    "ShardedGradScaler",
    "auto_wrap",
    "checkpoint_wrapper",
    "default_auto_wrap_policy",
    "enable_wrap",
    "translate_fairscale_arguments",
    "wrap",
]
