"""Installed torch and Lightning versions, and named feature flags derived from them.

Code and tests ask these flags ("does this torch have ``ModuleWrapPolicy``?") instead
of comparing version numbers in scattered places. Where a feature can be seen by
looking at torch (a name, a parameter), the flag looks; where it can only be known
from the release (FSDP running on CPU), the flag reads the release from the registry's
capability table, so the version lives in one place.

Example:
    >>> from compat.features import current
    >>> flags = current()
    >>> flags.policy_numel_kwarg in ("nonwrapped_numel", "unwrapped_params")
    True
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import inspect
import types
from dataclasses import dataclass

from packaging.version import Version

from codemods.registry import REGISTRY
from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP, TORCH_WRAP
from compat._torch import require_torch


def parse_version(text: str) -> Version:
    """Parse a release string, dropping local tags such as ``+cpu`` or ``+cu121``.

    Pre-releases and dev builds count as the release they lead to, so that a nightly
    ``2.6.0.dev20241101`` has the 2.6 features.

    Example:
        >>> parse_version("2.13.0+cpu")
        <Version('2.13.0')>
        >>> parse_version("2.6.0a0+git1234")
        <Version('2.6.0')>
    """
    return Version(Version(text).base_version)


def torch_version() -> Version:
    """The installed torch release."""
    return parse_version(require_torch().__version__)


@functools.cache
def lightning_version() -> Version | None:
    """The installed Lightning release (``lightning`` or ``pytorch_lightning``), or None.

    Asked only where wanted: importing Lightning (and torchmetrics with it) costs a
    process about a second and 44 MB, which a torch-only script's ranks should not pay.
    """
    for name in ("lightning", "pytorch_lightning"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return parse_version(module.__version__)
    return None


@dataclass(frozen=True)
class Features:
    """What the installed torch and Lightning can do.

    Attributes:
        torch: The torch release.
        distributed: ``torch.distributed`` is built in and FSDP's wrap module imports.
        module_wrap_policy: ``torch.distributed.fsdp.wrap.ModuleWrapPolicy`` exists.
        custom_policy: ``torch.distributed.fsdp.wrap.CustomPolicy`` exists.
        policy_numel_kwarg: What policy callables call their numel argument:
            ``"nonwrapped_numel"`` (torch >= 2.0) or ``"unwrapped_params"``.
        fsdp1_on_cpu: FSDP1 runs on CPU with gloo when given ``device_id=cpu``.
        fsdp2_module: Where ``fully_shard`` lives (``"torch.distributed.fsdp"`` or
            ``"torch.distributed._composable.fsdp"``), or None without FSDP2.
        fsdp2_on_cpu: FSDP2 runs on CPU with gloo.
        ac_auto_wrap_policy: ``apply_activation_checkpointing`` takes ``auto_wrap_policy``.
        checkpoint_no_reentrant_default: ``checkpoint_wrapper`` defaults to non-reentrant.
        selective_ac: ``torch.utils.checkpoint.create_selective_checkpoint_contexts`` exists.
    """

    torch: Version
    distributed: bool
    module_wrap_policy: bool
    custom_policy: bool
    policy_numel_kwarg: str
    fsdp1_on_cpu: bool
    fsdp2_module: str | None
    fsdp2_on_cpu: bool
    ac_auto_wrap_policy: bool
    checkpoint_no_reentrant_default: bool
    selective_ac: bool

    @property
    def lightning(self) -> Version | None:
        """The Lightning release, or None when Lightning is not installed.

        Read when first asked, not by :func:`current`.
        """
        return lightning_version()

    @property
    def fsdp2(self) -> bool:
        """FSDP2 (``fully_shard``) is available at all."""
        return self.fsdp2_module is not None


def import_fsdp_module(name: str = TORCH_FSDP) -> types.ModuleType:
    """Import one of torch's FSDP modules, or say why this torch cannot.

    Raises:
        ImportError: If torch has no ``torch.distributed`` or its FSDP fails to import
            (torch 1.13's FSDP needs Python <= 3.10).
    """
    if not require_torch().distributed.is_available():
        raise ImportError(f"{name} needs torch.distributed, which this torch build lacks")
    try:
        return importlib.import_module(name)
    except Exception as exc:  # torch 1.13 on Python 3.11 fails with ValueError
        raise ImportError(
            f"{name} does not import with torch {torch_version()} on this Python ({exc}); "
            "torch 1.13's FSDP needs Python <= 3.10"
        ) from exc


def _since(name: str, version: Version) -> bool:
    return version >= Version(REGISTRY.capability(name).since)


def _fsdp_wrap_module():
    try:
        return importlib.import_module(TORCH_WRAP)
    except Exception:  # noqa: BLE001 - torch 1.13 on Python 3.11 fails with ValueError
        return None


def _installed_module(name: str) -> types.ModuleType:
    """Import ``name`` where a file of torch's provides it, never a drop-in's stand-in.

    Under ``python -m compat`` an old module path this torch lacks is served by a
    stand-in that warns its importer (``torch.distributed._composable.fsdp`` on torch
    2.2, FSDP107): a probe of compat's own must not import one.

    Raises:
        ModuleNotFoundError: No file provides ``name``.
    """
    parent, _, _ = name.rpartition(".")
    path = getattr(importlib.import_module(parent), "__path__", None)
    if importlib.machinery.PathFinder.find_spec(name, path) is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    return importlib.import_module(name)


def fsdp2_module_name() -> str | None:
    """Where this torch's ``fully_shard`` lives (with ``FSDPModule``), or None.

    Only modules a torch file provides count (:func:`_installed_module`).
    """
    for name in (TORCH_FSDP, COMPOSABLE_FSDP):
        try:
            module = _installed_module(name)
        except Exception:  # noqa: BLE001 - absent, or broken on this Python
            continue
        # torch 2.3's early fully_shard lacks FSDPModule and offload_policy: not counted.
        if hasattr(module, "fully_shard") and hasattr(module, "FSDPModule"):
            return name
    return None


def _checkpoint_wrapper_module():
    try:
        return importlib.import_module(
            "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
        )
    except Exception:  # noqa: BLE001
        return None


def _parameters(function) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters)


@functools.cache
def current() -> Features:
    """Detect the features of the installed torch and Lightning (computed once)."""
    torch = require_torch()
    version = torch_version()
    wrap = _fsdp_wrap_module() if torch.distributed.is_available() else None
    distributed = wrap is not None
    numel_kwarg = "nonwrapped_numel"
    if wrap is not None and "unwrapped_params" in _parameters(wrap.size_based_auto_wrap_policy):
        numel_kwarg = "unwrapped_params"
    fsdp2_module = fsdp2_module_name() if distributed else None
    ac = _checkpoint_wrapper_module() if distributed else None
    no_reentrant = False
    if ac is not None:
        default = inspect.signature(ac.checkpoint_wrapper).parameters["checkpoint_impl"].default
        no_reentrant = default is ac.CheckpointImpl.NO_REENTRANT
    return Features(
        torch=version,
        distributed=distributed,
        module_wrap_policy=distributed and hasattr(wrap, "ModuleWrapPolicy"),
        custom_policy=distributed and hasattr(wrap, "CustomPolicy"),
        policy_numel_kwarg=numel_kwarg,
        fsdp1_on_cpu=distributed and _since("fsdp1_on_cpu", version),
        fsdp2_module=fsdp2_module,
        fsdp2_on_cpu=fsdp2_module is not None and _since("fsdp2_on_cpu", version),
        ac_auto_wrap_policy=ac is not None
        and "auto_wrap_policy" in _parameters(ac.apply_activation_checkpointing),
        checkpoint_no_reentrant_default=no_reentrant,
        selective_ac=hasattr(
            importlib.import_module("torch.utils.checkpoint"),
            "create_selective_checkpoint_contexts",
        ),
    )


# Distributed checkpoint is probed apart from current(): importing it costs time that
# programs not using it should not pay.


def _dcp_module(name: str = "torch.distributed.checkpoint") -> types.ModuleType | None:
    if not require_torch().distributed.is_available():
        return None
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent (torch < 2.0 / < 2.2), or broken on this Python
        return None


@functools.cache
def dcp_save_load() -> bool:
    """Whether ``torch.distributed.checkpoint.save`` / ``load`` exist (torch >= 2.2).

    torch 2.0 and 2.1 have only ``save_state_dict`` / ``load_state_dict``. The probe
    imports distributed checkpoint.
    """
    return hasattr(_dcp_module(), "save")


@functools.cache
def dcp_state_dict() -> bool:
    """Whether ``torch.distributed.checkpoint.state_dict`` imports (torch >= 2.2).

    It holds ``get_model_state_dict`` and its family, and ``StateDictOptions``. The probe
    imports distributed checkpoint.
    """
    module = _dcp_module("torch.distributed.checkpoint.state_dict")
    return hasattr(module, "StateDictOptions")
