"""docs/matrix.md is what .ci/matrix.py renders from the junit files beside it, and it
shows the matrix the project claims: six or more torch releases on CPU, 1.13 and 2.15
among them, none failing, and the CI environment running every multi-process test; and
a focused run (census, state-dict and FSDP2 runs) on every release of tox's matrix
label, none failing, FSDP2's runs run wherever FSDP2 runs on CPU.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from packaging.version import Version

from codemods.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def matrix():
    spec = importlib.util.spec_from_file_location("ci_matrix", ROOT / ".ci" / "matrix.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["ci_matrix"] = module  # dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(matrix):
    return [matrix.read(path) for path in sorted(matrix.RESULTS.glob("*.xml"))]


@pytest.fixture(scope="module")
def focused(matrix):
    return [matrix.read(path) for path in sorted(matrix.FOCUSED.glob("*.xml"))]


def test_the_page_is_rendered_from_the_junit_files(matrix, runs, focused):
    assert matrix.PAGE.read_text(encoding="utf-8") == matrix.render(runs, focused), (
        "docs/matrix.md is stale: run python .ci/matrix.py --render"
    )


def test_six_or_more_releases_on_cpu_none_failing(runs):
    cpu = {run.release: run for run in runs if not run.gpu}
    assert len(cpu) >= 6 and {"1.13", "2.15"} <= set(cpu), sorted(cpu)
    # A GPU row is a lent machine's one run: its failures are listed on the page.
    assert not [run.torch for run in cpu.values() if run.failed]
    assert all(run.passed > 500 for run in cpu.values())


def test_the_ci_environment_runs_every_distributed_test(runs):
    (ci,) = [run for run in runs if run.release == "2.13" and not run.gpu]
    assert ci.distributed_run > 0 and ci.distributed_skipped == 0


def _row_releases(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    return sorted(row.split(" | ")[0][2:] for row in rows)


def test_rows_start_with_the_torch_release(matrix, runs, focused):
    full, _, rest = matrix.PAGE.read_text(encoding="utf-8").partition("\n## Focused runs")
    assert _row_releases(full) == sorted(r.release for r in runs)
    # The focused section has two tables, totals and by test file: a row each per run.
    assert _row_releases(rest) == sorted(2 * [r.release for r in focused])


def _matrix_releases() -> set[str]:
    """The torch release each environment of tox's ``matrix`` label pins."""
    text = (ROOT / "tox.ini").read_text(encoding="utf-8")
    envs = re.search(r"^\s*matrix\s*=\s*(.+)$", text, re.M).group(1).split(",")
    pins = dict(re.findall(r"^\s*(\w+): python -m pip install .*?\"torch==(\d+\.\d+)", text, re.M))
    return {pins[env.strip().rpartition("-")[2]] for env in envs}


def test_every_matrix_release_has_a_focused_run_none_failing(focused):
    assert {run.release for run in focused if not run.gpu} == _matrix_releases()
    assert not [(run.torch, run.failures) for run in focused if run.failed]


def test_focused_runs_hold_every_focused_test_file_and_nothing_else(matrix, focused):
    for run in focused:
        assert set(run.by_file) == set(matrix.FOCUSED_TESTS), run.torch


def test_fsdp2_runs_run_wherever_fsdp2_runs_on_cpu(focused):
    since = Version(REGISTRY.capability("fsdp2_on_cpu").since)
    for run in focused:
        counts = run.by_file["tests/test_fsdp2_runs.py"]
        if Version(run.torch.split("+")[0]) >= since:
            assert counts["passed"] > 0 and counts["skipped"] == 0, (run.torch, counts)


_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" timestamp="2026-11-24T00:00:00">
<properties><property name="python" value="3.11.7" /><property name="torch" value="2.4.1+cu121" />
<property name="device" value="{device}" /></properties>
<testcase classname="tests.test_a" name="ran"><properties>
<property name="markers" value="distributed" /></properties></testcase>
<testcase classname="tests.test_a" name="flag_skipped"><properties>
<property name="markers" value="distributed" /></properties>
<skipped type="pytest.skip" message="this torch runs FSDP2 only on CUDA" /></testcase>
<testcase classname="tests.test_gpu" name="nccl"><properties>
<property name="markers" value="distributed,gpu" /></properties>
<skipped type="pytest.skip" message="needs a CUDA GPU" /></testcase>
<testcase classname="tests.test_b" name="plain" />
</testsuite></testsuites>
"""


@pytest.mark.parametrize(
    "device, expected",
    [("cpu", (1, 1)), ("cuda:1x NVIDIA H100", (1, 2))],
)
def test_distributed_skips_are_counted_gpu_tests_only_on_gpu_rows(
    matrix, tmp_path, device, expected
):
    junit = tmp_path / "run.xml"
    junit.write_text(_JUNIT.format(device=device), encoding="utf-8")
    run = matrix.read(junit)
    assert (run.passed, run.skipped) == (2, 2)
    assert (run.distributed_run, run.distributed_skipped) == expected
    assert run.skips["this torch runs FSDP2 only on CUDA"] == 1


def test_module_skips_give_their_reason_and_file(matrix, tmp_path):
    junit = tmp_path / "run.xml"
    junit.write_text(_JUNIT.format(device="cpu"), encoding="utf-8")
    run = matrix.read(junit)
    assert run.by_file["tests/test_a.py"] == {"passed": 1, "skipped": 1}
    junit.write_text(
        _JUNIT.format(device="cpu").replace(
            '<testcase classname="tests.test_b" name="plain" />',
            '<testcase classname="" name="tests.test_c" file="tests/test_c.py">'
            '<skipped message="collection skipped">'
            "('/x/tests/test_c.py', 41, 'Skipped: this torch has no FSDP2')"
            "</skipped></testcase>",
        ),
        encoding="utf-8",
    )
    run = matrix.read(junit)
    assert run.by_file["tests/test_c.py"] == {"skipped": 1}
    assert run.skips["this torch has no FSDP2"] == 1 and "collection skipped" not in run.skips


def test_a_focused_run_gets_its_own_row_and_keeps_the_full_one(matrix, tmp_path):
    junit = tmp_path / "run.xml"
    junit.write_text(_JUNIT.format(device="cpu"), encoding="utf-8")
    full, focused = tmp_path / "full", tmp_path / "full" / "focused"
    kept = matrix.store(junit, full)
    stored = matrix.store(junit, focused)
    assert kept.exists() and stored.exists() and kept.name == stored.name
    page = matrix.render([matrix.read(kept)], [matrix.read(stored)])
    assert page.count("| 2.4 | cpu | 2.4.1+cu121 |") == 2
    assert "### torch 2.4.1+cu121, cpu (focused)" in page


@pytest.mark.slow
def test_markers_are_recorded_for_tests_a_mark_skips(tmp_path):
    # The matrix counts distributed tests that a feature flag skips: their markers must
    # reach the junit file although a skipped test runs no fixtures. The run is parallel,
    # as the suite's is (pytest-xdist): the environment must reach the file all the same.
    shutil.copyfile(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "tests").mkdir()  # and the modules it imports (how tests go to workers)
    (tmp_path / "tests" / "__init__.py").write_text("", encoding="utf-8")
    for helper in ("xdist_plan.py", "bytecode.py"):
        shutil.copyfile(ROOT / "tests" / helper, tmp_path / "tests" / helper)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\njunit_family = xunit1\nmarkers =\n    distributed: x\n    gpu: x\n",
        encoding="utf-8",
    )
    (tmp_path / "test_skipped.py").write_text(
        "import pytest\n\n\n"
        "@pytest.mark.distributed\n"
        '@pytest.mark.skipif(True, reason="this torch runs FSDP2 only on CUDA")\n'
        "def test_needs_fsdp2():\n    pass\n",
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--junitxml=out.xml"]
    command += ["-n", "1", "--dist", "loadgroup"]  # a controller and a worker, as in CI
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    suite = ET.parse(tmp_path / "out.xml").getroot().find("testsuite")
    recorded = {p.get("name") for p in suite.find("properties").iter("property")}
    assert recorded == {"python", "torch", "device"}
    (case,) = ET.parse(tmp_path / "out.xml").getroot().iter("testcase")
    assert case.find("skipped") is not None
    assert {(p.get("name"), p.get("value")) for p in case.iter("property")} == {
        ("markers", "distributed")
    }
