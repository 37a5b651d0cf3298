"""Lightning 1.x's FSDP precision plugins, as Lightning 2.x's ``FSDPPrecision``.

Lightning 1.7-1.9 had ``FullyShardedNativeNativeMixedPrecisionPlugin`` (torch FSDP)
and ``FullyShardedNativeMixedPrecisionPlugin`` (FairScale FSDP), both taking
``(precision, device, scaler=None)`` with ``precision`` 16 or ``"bf16"``; Lightning 2.x
has ``FSDPPrecision(precision, scaler=None)`` with ``"16-mixed"`` or ``"bf16-mixed"``.
:func:`legacy_precision_plugins` builds both for one Trainer flavour. Each warns with
the registry rule that lists its old name, if one does: the drop-in installs them at
their old homes exactly when the registry has such a rule.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import codemods.registry
from compat.deprecation import warn_deprecated

#: Lightning 1.x precision values and what Lightning 2.x calls them.
_MIXED = {
    "16": "16-mixed",
    "bf16": "bf16-mixed",
    "16-mixed": "16-mixed",
    "bf16-mixed": "bf16-mixed",
}
#: Where Lightning 1.x kept them, under each Trainer package.
OLD_HOMES = {
    "FullyShardedNativeNativeMixedPrecisionPlugin": "plugins.precision.fsdp_native_native_amp",
    "FullyShardedNativeMixedPrecisionPlugin": "plugins.precision.fully_sharded_native_amp",
}


def rule_listing(old: str) -> str | None:
    """The code of the first registry rule that lists the old name ``old``, or None."""
    return next((rule.code for rule in codemods.registry.REGISTRY if old in rule.old), None)


class LegacyFSDPPrecision:
    """``(precision, device, scaler=None)`` as Lightning 1.x took them, for ``FSDPPrecision``."""

    _old_names: tuple[str, ...] = ()

    def __init__(self, precision: Any, device: Any = None, scaler: Any = None) -> None:
        code = next(filter(None, map(rule_listing, self._old_names)), None)
        if code is not None:
            warn_deprecated(code)
        if str(precision) not in _MIXED:
            raise ValueError(
                f"{type(self).__name__} takes precision 16 or 'bf16' (mixed), got {precision!r}"
            )
        super().__init__(precision=_MIXED[str(precision)], scaler=scaler)  # device: unused


class LegacyPrecisionPlugins(NamedTuple):
    """One Trainer flavour's legacy FSDP precision plugins."""

    FullyShardedNativeNativeMixedPrecisionPlugin: type
    FullyShardedNativeMixedPrecisionPlugin: type


def legacy_precision_plugins(
    module: str, fsdp_precision: type, root: str
) -> LegacyPrecisionPlugins:
    """Both plugins on the flavour's ``FSDPPrecision``, homed in ``module`` under their names.

    Args:
        module: The flavour module's ``__name__``; it must bind each class to its name.
        fsdp_precision: That flavour's ``FSDPPrecision``.
        root: That flavour's package (``"pytorch_lightning"``), for the old names.
    """

    def declare(name: str) -> type:
        home = OLD_HOMES[name]
        namespace = {
            "__module__": module,
            "__qualname__": name,
            "__doc__": f"Lightning 1.x's ``{name}``, as ``FSDPPrecision``.",
            "_old_names": tuple(
                f"{root}.{where}.{name}" for where in ("plugins", "plugins.precision", home)
            ),
        }
        bases = (LegacyFSDPPrecision, fsdp_precision)
        return types.new_class(name, bases, exec_body=lambda ns: ns.update(namespace))

    return LegacyPrecisionPlugins(*(declare(name) for name in LegacyPrecisionPlugins._fields))
