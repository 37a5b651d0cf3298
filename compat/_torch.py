"""Import torch or say exactly what to install."""

from __future__ import annotations

import importlib.util
import sys
import types

INSTALL_HINT = (
    "compat needs PyTorch, which fsdp-compat does not install for you (the lint hook "
    "must stay light). Install the torch you run on, e.g. `pip install torch`, or "
    "`pip install 'fsdp-compat[lightning]'` for Lightning support. The codemods "
    "(`python -m codemods.migrate`, `python -m codemods.lint`) work without torch."
)


def require_torch() -> types.ModuleType:
    """Return the ``torch`` module.

    Raises:
        ImportError: If torch is not installed, with the install command to run.
    """
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(INSTALL_HINT) from exc
    return torch


def check_torch() -> None:
    """Make sure torch can be imported, without importing it.

    ``import compat`` (and so ``python -m compat``) must not cost a program that never
    imports torch the second or more that importing torch takes: finding its package is
    enough to say what to install.

    Raises:
        ImportError: If torch is not installed, with the install command to run.
    """
    if "torch" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):  # a finder that refuses it, a broken entry
        spec = None
    if spec is None:
        raise ImportError(INSTALL_HINT)
