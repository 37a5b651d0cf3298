"""Shared fixtures: a clean slate for compat's warnings, and what the matrix records.

Each run records its environment (torch, Python, device) as junit test-suite
properties and each test's markers as test-case properties, so that
``.ci/matrix.py`` builds ``docs/matrix.md`` from the junit output alone. Tests marked
``gpu`` are skipped where CUDA is absent.
"""

from __future__ import annotations

import platform

import pytest


def _cuda_devices() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


_RECORDED_MARKERS = {"distributed", "gpu", "slow"}


def pytest_collection_modifyitems(config, items):
    # Recorded here, not in a fixture: a test skipped by a mark never runs its fixtures,
    # and the matrix counts the distributed tests each release skips.
    for item in items:
        markers = sorted({m.name for m in item.iter_markers()} & _RECORDED_MARKERS)
        if markers:
            item.user_properties.append(("markers", ",".join(markers)))
    if _cuda_devices():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _record_environment(record_testsuite_property):
    try:
        import torch
    except ImportError:
        torch = None
    record_testsuite_property("python", platform.python_version())
    record_testsuite_property("torch", torch.__version__ if torch else "none")
    gpus = _cuda_devices()
    device = f"cuda:{gpus}x {torch.cuda.get_device_name(0)}" if gpus else "cpu"
    record_testsuite_property("device", device)


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
