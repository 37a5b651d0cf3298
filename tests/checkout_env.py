"""The environment a test's child Python runs this checkout in.

A test that starts Python puts the checkout first on ``PYTHONPATH`` and keeps what the
caller had there: the GPU leg (``.ci/gpu.sh``) installs libcst and pyflakes into a folder
it names on ``PYTHONPATH``, and a child that loses that folder cannot import them.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout_env(pythonpath: str | None = None) -> dict[str, str]:
    """``os.environ`` with the checkout first on ``PYTHONPATH``.

    Args:
        pythonpath: What follows the checkout; default the caller's ``PYTHONPATH``.

    Example:
        >>> checkout_env("/elsewhere")["PYTHONPATH"] == os.pathsep.join([str(ROOT), "/elsewhere"])
        True
    """
    rest = os.environ.get("PYTHONPATH") if pythonpath is None else pythonpath
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), rest) if p)}
