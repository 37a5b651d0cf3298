"""Drop-in ``torch.distributed.fsdp.wrap`` that works on torch 1.13 to 2.15.

Every policy callable here accepts the numel argument as ``nonwrapped_numel`` or as the
legacy ``unwrapped_params`` (which warns), by keyword or by position, and calls the
installed torch's policy by position so either torch spelling is met. ``ModuleWrapPolicy``
and ``CustomPolicy`` are torch's where torch has them and faithful backports where not.

Example:
    >>> import torch.nn as nn
    >>> from compat.fsdp.wrap import size_based_auto_wrap_policy
    >>> policy = size_based_auto_wrap_policy(min_nonwrapped_numel=10)
    >>> policy(nn.Linear(4, 4), recurse=False, nonwrapped_numel=20)
    True
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch.nn as nn

from compat.deprecation import warn_deprecated
from compat.features import current
from compat.policies import adapt_policy_callable, select_modules
from compat.policy_types import CustomPolicy, ModuleWrapPolicy, module_classes, torch_wrap

enable_wrap = torch_wrap.enable_wrap
wrap = torch_wrap.wrap

#: torch's default threshold for size-based wrapping.
DEFAULT_MIN_NONWRAPPED_NUMEL = int(1e8)


def _pick(new_name: str, new: Any, old_name: str, old: Any, code: str | None) -> Any:
    """Return whichever of two spellings was given; warn (``code``) for the old one."""
    if new is not None and old is not None:
        raise TypeError(
            f"got both {new_name}= and its old spelling {old_name}=; pass only {new_name}"
        )
    if old is not None:
        if code is not None:
            warn_deprecated(code)
        return old
    return new


def _numel(nonwrapped_numel: int | None, unwrapped_params: int | None) -> int:
    # torch < 2.0 passes `unwrapped_params` itself: the old spelling is then nobody's fault.
    code = "FSDP102" if current().policy_numel_kwarg == "nonwrapped_numel" else None
    numel = _pick("nonwrapped_numel", nonwrapped_numel, "unwrapped_params", unwrapped_params, code)
    if numel is None:
        raise TypeError("missing the numel argument: nonwrapped_numel=")
    return numel


def size_based_auto_wrap_policy(
    module: nn.Module | None = None,
    recurse: bool | None = None,
    nonwrapped_numel: int | None = None,
    min_nonwrapped_numel: int | None = None,
    force_leaf_modules: set[type[nn.Module]] | None = None,
    exclude_wrap_modules: set[type[nn.Module]] | None = None,
    *,
    unwrapped_params: int | None = None,
    min_num_params: int | None = None,
) -> Any:
    """Wrap a module once the parameters not yet wrapped below it reach a threshold.

    Called with a module, it answers like torch's policy. Called without one, it returns
    the policy with its threshold bound, ready to pass as ``auto_wrap_policy``.

    Args:
        module: The module FSDP asks about (omit to get a configured policy).
        recurse: Whether FSDP asks about descending into ``module``.
        nonwrapped_numel: Parameters of ``module`` not wrapped by a nested unit.
        min_nonwrapped_numel: The threshold (torch calls it ``min_num_params``).
        force_leaf_modules: Classes never descended into.
        exclude_wrap_modules: Classes never wrapped.
        unwrapped_params: Deprecated spelling of ``nonwrapped_numel`` (FSDP102).
        min_num_params: Deprecated spelling of ``min_nonwrapped_numel`` (FSDP106).
    """
    threshold = _pick(
        "min_nonwrapped_numel", min_nonwrapped_numel, "min_num_params", min_num_params, "FSDP106"
    )
    threshold = DEFAULT_MIN_NONWRAPPED_NUMEL if threshold is None else int(threshold)
    if module is None:
        return functools.partial(
            size_based_auto_wrap_policy,
            min_nonwrapped_numel=threshold,
            force_leaf_modules=force_leaf_modules,
            exclude_wrap_modules=exclude_wrap_modules,
        )
    numel = _numel(nonwrapped_numel, unwrapped_params)
    return torch_wrap.size_based_auto_wrap_policy(
        module, recurse, numel, threshold, force_leaf_modules, exclude_wrap_modules
    )


def transformer_auto_wrap_policy(
    module: nn.Module,
    recurse: bool,
    nonwrapped_numel: int | None = None,
    transformer_layer_cls: Any = None,
    *,
    unwrapped_params: int | None = None,
) -> bool:
    """Wrap instances of ``transformer_layer_cls`` (prefer ``ModuleWrapPolicy``: FSDP103)."""
    warn_deprecated("FSDP103")
    classes = module_classes(transformer_layer_cls, "transformer_layer_cls")
    numel = _numel(nonwrapped_numel, unwrapped_params)
    return torch_wrap.transformer_auto_wrap_policy(module, recurse, numel, set(classes))


def lambda_auto_wrap_policy(
    module: nn.Module,
    recurse: bool,
    nonwrapped_numel: int | None = None,
    lambda_fn: Callable[[nn.Module], bool] | None = None,
    *,
    unwrapped_params: int | None = None,
) -> bool:
    """Wrap modules for which ``lambda_fn`` is true (prefer ``CustomPolicy``: FSDP104)."""
    warn_deprecated("FSDP104")
    if lambda_fn is None:
        raise TypeError("lambda_auto_wrap_policy needs lambda_fn=")
    numel = _numel(nonwrapped_numel, unwrapped_params)
    return torch_wrap.lambda_auto_wrap_policy(module, recurse, numel, lambda_fn)


def always_wrap_policy(*args: Any, **kwargs: Any) -> bool:
    """Wrap every module."""
    return True


# torch 2.1 replaced the private `_FSDPPolicy` (a `policy` property returning a callable)
# with `_Policy` (`_run_policy` returning the modules); 2.0 has the former, 2.1+ the latter.
_PolicyBase: Any = vars(torch_wrap).get("_Policy", object)


class _FSDPPolicy(_PolicyBase):
    """torch 2.0's private policy base, for subclasses that define ``policy`` (FSDP105).

    Subclasses keep working on every torch: on 2.1+ ``_run_policy`` selects the modules
    the ``policy`` callable would (see :func:`compat.policies.select_modules`); before
    2.1 the instance itself is the callable FSDP calls.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        warn_deprecated("FSDP105", detail=f"(class {cls.__name__})")

    @property
    def policy(self) -> Callable:
        """The policy callable ``(module, recurse, nonwrapped_numel) -> bool``."""
        raise NotImplementedError(f"{type(self).__name__} must define the `policy` property")

    def __call__(self, *args: Any, **kwargs: Any) -> bool:
        return adapt_policy_callable(self.policy)(*args, **kwargs)

    def _run_policy(
        self, root_module: nn.Module, ignored_modules: set[nn.Module], root_kwargs: dict[str, Any]
    ) -> dict[nn.Module, dict[str, Any]]:
        chosen = set(select_modules(root_module, self.policy, include_root=True))
        return {
            module: dict(root_kwargs)
            for name, module in root_module.named_modules()
            if name in chosen and module not in ignored_modules
        }


def _default_auto_wrap_policy(
    module: nn.Module | None = None,
    recurse: bool | None = None,
    nonwrapped_numel: int | None = None,
    min_num_params: int | None = None,
    force_leaf_modules: set[type[nn.Module]] | None = None,
    exclude_wrap_modules: set[type[nn.Module]] | None = None,
    *,
    unwrapped_params: int | None = None,
    min_nonwrapped_numel: int | None = None,
) -> Any:
    """The size-based policy as torch 1.11 called it, ``default_auto_wrap_policy`` (FSDP101).

    Its threshold is ``min_num_params``, torch's own spelling then and now, so it is
    taken without a warning; compat's ``min_nonwrapped_numel`` is taken too.
    """
    threshold = _pick("min_num_params", min_num_params, "min_nonwrapped_numel", None, None)
    threshold = _pick(
        "min_nonwrapped_numel", min_nonwrapped_numel, "min_num_params", threshold, None
    )
    return size_based_auto_wrap_policy(
        module,
        recurse,
        nonwrapped_numel,
        threshold,
        force_leaf_modules,
        exclude_wrap_modules,
        unwrapped_params=unwrapped_params,
    )


#: Names torch removed, resolved when read so that reading one warns at the reader's line.
_REMOVED = {"default_auto_wrap_policy": ("FSDP101", _default_auto_wrap_policy)}


def __getattr__(name: str) -> Any:
    if name in _REMOVED:
        code, value = _REMOVED[name]
        warn_deprecated(code)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_REMOVED})


__all__ = [
    "CustomPolicy",
    "ModuleWrapPolicy",
    "always_wrap_policy",
    "enable_wrap",
    "lambda_auto_wrap_policy",
    "size_based_auto_wrap_policy",
    "transformer_auto_wrap_policy",
    "wrap",
]
