"""Shared fixtures: a clean slate for compat's warnings, and what the matrix records.

Each run records its environment (torch, Python, device) as junit test-suite
properties (from pytest-xdist's controller when the run is parallel) and each test's
markers as test-case properties, so that
``.ci/matrix.py`` builds ``docs/matrix.md`` from the junit output alone. Tests marked
``gpu`` are skipped where CUDA is absent.
"""

from __future__ import annotations

import gc
import platform

import pytest

from tests import bytecode, xdist_plan


def _cuda_devices() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


_RECORDED_MARKERS = {"distributed", "gpu", "slow"}


@pytest.hookimpl(trylast=True)  # on the tests that will run, once deselection is done
def pytest_collection_modifyitems(config, items):
    # Recorded here, not in a fixture: a test skipped by a mark never runs its fixtures,
    # and the matrix counts the distributed tests each release skips.
    for item in items:
        markers = sorted({m.name for m in item.iter_markers()} & _RECORDED_MARKERS)
        if markers:
            item.user_properties.append(("markers", ",".join(markers)))
    xdist_plan.record(config, items)
    if _cuda_devices():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# pytest-xdist: how the tests are handed out to the workers (tests/xdist_plan.py).


#: The ``__pycache__`` folders this run made (tests/bytecode.py), removed at its end.
_MADE_BYTECODE: list = []


def pytest_configure(config):
    xdist_plan.start(config)
    if not hasattr(config, "workerinput"):  # once: before pytest-xdist starts its workers
        _MADE_BYTECODE[:] = bytecode.compile_checkout()
    # Python's default collector runs every 700 allocations; the libcst trees the tests
    # build allocate millions of nodes, so the default thresholds spent about a tenth of
    # a worker's time scanning (benchmarks/README.md). Cycles are still collected.
    gc.set_threshold(20_000, 20, 20)


def pytest_collection_finish(session):
    # What collection imported (torch, libcst, every test module) lives for the whole
    # run: frozen, the collector stops scanning it again and again.
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config):
    xdist_plan.finish(config)
    if not hasattr(config, "workerinput"):
        bytecode.remove(_MADE_BYTECODE)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    xdist_plan.tell(node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return xdist_plan.scheduler(config, log)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    # The environment goes into the junit file from the process that writes it: the only
    # one in a plain run, pytest-xdist's controller in a parallel one (its workers write
    # no junit file, so ``record_testsuite_property`` there records nothing).
    from _pytest.junitxml import xml_key

    xml = session.config.stash.get(xml_key, None)
    if xml is None:
        return
    try:
        import torch
    except ImportError:
        torch = None
    xml.add_global_property("python", platform.python_version())
    xml.add_global_property("torch", torch.__version__ if torch else "none")
    gpus = _cuda_devices()
    device = f"cuda:{gpus}x {torch.cuda.get_device_name(0)}" if gpus else "cpu"
    xml.add_global_property("device", device)


@pytest.fixture(autouse=True)
def _fork_server_first(request):
    """A multi-process test finds this process's fork server started by tests.distributed.

    Otherwise a port-checker test that came first would start it with compat's shorter
    preload, and every later rank here would import Lightning and libcst itself and scan
    torch's objects (``tests.distributed.start_fork_server``).
    """
    if request.node.get_closest_marker("distributed") is None:
        return
    try:
        from tests import distributed
    except ImportError:  # torch missing: nothing here starts ranks
        return
    distributed.start_fork_server()


_BACKENDS_BY_MODULE: dict[str, set[tuple[str, str]]] = {}


@pytest.fixture(autouse=True)
def _record_backends(request):
    """Record on the test's junit entry the backends and devices its ranks ran on.

    The runs made since the last test (this test's, or a module fixture's set up for
    it) are its own; a distributed test that made none reads its module's shared runs.
    """
    import sys

    yield
    harness = sys.modules.get("tests.distributed")
    if harness is None:
        return
    runs = set(harness.RUNS)
    harness.RUNS.clear()
    module = request.node.nodeid.split("::")[0]
    if runs:
        _BACKENDS_BY_MODULE.setdefault(module, set()).update(runs)
    elif request.node.get_closest_marker("distributed"):
        runs = _BACKENDS_BY_MODULE.get(module, set())
    if runs:
        request.node.user_properties.append(
            ("backend", ",".join(sorted(f"{backend}:{device}" for backend, device in runs)))
        )


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


@pytest.fixture
def quick_matcher_visitors(monkeypatch):
    """libcst's matcher visitors, each class's decorated methods looked for once.

    For the tests whose oracle is libcst's import visitors (tests/matcher_visitors.py).
    """
    from libcst.matchers import _visitors

    from tests.matcher_visitors import QUICK

    for name, quick in QUICK.items():
        monkeypatch.setattr(_visitors, name, quick)


@pytest.fixture
def current_releases(tmp_path):
    """``tmp_path`` as a project that declares the current releases (see CURRENT_RELEASES)."""
    from tests.scratch_projects import CURRENT_RELEASES

    (tmp_path / "pyproject.toml").write_text(CURRENT_RELEASES)
    return tmp_path
