"""Shared fixtures: a clean slate for compat's once-per-call-site warnings."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_warning_sites():
    """Each test sees compat's warnings anew, even from a line another test used."""
    try:
        from compat.deprecation import reset_warned_sites
    except ImportError:  # torch missing: the test does not use compat
        yield
        return
    reset_warned_sites()
    yield
    reset_warned_sites()


_BLOCK_TORCH = """\
import sys

class _NoTorch:
    # A meta-path finder that makes every torch import fail, as on a machine without it.
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"No module named {name!r} (blocked by the test)")
        return None

sys.meta_path.insert(0, _NoTorch())
for _name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
    del sys.modules[_name]
"""


@pytest.fixture
def run_without_torch():
    """Run Python code in a subprocess where importing torch fails; return its stdout."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def run(code: str, expect_failure: bool = False) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", _BLOCK_TORCH + code],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if expect_failure:
            assert proc.returncode != 0, proc.stdout
            return proc.stderr
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    return run
