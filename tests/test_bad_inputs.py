"""Every bad input: a clear one-line message naming the file and why, the right exit code,
and no file lost or half-written (migrate and lint alike)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from codemods import lint, migrate
from codemods.batch.runner import MAX_PARSE_BYTES, process_files
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


def run_both(capsys, *argv: str) -> list[tuple[int, str]]:
    """Exit code and stderr of migrate --check, then of lint."""
    return [(code, err) for code, _, err in run_both_out(capsys, *argv)]


def run_both_out(capsys, *argv: str) -> list[tuple[int, str, str]]:
    """Exit code, stdout and stderr of migrate --check, then of lint."""
    outcomes = []
    for tool in (migrate, lint):
        code = tool.main(["--check", *argv] if tool is migrate else list(argv))
        captured = capsys.readouterr()
        outcomes.append((code, captured.out, captured.err))
    return outcomes


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        (
            "syntax",
            b"from lightning.pytorch import Trainer\nTrainer(precision=16\n",
            "cannot parse",
        ),
        (
            "python2",
            b"from lightning.pytorch import Trainer\nprint 'training'\nTrainer(precision=16)\n",
            "cannot parse",
        ),
        ("latin1-no-cookie", b"# caf\xe9\n" + LEGACY.encode(), "cannot decode or parse"),
        ("binary", b"\x7fELF\x02\x01\x00\x00" + LEGACY.encode() + b"\x00\xff", "not Python source"),
    ],
)
def test_unreadable_python_is_reported_and_left_alone(tmp_path, capsys, name, data, reason):
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    good = tmp_path / "good.py"
    good.write_text(LEGACY)
    (migrated, _, err), (linted, out, lint_err) = run_both_out(capsys, str(tmp_path))
    assert migrated == 2
    (line,) = error_lines(err)
    assert line.startswith(f"error: {path}: {reason}"), line
    if reason == "cannot parse":
        # lint reports a syntax error as a finding, as ruff does: exit 1, no error.
        assert linted == 1 and not error_lines(lint_err)
        assert f"{path}:" in out and " invalid-syntax " in out
    else:
        assert linted == 2
        (line,) = error_lines(lint_err)
        assert line.startswith(f"error: {path}: {reason}"), line
    assert migrate.main([str(tmp_path)]) == 2  # in place: the others are still processed
    assert path.read_bytes() == data and good.read_text() == MIGRATED


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("mixed-endings", LEGACY.replace("\n", "\r\n", 1).encode() + b"x = 1\n"),
        ("tabs", b"import lightning.pytorch as L\nif True:\n\tt = L.Trainer(precision=16)\n"),
        ("cookie", b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEGACY.encode()),
    ],
)
def test_odd_but_valid_files_are_rewritten_keeping_their_bytes(tmp_path, name, data):
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    assert migrate.main([str(path)]) == 1
    new = path.read_bytes()
    assert new.replace(b'"16-mixed"', b"16").replace(b'"fsdp"', b'"fsdp_native"') == data


def test_an_empty_file_and_a_directory_without_python(tmp_path, capsys):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text(LEGACY)
    for code, err in run_both(capsys, str(tmp_path)):
        assert code == 0 and not error_lines(err)
    for code, err in run_both(capsys, str(tmp_path / "docs")):
        assert code == 0 and not error_lines(err)
    assert (tmp_path / "empty.py").read_bytes() == b""


@pytest.mark.slow
def test_a_file_too_large_to_parse_is_reported_not_parsed(tmp_path, capsys):
    path = tmp_path / "generated.py"
    padding = b"x = 1  # generated\n" * (MAX_PARSE_BYTES // 19 + 1)
    path.write_bytes(padding + LEGACY.encode())  # over the limit, legacy code at the end
    start = time.process_time()  # the tools' work, not the machine's load (see below)
    for code, err in run_both(capsys, str(path)):
        assert code == 2
        (line,) = error_lines(err)
        assert line.startswith(f"error: {path}: too large to parse (")
    assert time.process_time() - start < 60
    assert path.stat().st_size == len(padding) + len(LEGACY)


def test_a_ten_megabyte_file_without_legacy_code_is_skipped_quickly(tmp_path, capsys):
    path = tmp_path / "big.py"
    path.write_bytes(b"import torch\nx = torch.ones(2)  # filler\n" * 250_000)  # ~10 MB
    # CPU time of this process (both tools run in it): a loaded machine stretches the wall
    # clock (35 s seen in a full suite beside other suites, on 2 cores) but not the work.
    start = time.process_time()
    assert [code for code, _ in run_both(capsys, str(path))] == [0, 0]
    assert time.process_time() - start < 30


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_loops(tmp_path, capsys):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "legacy.py").write_text(LEGACY)
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")  # a directory loop: not followed
    os.symlink("self.py", tmp_path / "pkg" / "self.py")  # a file that links to itself
    for code, err in run_both(capsys, str(tmp_path)):
        assert code == 2
        (line,) = error_lines(err)
        assert line.startswith(f"error: {tmp_path / 'pkg' / 'self.py'}: cannot read")
    assert migrate.main([str(tmp_path)]) == 2
    assert (tmp_path / "pkg" / "legacy.py").read_text() == MIGRATED


def test_a_file_deleted_after_discovery(tmp_path):
    paths = [tmp_path / "gone.py", tmp_path / "kept.py"]
    for path in paths:
        path.write_text(LEGACY)
    paths[0].unlink()  # between discover() and reading
    gone, kept = process_files(paths, Settings(fix=True), write=True)
    assert gone.error == "cannot read: No such file or directory"
    assert kept.written and paths[1].read_text() == MIGRATED


def test_a_file_is_read_as_path_read_bytes_reads_it(tmp_path):
    # The runner reads through os.open (and keeps the time its cache is checked against).
    from codemods.batch.files import read_file

    for name, data in [("empty.py", b""), ("big.py", b"x = 1\n" * 50_000), ("crlf.py", b"a\r\n")]:
        path = tmp_path / name
        path.write_bytes(data)
        assert read_file(path) == (path.read_bytes(), os.stat(path).st_mtime_ns)
    folder = tmp_path / "folder.py"
    folder.mkdir()
    (result,) = process_files([folder], Settings(), write=False)
    assert result.error == "cannot read: Is a directory"


def test_a_read_only_file_is_reported_and_the_others_processed(tmp_path, capsys):
    locked = tmp_path / "locked.py"
    locked.write_text(LEGACY)
    locked.chmod(0o444)
    free = tmp_path / "free.py"
    free.write_text(LEGACY)
    assert migrate.main([str(tmp_path)]) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith(f"error: {locked}: cannot write") and "left unchanged" in line
    assert locked.read_text() == LEGACY and free.read_text() == MIGRATED


def test_a_missing_path(tmp_path, capsys):
    for code, err in run_both(capsys, str(tmp_path / "nope.py")):
        assert code == 2
        assert error_lines(err) == [f"error: {tmp_path / 'nope.py'}: no such file or directory"]


@pytest.mark.slow
def test_killing_migrate_midway_leaves_every_file_whole(tmp_path):
    """SIGKILL during a long in-place run: each file is the old or the new text, in full."""
    files = []
    for number in range(400):
        path = tmp_path / f"m{number:03}.py"
        # Each file differs, so a mix-up between files would show.
        path.write_text(LEGACY + f"marker = {number}\n" + "x = 1\n" * 200)
        files.append(path)
    process = subprocess.Popen(
        [sys.executable, "-m", "codemods.migrate", "--jobs", "2", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if sum(MIGRATED in p.read_text() for p in files[::20]) >= 2:
            break  # it is writing: kill it now
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    old = new = 0
    for number, path in enumerate(files):
        text = path.read_text()
        tail = f"marker = {number}\n" + "x = 1\n" * 200
        assert text in (LEGACY + tail, MIGRATED + tail), path
        new += text.startswith(MIGRATED)
        old += text.startswith(LEGACY)
    assert old + new == len(files) and new > 0
