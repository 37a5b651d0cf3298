"""docs/matrix.md is what .ci/matrix.py renders from the junit files beside it, and it
shows the matrix the project claims: six or more torch releases on CPU, 1.13 and 2.15
among them, none failing, and the CI environment running every multi-process test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

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


def test_the_page_is_rendered_from_the_junit_files(matrix, runs):
    assert matrix.PAGE.read_text(encoding="utf-8") == matrix.render(runs), (
        "docs/matrix.md is stale: run python .ci/matrix.py --render"
    )


def test_six_or_more_releases_on_cpu_none_failing(runs):
    cpu = {run.release: run for run in runs if not run.gpu}
    assert len(cpu) >= 6 and {"1.13", "2.15"} <= set(cpu), sorted(cpu)
    assert not [run.torch for run in runs if run.failed]
    assert all(run.passed > 500 for run in cpu.values())


def test_the_ci_environment_runs_every_distributed_test(runs):
    (ci,) = [run for run in runs if run.release == "2.13" and not run.gpu]
    assert ci.distributed_run > 0 and ci.distributed_skipped == 0


def test_rows_start_with_the_torch_release(matrix, runs):
    rows = [
        line
        for line in matrix.PAGE.read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and line[2].isdigit()
    ]
    assert sorted(row.split(" | ")[0][2:] for row in rows) == sorted(r.release for r in runs)
