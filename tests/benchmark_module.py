"""A script of ``benchmarks/``, loaded as a module for its tests (``benchmarks`` is no package)."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> types.ModuleType:
    """``benchmarks/NAME.py``, executed as the module ``NAME``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
