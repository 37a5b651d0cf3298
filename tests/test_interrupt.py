"""A stopped run stops: real runs on a large tree, ended by SIGTERM, SIGINT and SIGKILL.

Each test starts ``python -m codemods.migrate`` (or ``codemods.lint --fix``) on 900
legacy files, waits until it is writing, records its worker processes from ``/proc``,
and ends it. Then: no worker is alive within 2 seconds, nothing changes afterwards, each
file is its original or exactly what a full run makes of it (of its shape, run once per
command, with its own marker line), and (SIGTERM, SIGINT) the exit status and the
summary say what was written and what was not reached.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scratch_projects import CURRENT_RELEASES

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="finds worker processes through /proc"
)

FILES = 900
#: Three legacy shapes, each with safe fixes only, so that every file reached is written.
SHAPES = (
    "from pytorch_lightning import Trainer\n"
    "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy\n"
    "\n\n"
    "def build(model):\n"
    "    strategy = DDPFullyShardedNativeStrategy(cpu_offload=True)\n"
    "    return Trainer(strategy=strategy, precision=16)\n",
    "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
    "from lightning.pytorch import Trainer\n"
    "\n"
    "policy = default_auto_wrap_policy  # keep this comment\n"
    'trainer = Trainer(strategy="fsdp_native", precision=16)\n',
    "import pytorch_lightning as pl\n"
    "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy as Native\n"
    "\n\n"
    "class Model(pl.LightningModule):\n"
    "    def strategy(self):\n"
    "        return Native(cpu_offload=False)\n",
)
#: The commands tried: (module, options), each on the whole tree.
MIGRATE_2 = ("codemods.migrate", ("--jobs", "2"))
MIGRATE_1 = ("codemods.migrate", ("--jobs", "1"))
LINT_FIX_2 = ("codemods.lint", ("--fix", "--jobs", "2"))


def legacy_tree(root: Path, count: int = FILES) -> dict[Path, bytes]:
    """``count`` legacy files (900 by default) in a few packages; each differs, so a mix-up
    would show."""
    files = {}
    for number in range(count):
        folder = root / f"pkg{number % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"module_{number:03}.py"
        data = (SHAPES[number % len(SHAPES)] + _marker(number) + "x = 1\n" * 40).encode()
        path.write_bytes(data)
        files[path] = data
    return files


def _marker(number: int) -> str:
    return f"MARKER = {number}\n"


def command(module: str, options: tuple[str, ...], *paths: Path) -> list[str]:
    return [sys.executable, "-m", module, *options, *map(str, paths)]


def process_stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name, in parentheses, may hold spaces
    return int(fields[1]), fields[0], int(fields[19])


def children(parent: int) -> dict[int, int]:
    """The live child processes of ``parent``: pid -> start time."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = process_stat(int(entry.name))
            if stat and stat[0] == parent and stat[1] != "Z":
                found[int(entry.name)] = stat[2]
    return found


def alive(pid: int, started: int) -> bool:
    """Whether that process (not a later one with its pid) still runs; a zombie does not."""
    stat = process_stat(pid)
    return stat is not None and stat[1] != "Z" and stat[2] == started


def snapshot(files: dict[Path, bytes]) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in files}


def changed(files: dict[Path, bytes]) -> list[Path]:
    return [path for path, data in files.items() if path.read_bytes() != data]


def start_and_wait_for_writes(argv: list[str], files: dict[Path, bytes], cwd: Path):
    """Start the run; return it once it has written a few files (not all of them).

    Its output goes to files (``out``, ``err`` in ``cwd``), not pipes: a worker that
    outlives the run must not keep the test waiting for the end of a pipe.
    """
    with (cwd / "out").open("wb") as out, (cwd / "err").open("wb") as err:
        run = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group: a group signal reaches only it
        )
    sample = list(files.items())[::15]
    deadline = time.monotonic() + 120
    while sum(path.read_bytes() != data for path, data in sample) < 3:
        assert run.poll() is None, (cwd / "err").read_text()
        assert time.monotonic() < deadline, "the run never started writing"
        time.sleep(0.05)
    return run


#: (module, options) -> what an uninterrupted run makes of the first file of each shape.
_SHAPE_REWRITES: dict[tuple[str, tuple[str, ...]], list[bytes]] = {}


def full_run_rewrites(paths: list[Path], variant, tmp_path: Path) -> dict[Path, bytes]:
    """What an uninterrupted run of the same command makes of the originals of ``paths``.

    Files of one shape differ only in their marker line, which no fix touches: the
    command runs once per variant (and test process) on the first file of each shape,
    and each path's rewrite is its shape's with its own marker.
    """
    module, options = variant
    if variant not in _SHAPE_REWRITES:
        shapes = legacy_tree(tmp_path / "shapes", count=len(SHAPES))  # in the test's project
        subprocess.run(
            command(module, options, tmp_path / "shapes"), capture_output=True, timeout=300
        )
        rewrites = []
        for number, (path, original) in enumerate(shapes.items()):
            rewrite = path.read_bytes()
            assert rewrite != original and rewrite.count(_marker(number).encode()) == 1, rewrite
            rewrites.append(rewrite)
        _SHAPE_REWRITES[variant] = rewrites
    expected = {}
    for path in paths:
        number = int(path.stem.rpartition("_")[2])
        shape = number % len(SHAPES)
        rewrite = _SHAPE_REWRITES[variant][shape]
        expected[path] = rewrite.replace(_marker(shape).encode(), _marker(number).encode())
    return expected


def stop_run(tmp_path: Path, variant, signum: int, target: str = "parent"):
    """Run ``variant`` on a fresh tree, send ``signum`` once it writes; what came of it.

    ``target``: ``parent`` (``kill``), ``group`` (Ctrl-C on a terminal, or a CI runner
    ending the process group) or ``worker`` (one worker alone).
    """
    root = tmp_path / "tree"
    files = legacy_tree(root)
    # a project on the current releases: every file has fixes to write (not range tests)
    (tmp_path / "pyproject.toml").write_text(CURRENT_RELEASES)
    module, options = variant
    report = tmp_path / "report.json"
    extra = ("--report", str(report)) if module == "codemods.migrate" else ()
    run = start_and_wait_for_writes(command(module, (*options, *extra), root), files, tmp_path)
    try:
        workers = children(run.pid)
        sent = time.monotonic()
        if target == "worker":
            os.kill(min(workers), signum)
        else:
            (os.killpg if target == "group" else os.kill)(run.pid, signum)
        run.wait(timeout=60)
        exited = time.monotonic() - sent
        while any(alive(pid, start) for pid, start in workers.items()):
            assert time.monotonic() - sent < 2, "a worker outlived the run by 2 seconds"
            time.sleep(0.02)
        gone = time.monotonic() - sent
    finally:  # whatever an assertion above found, leave no process behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    before = snapshot(files)
    time.sleep(0.5)  # every worker is gone already (checked above)
    assert snapshot(files) == before, "files changed after the run ended"
    if not (target == "worker" and signum == signal.SIGKILL):  # nothing can clean up after it
        assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")], "temporary files"
    written = changed(files)
    expected = full_run_rewrites(written, variant, tmp_path)
    for path in written:  # every other file is its original, byte for byte
        assert before[path] == expected[path], f"{path} is neither the original nor the rewrite"
    return {
        "files": files,
        "written": written,
        "workers": workers,
        "gone": gone,
        "code": run.returncode,
        "out": (tmp_path / "out").read_text(),
        "err": (tmp_path / "err").read_text(),
        "exited": exited,
        "report": json.loads(report.read_text()) if report.exists() else None,
    }


def listed(err: str, label: str) -> set[Path]:
    return {Path(line[len(label) + 2 :]) for line in err.splitlines() if line.startswith(label)}


def check_summary(outcome: dict, signum: int) -> None:
    """Exit status 128 + signal, and a summary listing what was written and not reached."""
    name = signal.Signals(signum).name
    err, files, written = outcome["err"], outcome["files"], outcome["written"]
    assert outcome["code"] == 128 + signum, err
    assert outcome["exited"] < 2, f"the run took {outcome['exited']:.2f} s to stop"
    assert 0 < len(written) < len(files), "the run was stopped midway"
    missing = sorted(set(files) - set(written))
    assert f"stopped by {name}: {len(written)} files written, {len(missing)} not reached" in err
    assert listed(err, "written") == set(written)
    assert listed(err, "not reached") == set(missing)
    report = outcome["report"]
    if report is not None:
        summary = report["summary"]
        assert summary["stopped_by"] == name
        assert (summary["files_changed"], summary["files_not_reached"]) == (
            len(written),
            len(missing),
        )
        outcomes = {Path(f["path"]): f["outcome"] for f in report["files"]}
        assert {p for p, o in outcomes.items() if o == "written"} == set(written)
        assert {p for p, o in outcomes.items() if o == "not reached"} == set(missing)


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant",
    [MIGRATE_2, MIGRATE_1, LINT_FIX_2],
    ids=["migrate-jobs2", "migrate-jobs1", "lint-fix"],
)
def test_sigterm_stops_the_run_and_its_workers(tmp_path, variant):
    outcome = stop_run(tmp_path, variant, signal.SIGTERM)
    if variant[1][-1] == "2":
        assert len(outcome["workers"]) == 2
    check_summary(outcome, signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [MIGRATE_2, MIGRATE_1], ids=["migrate-jobs2", "migrate-jobs1"])
@pytest.mark.parametrize("target", ["parent", "group"], ids=["to-parent", "ctrl-c-to-group"])
def test_sigint_stops_the_run_and_its_workers(tmp_path, variant, target):
    """Ctrl-C on a terminal reaches the whole process group, ``kill -INT`` the parent."""
    outcome = stop_run(tmp_path, variant, signal.SIGINT, target)
    check_summary(outcome, signal.SIGINT)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [MIGRATE_2, LINT_FIX_2], ids=["migrate", "lint-fix"])
def test_sigkill_of_the_parent_ends_its_workers_before_their_next_file(tmp_path, variant):
    outcome = stop_run(tmp_path, variant, signal.SIGKILL)
    assert outcome["code"] == -signal.SIGKILL
    assert len(outcome["workers"]) == 2
    assert 0 < len(outcome["written"]) < FILES


@pytest.mark.slow
def test_sigterm_to_one_worker_stops_the_whole_run(tmp_path):
    outcome = stop_run(tmp_path, MIGRATE_2, signal.SIGTERM, "worker")
    check_summary(outcome, signal.SIGTERM)


@pytest.mark.slow
def test_a_worker_killed_outright_ends_the_run_with_the_files_it_held_reported(tmp_path):
    """The pool breaks: its files are reported, no traceback, no more work handed out."""
    from codemods.batch.pool import WORKER_DIED

    outcome = stop_run(tmp_path, MIGRATE_2, signal.SIGKILL, "worker")
    err = outcome["err"]
    assert outcome["code"] == 2, err
    assert "Traceback" not in err
    lost = {Path(line[7:].split(": ")[0]) for line in err.splitlines() if WORKER_DIED in line}
    assert lost and not lost & listed(err, "not reached")
    # The dead worker's batch may hold files it wrote: those are among the ones reported.
    assert listed(err, "written") <= set(outcome["written"]) <= listed(err, "written") | lost
    assert set(outcome["files"]) == listed(err, "written") | listed(err, "not reached") | lost


WATCHED = """\
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from codemods.batch import stopping
def work():
    while True:  # stands in for a long parse
        time.sleep(0.01)

if __name__ == "__main__":
    shared = multiprocessing.get_context().RawValue("b", 0)
    death_signal = sys.argv[1] == "death-signal"
    with ProcessPoolExecutor(
        1, initializer=stopping.start_worker, initargs=(shared, os.getpid(), death_signal)
    ) as pool:
        print(pool.submit(os.getpid).result(), flush=True)
        pool.submit(work)
        time.sleep(120)
"""


@pytest.mark.parametrize("how", ["death-signal", "watchdog"])
def test_a_worker_ends_when_its_parent_is_killed(tmp_path, how):
    """Both ways a worker learns of its parent's death: the kernel's signal, the watchdog."""
    script = tmp_path / "pool.py"
    script.write_text(WATCHED)
    run = subprocess.Popen(
        [sys.executable, str(script), how],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        worker = int(run.stdout.readline())
        started = process_stat(worker)[2]
        time.sleep(0.3)  # the worker is in its long task
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        killed = time.monotonic()
        while alive(worker, started):
            assert time.monotonic() - killed < 2, "the worker outlived its parent by 2 s"
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)


def test_a_run_told_to_stop_before_it_starts_reaches_nothing(tmp_path):
    """The stop is looked at before each file, in this process and in the workers."""
    from codemods.batch import stopping
    from codemods.batch.runner import POOL_THRESHOLD, process_files
    from codemods.settings import Settings

    files = legacy_tree(tmp_path)
    paths = sorted(files)[: POOL_THRESHOLD + 4]
    previous = signal.getsignal(signal.SIGTERM)
    with stopping.on_signals() as stop:
        os.kill(os.getpid(), signal.SIGTERM)  # handled: recorded, nothing is killed
        assert stop.signum == signal.SIGTERM
        for jobs in (1, 2):
            results = process_files(paths, Settings(fix=True), write=True, jobs=jobs)
            assert [r.outcome for r in results] == ["not reached"] * len(paths)
    assert changed(files) == []
    assert signal.getsignal(signal.SIGTERM) is previous  # put back
    (result,) = process_files(paths[:1], Settings(fix=True), write=True)  # not stopped now
    assert result.outcome == "written"


def _raise_elsewhere(_args: object) -> str:
    """A library that turns whatever interrupts it into its own error."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the handler runs before this returns
    except BaseException as exc:
        raise KeyError("a node of a half-built tree") from exc
    return "finished"


def _swallow(_args: object) -> str:
    """A library that swallows the interruption and goes on with a broken state."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
    except BaseException:
        pass
    return "a result built after the interruption"


def _let_through(_args: object) -> str:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.5)
    return "finished"


@pytest.mark.parametrize("work", [_raise_elsewhere, _swallow, _let_through])
def test_work_a_signal_interrupted_counts_as_abandoned_whatever_it_then_did(work):
    """What interrupted work returns or raises is dropped: it says nothing about the file."""
    from codemods.batch import pool, stopping

    with stopping.on_signals() as stop:
        assert pool.one(work, None) is None
        assert stop.signum == signal.SIGINT
        assert list(pool.in_process(work, [(0, None)])) == []  # no next file either


FIRST_FILE = """\
import os, signal, sys
from pathlib import Path
from codemods.batch import pool
from codemods.batch import stopping
from codemods.batch.runner import _process
from codemods.settings import Settings

path, delay = Path(sys.argv[1]), float(sys.argv[2])
with stopping.on_signals():
    signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    signal.setitimer(signal.ITIMER_REAL, delay)
    result = pool.one(_process, (path, Settings(fix=True), True, True, None, ()))
    signal.setitimer(signal.ITIMER_REAL, 0)
print("abandoned" if result is None else result.outcome, result and result.error)
"""


@pytest.mark.slow
def test_sigint_anywhere_in_a_processes_first_file_never_reports_an_error(tmp_path):
    """SIGINT at moments spread over a fresh process's first file: libcst's import (its
    lazy load), the parse, the metadata, the code generation, the write.

    A signal landing in an import or a library's ``with`` block used to come out as that
    file's "cannot decode or parse" (libcst's ``KeyError``) or an ``AttributeError`` of
    a half-imported libcst (seen once in CI, in the Ctrl-C run above).
    """
    script = tmp_path / "first_file.py"
    script.write_text(FIRST_FILE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    outcomes = []
    for step in range(10):
        target = tmp_path / f"module_{step}.py"
        original = (SHAPES[step % len(SHAPES)] + "x = 1\n" * 40).encode()
        target.write_bytes(original)
        delay = 0.02 + 0.07 * step
        done = subprocess.run(
            [sys.executable, str(script), str(target), str(delay)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outcome, error = done.stdout.split(maxsplit=1)
        assert outcome in {"abandoned", "written"}, (delay, done.stdout)
        assert error.strip() == "None", (delay, done.stdout)
        assert (target.read_bytes() == original) == (outcome == "abandoned")
        outcomes.append(outcome)
    assert "abandoned" in outcomes  # the signals did land in the work


def test_the_stop_handlers_are_installed_in_the_main_thread_only():
    import threading

    from codemods.batch import stopping

    before = signal.getsignal(signal.SIGTERM)
    with stopping.on_signals() as stop:
        assert signal.getsignal(signal.SIGTERM) is stopping._on_signal
        assert stop.signum == 0
    assert signal.getsignal(signal.SIGTERM) is before
    seen = []

    def elsewhere() -> None:  # Python refuses handlers outside the main thread
        with stopping.on_signals() as stop:
            seen.append((stop.signum, signal.getsignal(signal.SIGTERM)))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [(0, before)]
