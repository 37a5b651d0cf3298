"""Run the validation matrix (tox environments) and write docs/matrix.md from junit output.

    python .ci/matrix.py                      # every environment of tox's `matrix` label
    python .ci/matrix.py torch22 torch215     # just these
    python .ci/matrix.py --add gpu.xml        # a run made elsewhere (the GPU machine)
    python .ci/matrix.py --render             # only rebuild the page from docs/matrix/
    python .ci/matrix.py --workdir /work/toxwork torch24   # tox's work dir elsewhere
    python .ci/matrix.py --focused torch22 torch215        # only FOCUSED_TESTS

Each run's junit file is kept in ``docs/matrix/`` under the torch release and device it
records (``tests/conftest.py`` writes them as test-suite properties), and the page is
rendered from those files alone: its figures are never typed by hand, and
``tests/test_matrix_page.py`` checks the page matches them. A later run of the same
torch and device replaces the earlier one.

A focused run (``--focused``) runs only ``FOCUSED_TESTS`` (the deprecation census, the
state-dict equivalence runs and the FSDP1-to-FSDP2 runs), which is minutes where the
whole suite is most of an hour. Its junit file is written under its own name and kept
in ``docs/matrix/focused/``, so it never replaces a full row; the page shows focused
runs in a table of their own.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "matrix"
FOCUSED = RESULTS / "focused"
PAGE = ROOT / "docs" / "matrix.md"
FOCUSED_TESTS = (
    "tests/test_census.py",
    "tests/test_compat_state_dict.py",
    "tests/test_state_dict_runs.py",
    "tests/test_state_dict_fix_runs.py",
    "tests/test_fsdp2_runs.py",
)


@dataclass
class Run:
    """What one junit file says."""

    torch: str
    device: str
    python: str
    date: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    distributed_run: int = 0
    distributed_skipped: int = 0
    #: Tests that ran ranks on each backend (tests/conftest.py records it per test).
    backends: collections.Counter = field(default_factory=collections.Counter)
    skips: collections.Counter = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)
    by_file: dict[str, collections.Counter] = field(default_factory=dict)

    @property
    def release(self) -> str:
        """``2.13`` for ``2.13.0+cpu``: the column the table is sorted by."""
        return ".".join(re.split(r"[.+]", self.torch)[:2])

    @property
    def key(self) -> tuple[int, ...]:
        """The release as numbers, for sorting."""
        return tuple(int(part) for part in self.release.split("."))

    @property
    def gpu(self) -> bool:
        """Whether the run had a GPU."""
        return self.device != "cpu"


def file_of(classname: str) -> str:
    """The test file a junit class name belongs to.

    Example:
        >>> file_of("tests.test_fsdp2_runs.TestShapes")
        'tests/test_fsdp2_runs.py'
    """
    parts = classname.split(".")
    for index, part in enumerate(parts):
        if part.startswith("test_"):
            return "/".join(parts[: index + 1]) + ".py"
    return "/".join(parts) + ".py"


def read(path: Path) -> Run:
    """Count a junit file's outcomes, by the environment its properties record."""
    suite = ET.parse(path).getroot()
    if suite.tag == "testsuites":
        suite = suite.find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    run = Run(
        torch=properties.get("torch", "unknown"),
        device=properties.get("device", "unknown"),
        python=properties.get("python", "unknown"),
        date=(suite.get("timestamp") or "")[:10],
    )
    for case in suite.iter("testcase"):
        markers = {p.get("value") for p in case.iter("property") if p.get("name") == "markers"}
        used = {
            part.split(":")[0]
            for p in case.iter("property")
            if p.get("name") == "backend"
            for part in (p.get("value") or "").split(",")
        }
        names = {name for m in markers if m for name in m.split(",")}
        # A GPU test skipped on a CPU run belongs to the GPU leg, not to this row's count.
        distributed = "distributed" in names and (run.gpu or "gpu" not in names)
        outcome = [child for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname')}::{case.get('name')}"
        # By the module that collected the test (a module-level skip names it as the
        # test), not junit's "file", which is where a shared test function is written.
        where = file_of(case.get("classname") or case.get("name") or "")
        counts = run.by_file.setdefault(where, collections.Counter())
        if not any(child.tag == "skipped" for child in outcome):
            run.backends.update(used)
        if any(child.tag in ("failure", "error") for child in outcome):
            run.failed += 1
            run.failures.append(name)
            counts["failed"] += 1
        elif outcome:
            run.skipped += 1
            counts["skipped"] += 1
            reason = (outcome[0].get("message") or "").strip()
            if reason == "collection skipped":
                # A module-level skip: pytest puts its reason in the text, as a tuple.
                found = re.search(r"Skipped: (.*)['\"]\)\s*$", outcome[0].text or "")
                reason = found.group(1) if found else reason
            run.skips[re.sub(r"^Skipped: ", "", reason)] += 1
            run.distributed_skipped += distributed
        else:
            run.passed += 1
            run.distributed_run += distributed
            counts["passed"] += 1
    return run


_HEADER = [
    "| torch | device | release | python | passed | failed | skipped "
    "| distributed run / skipped | date |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def _rows(runs: list[Run]) -> list[str]:
    return [
        f"| {run.release} | {run.device} | {run.torch} | {run.python} | {run.passed} "
        f"| {run.failed} | {run.skipped} | {run.distributed_run} / "
        f"{run.distributed_skipped} | {run.date} |"
        for run in runs
    ]


def _notes(runs: list[Run], label: str = "") -> list[str]:
    """Each run's skip reasons (most frequent first) and failed tests."""
    lines = []
    for run in runs:
        lines += [f"### torch {run.torch}, {run.device}{label}", ""]
        if run.backends:
            on = ", ".join(f"{run.backends[b]} on {b}" for b in sorted(run.backends))
            lines += [f"Tests whose ranks ran: {on}.", ""]
        if not run.skips and not run.failures:
            lines.append("Nothing skipped, nothing failed.")
        for reason, count in sorted(run.skips.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"- skipped {count}: {reason or '(no reason given)'}")
        for name in run.failures:
            lines.append(f"- **failed**: `{name}`")
        lines.append("")
    return lines


def _focused(runs: list[Run]) -> list[str]:
    """The focused runs' section: totals, then passed / failed / skipped by test file."""
    files = [f"`{name}`" for name in FOCUSED_TESTS]
    lines = [
        "## Focused runs: census, state dict and FSDP1-to-FSDP2 tests",
        "",
        "Only the deprecation census, the state-dict equivalence runs and the "
        f"FSDP1-to-FSDP2 runs ({', '.join(files)}), run on each torch release by its tox "
        "environment (`python .ci/matrix.py --focused`): the releases whose full row "
        "above predates these tests, or has none, show here what they give. Tests that "
        "need an API a release lacks skip themselves by feature flag with the reason "
        "listed below.",
        "",
        *_HEADER,
        *_rows(runs),
        "",
        "Passed / failed / skipped by test file:",
        "",
        "| torch | device | " + " | ".join(files) + " |",
        "| --- | --- | " + " | ".join("---" for _ in files) + " |",
    ]
    for run in runs:
        cells = []
        for name in FOCUSED_TESTS:
            counts = run.by_file.get(name, collections.Counter())
            cells.append(f"{counts['passed']} / {counts['failed']} / {counts['skipped']}")
        lines.append(f"| {run.release} | {run.device} | " + " | ".join(cells) + " |")
    lines += ["", "Skips and failures by focused run:", ""]
    return lines + _notes(runs, " (focused)")


def render(runs: list[Run], focused: list[Run] | None = None) -> str:
    """The Markdown page for the full ``runs`` and the ``focused`` ones."""
    runs = sorted(runs, key=lambda r: (r.key, r.device))
    focused = sorted(focused or [], key=lambda r: (r.key, r.device))
    lines = [
        "# Validation matrix",
        "",
        "<!-- Generated by `python .ci/matrix.py` from the junit files in docs/matrix/. "
        "Do not edit by hand: tests/test_matrix_page.py fails when the page and the "
        "files disagree. -->",
        "",
        "The whole test suite, run on each torch release by its tox environment "
        "(`tox -m matrix`). Tests select themselves by feature flags: FSDP1 multi-process "
        "tests run where FSDP1 runs on CPU (torch 2.2+), FSDP2 ones where FSDP2 does "
        "(2.7+); GPU tests (marker `gpu`, NCCL, one rank per GPU) where CUDA is present. "
        "*distributed* counts the multi-process tests that ran (real process groups) and "
        "those skipped (on a CPU row, not counting the GPU tests). A GPU row is the whole "
        "suite on a lent GPU machine (`.ci/gpu.sh`, added with `--add`): there each "
        "multi-process test runs on NCCL where the machine has a GPU for each of its ranks "
        "and on gloo (CPU) otherwise, and its notes count the tests by backend.",
        "",
        *_HEADER,
        *_rows(runs),
        "",
    ]
    if not any(run.gpu for run in runs + focused):
        lines += [
            "**GPU:** no GPU machine was available to these runs, so the GPU leg (NCCL) has "
            "not been run; the table has CPU (gloo) rows only.",
            "",
        ]
    lines += ["## Skips and failures by run", "", *_notes(runs)]
    if focused:
        lines += _focused(focused)
    return "\n".join(lines).rstrip("\n") + "\n"


def store(junit: Path, results: Path = RESULTS) -> Path:
    """Keep ``junit`` in ``results`` (docs/matrix/ or its focused/) by torch release and device."""
    run = read(junit)
    device = "cpu" if not run.gpu else "gpu"
    target = results / f"torch-{run.torch.split('+')[0]}-{device}.xml"
    results.mkdir(parents=True, exist_ok=True)
    for old in results.glob(f"torch-{run.release}.*-{device}.xml"):
        old.unlink()  # one row per release and device: the newest run
    shutil.copyfile(junit, target)
    return target


def run_tox(env: str, workdir: Path | None = None, tests: tuple[str, ...] = ()) -> Path | None:
    """Run one tox environment; return its junit file (None if there is none).

    Args:
        env: The tox environment.
        workdir: tox's work directory (``--workdir``), where the environments and the
            junit files live; ``.tox`` in the repository when None.
        tests: Run only these test files (tox's positional arguments), writing junit
            to ``<env>-focused.xml``, so that the environment's full run is kept.
    """
    variables = dict(os.environ)
    pyenv = Path.home() / ".pyenv" / "versions"
    if pyenv.is_dir() and "PYENV_VERSION" not in variables:
        # Let pyenv's shims find python3.10 (torch 1.13) and python3.9 (torch 2.4) beside
        # the default Python.
        variables["PYENV_VERSION"] = ":".join(sorted(p.name for p in pyenv.iterdir()))
    print(f"== tox -e {env}", flush=True)
    command = [sys.executable, "-m", "tox", "-e", env]
    if workdir is not None:
        command += ["--workdir", str(workdir)]
    junit = (workdir or ROOT / ".tox") / "junit" / f"{env}.xml"
    if tests:
        # pytest keeps the last --junitxml given: this one, after tox.ini's own.
        junit = junit.with_name(f"{env}-focused.xml")
        command += ["--", *tests, f"--junitxml={junit}"]
    junit.unlink(missing_ok=True)  # a failed build must not pass off an older run as new
    subprocess.run(command, cwd=ROOT, env=variables)
    return junit if junit.exists() else None


def matrix_envs() -> list[str]:
    """The environments of tox's ``matrix`` label."""
    text = (ROOT / "tox.ini").read_text(encoding="utf-8")
    match = re.search(r"^\s*matrix\s*=\s*(.+)$", text, re.M)
    return [env.strip() for env in match.group(1).split(",")] if match else []


def summary(run: Run) -> str:
    """A few lines on one junit file: the GPU leg prints it after its run.

    Example:
        >>> print(summary(Run("2.11.0", "cpu", "3.12", "", passed=3, distributed_run=1)))
        torch 2.11.0 on cpu (python 3.12): 3 passed, 0 failed, 0 skipped
        multi-process tests: 1 ran, 0 skipped (100%)
    """
    total = run.distributed_run + run.distributed_skipped
    share = f" ({100 * run.distributed_run / total:.0f}%)" if total else ""
    lines = [
        f"torch {run.torch} on {run.device} (python {run.python}): {run.passed} passed, "
        f"{run.failed} failed, {run.skipped} skipped",
        f"multi-process tests: {run.distributed_run} ran, {run.distributed_skipped} skipped"
        + share,
    ]
    if run.backends:
        lines.append(
            "tests whose ranks ran on: "
            + ", ".join(f"{b} {run.backends[b]}" for b in sorted(run.backends))
        )
    lines += [f"skipped {n}: {reason}" for reason, n in run.skips.most_common()]
    lines += [f"FAILED {name}" for name in run.failures]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("envs", nargs="*", help="tox environments (default: the matrix label)")
    parser.add_argument("--add", nargs="*", type=Path, default=[], help="junit files to add")
    parser.add_argument("--render", action="store_true", help="only rebuild the page")
    parser.add_argument("--summary", type=Path, help="print a junit file's counts; nothing else")
    parser.add_argument(
        "--focused",
        action="store_true",
        help="run (or --add) only the census, state-dict and FSDP2 run tests (FOCUSED_TESTS)",
    )
    parser.add_argument(
        "--remove-envs", action="store_true", help="delete each tox environment after its run"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="tox's work directory (passed to tox as --workdir; default: .tox)",
    )
    args = parser.parse_args(argv)
    if args.summary:
        run = read(args.summary)
        print(summary(run))
        return 1 if run.failed else 0
    workdir = args.workdir.resolve() if args.workdir else None
    results = FOCUSED if args.focused else RESULTS
    tests = FOCUSED_TESTS if args.focused else ()
    for junit in args.add:
        print(f"added {store(junit, results).relative_to(ROOT)}")
    if not args.render and not args.add:
        for env in args.envs or matrix_envs():
            junit = run_tox(env, workdir, tests)
            if junit is None:
                print(f"!! {env}: no junit output (the environment failed to build)")
            else:
                print(f"stored {store(junit, results).relative_to(ROOT)}")
                # The next environment's suite checks the page against the junit files.
                write_page()
            if args.remove_envs:
                shutil.rmtree((workdir or ROOT / ".tox") / env, ignore_errors=True)
    runs, focused = write_page()
    return 1 if any(run.failed for run in runs + focused) else 0


def write_page() -> tuple[list[Run], list[Run]]:
    """Render ``docs/matrix.md`` from the junit files; return the runs it shows."""
    runs = [read(path) for path in sorted(RESULTS.glob("*.xml"))]
    focused = [read(path) for path in sorted(FOCUSED.glob("*.xml"))]
    PAGE.write_text(render(runs, focused), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}: {len(runs)} full runs, {len(focused)} focused")
    return runs, focused


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
