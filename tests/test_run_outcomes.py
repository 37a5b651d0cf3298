"""What happened to each file, said as it happened: written, failed, skipped, unchecked.

A file saved by someone between the run's read and its write keeps that edit and is
reported as skipped; a read-only file is not counted as changed; lint never claims that
all checks passed beside a file it could not check.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codemods import lint, migrate
from codemods.batch.runner import PARSE_IN_WORKERS_FROM, process_files
from codemods.settings import Settings


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


LEGACY = (
    "from lightning.pytorch import Trainer\n"
    'trainer = Trainer(strategy="fsdp_native", precision=16)\n'
)
MIGRATED = (
    "from lightning.pytorch import Trainer\n"
    'trainer = Trainer(strategy="fsdp", precision="16-mixed")\n'
)
#: Legacy code that does not parse: the lint reports it as a file it could not check.
BROKEN = "from lightning.pytorch import Trainer\nTrainer(strategy='fsdp_native'\n"
SAVED = "# saved in the editor while the run was parsing\n"


def save_in_editor(path: Path) -> None:
    """A ``before_write`` hook: someone saves the files named ``edited*`` meanwhile."""
    if path.name.startswith("edited"):
        with path.open("a") as handle:
            handle.write(SAVED)


def delete_meanwhile(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("jobs", [1, 2], ids=["here", "in-workers"])
def test_a_file_saved_between_the_read_and_the_write_keeps_the_edit(tmp_path, jobs):
    paths = [
        tmp_path / f"{name}{n}.py" for n in range(PARSE_IN_WORKERS_FROM) for name in ("a", "edited")
    ]
    for path in paths:
        path.write_text(LEGACY)
    results = process_files(
        paths, Settings(fix=True), write=True, jobs=jobs, before_write=save_in_editor
    )
    for path, result in zip(paths, results):
        if path.name.startswith("edited"):
            assert path.read_text() == LEGACY + SAVED  # the edit survives, not overwritten
            assert result.outcome == "skipped" and not result.written
            assert "changed on disk since it was read" in result.skipped
        else:
            assert path.read_text() == MIGRATED and result.outcome == "written"
    edited = len(paths) // 2
    summary, line = migrate.summarize(results, write=True)
    assert f"{edited} changed, {edited} skipped (changed on disk meanwhile)" in line
    assert (summary["files_changed"], summary["files_skipped"]) == (edited, edited)
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_file_deleted_between_the_read_and_the_write_is_not_recreated(tmp_path):
    path = tmp_path / "gone.py"
    path.write_text(LEGACY)
    (result,) = process_files([path], Settings(fix=True), write=True, before_write=delete_meanwhile)
    assert result.outcome == "skipped" and not path.exists()
    assert result.skipped == "deleted since it was read; not written again"
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"]  # no temporary file


def _atime_records_reads(directory: Path) -> bool:
    probe = directory / "probe"
    probe.write_bytes(b"x")
    stat = probe.stat()
    os.utime(probe, ns=(stat.st_mtime_ns - 10**10, stat.st_mtime_ns))
    before = probe.stat().st_atime_ns
    probe.read_bytes()
    recorded = probe.stat().st_atime_ns != before
    probe.unlink()
    return recorded


def _save_while_the_run_reads(path: Path, expected: str) -> subprocess.Popen | None:
    """Start ``migrate path``; append :data:`SAVED` after it has read the file, before it writes.

    The read is seen from the file's access time (set in the past first). Seeing it takes
    this process's polling, which a loaded machine can hold back for seconds, long enough
    for the run to have begun its write: so the run is stopped (SIGSTOP, waited for until
    it has stopped: a rename under way ends first) while the file is looked at, and the
    save is made only where the run has not begun to write (no temporary file of its
    beside the file, the file not replaced) and the file holds what was read; a save
    between the run's last look and its rename would be lost, which no tool can prevent.
    None: the run had begun to write first; nothing saved.
    """
    stat = path.stat()
    os.utime(path, ns=(stat.st_mtime_ns - 10**10, stat.st_mtime_ns))
    read_before = path.stat().st_atime_ns
    run = subprocess.Popen(
        [sys.executable, "-m", "codemods.migrate", str(path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while path.stat().st_atime_ns == read_before:
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.01)
    os.kill(run.pid, signal.SIGSTOP)
    _, status = os.waitpid(run.pid, os.WUNTRACED)  # kill() only asks
    stopped = os.WIFSTOPPED(status)
    if not stopped:  # it had ended: its status is Popen's to report
        run.returncode = os.waitstatus_to_exitcode(status)
    try:
        late = (
            not stopped
            or path.stat().st_ino != stat.st_ino
            or any(path.parent.glob(f".{path.name}.*.tmp"))
            or path.read_text() != expected
        )
        if not late:
            with path.open("a") as handle:
                handle.write(SAVED)
    finally:
        if stopped:
            os.kill(run.pid, signal.SIGCONT)
    if late:
        run.communicate(timeout=300)
        return None
    return run


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="stops the run with SIGSTOP (POSIX)")
def test_a_real_save_during_a_slow_parse_survives_and_the_summary_says_so(tmp_path):
    """No hook: the command parses a large file for seconds while the test saves it."""
    if not _atime_records_reads(tmp_path):
        pytest.skip("this filesystem does not record reads (noatime)")
    path = tmp_path / "big.py"
    body = "".join(
        f"\n\ndef strategy_{n}(model):\n    return Trainer(strategy='fsdp_native', precision=16)\n"
        for n in range(1500)
    )
    for _ in range(3):  # a run that began to write before this process saw its read is run again
        path.write_text(LEGACY + body)
        run = _save_while_the_run_reads(path, LEGACY + body)
        if run is not None:
            break
    assert run is not None, "three runs began to write before their read was seen"
    _, err = run.communicate(timeout=300)
    assert path.read_text() == LEGACY + body + SAVED
    assert run.returncode == 1, err
    assert f"skipped: {path}: changed on disk since it was read; not overwritten" in err
    assert "1 files scanned, 0 changed, 1 skipped (changed on disk meanwhile)" in err


def test_a_read_only_file_is_counted_as_not_written(tmp_path, capsys):
    locked = tmp_path / "locked.py"
    locked.write_text(LEGACY)
    locked.chmod(0o444)
    free = tmp_path / "free.py"
    free.write_text(LEGACY)
    report = tmp_path / "report.json"
    assert migrate.main(["--report", str(report), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "2 files scanned, 1 changed, 1 not written (see the errors), 2 fixes applied" in err
    data = json.loads(report.read_text())
    assert data["summary"]["files_changed"] == 1
    assert data["summary"]["files_not_written"] == 1
    outcomes = {Path(f["path"]).name: (f["outcome"], f["written"]) for f in data["files"]}
    assert outcomes == {"locked.py": ("failed", False), "free.py": ("written", True)}
    assert locked.read_text() == LEGACY


def test_lint_fix_on_a_read_only_file_reports_the_findings_as_remaining(tmp_path, capsys):
    locked = tmp_path / "locked.py"
    locked.write_text(LEGACY)
    locked.chmod(0o444)
    assert lint.main(["--fix", str(locked)]) == 2
    captured = capsys.readouterr()
    assert "Found 2 findings." in captured.out and "fixed" not in captured.out
    assert f"{locked}:2:19: FSDP204 [*]" in captured.out
    assert f"error: {locked}: cannot write" in captured.err


@pytest.mark.parametrize(
    ("files", "summary"),
    [
        ({"broken.py": BROKEN, "fine.py": "x = 1\n"}, None),
        (
            {"broken.py": BROKEN, "bad.py": "\0" + LEGACY, "fine.py": "x = 1\n"},
            "1 file could not be checked.",
        ),
    ],
)
def test_lint_does_not_claim_all_checks_passed_beside_a_parse_error(
    tmp_path, capsys, files, summary
):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code = lint.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "All checks passed" not in out
    # A syntax error is a finding (invalid-syntax, as ruff's); a file that cannot be
    # read as Python at all is an error, and the summary names it.
    assert out.startswith(f"{tmp_path / 'broken.py'}:") and " invalid-syntax " in out
    assert code == (1 if summary is None else 2)
    if summary:
        assert summary in out


def test_lint_names_unchecked_files_beside_findings_too(tmp_path, capsys):
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "legacy.py").write_text(LEGACY)
    (tmp_path / "clean.py").write_text("x = 1\n")
    assert lint.main([str(tmp_path), str(tmp_path / "missing.py")]) == 2
    out = capsys.readouterr().out
    assert out.endswith(
        "Found 3 findings.\n[*] 2 fixable with the `--fix` option.\n1 file could not be checked.\n"
    )
    assert lint.main([str(tmp_path / "clean.py")]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"
