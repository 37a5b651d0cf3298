"""python -m codemods.migrate on real files: modes, exit codes, and never losing a file."""

from __future__ import annotations

import io
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.migrate import main
from codemods.registry import REGISTRY
from tests.checkout_env import checkout_env


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


ROOT = Path(__file__).resolve().parents[1]
LEGACY = (
    "from lightning.pytorch import Trainer\n"
    'trainer = Trainer(strategy="fsdp_native", precision=16)  # keep me\n'
)
MIGRATED = (
    "from lightning.pytorch import Trainer\n"
    'trainer = Trainer(strategy="fsdp", precision="16-mixed")  # keep me\n'
)
MANUAL = "from fairscale.nn.wrap import auto_wrap\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "legacy.py").write_text(LEGACY)
    (tmp_path / "pkg" / "clean.py").write_text("import torch\nx = 1\n")
    (tmp_path / "pkg" / "notes.txt").write_text(LEGACY)  # not Python: ignored
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "vendored.py").write_text(LEGACY)  # excluded directory
    return tmp_path


def test_in_place_rewrites_and_second_run_is_clean(tree, capsys):
    clean = tree / "pkg" / "clean.py"
    before = clean.stat().st_mtime_ns
    assert main([str(tree)]) == 1  # changes made
    assert (tree / "pkg" / "legacy.py").read_text() == MIGRATED
    assert (tree / ".venv" / "vendored.py").read_text() == LEGACY
    assert (tree / "pkg" / "notes.txt").read_text() == LEGACY
    assert clean.stat().st_mtime_ns == before
    err = capsys.readouterr().err
    assert (
        "2 files scanned, 1 changed, 2 fixes applied, 0 findings left for a human, 0 errors" in err
    )
    assert main([str(tree)]) == 0
    assert (tree / "pkg" / "legacy.py").read_text() == MIGRATED


def test_diff_writes_nothing(tree, capsys):
    assert main(["--diff", str(tree / "pkg")]) == 1
    out = capsys.readouterr().out
    assert '-trainer = Trainer(strategy="fsdp_native", precision=16)  # keep me' in out
    assert '+trainer = Trainer(strategy="fsdp", precision="16-mixed")  # keep me' in out
    assert (tree / "pkg" / "legacy.py").read_text() == LEGACY


def test_check_writes_nothing_and_fails(tree):
    assert main(["--check", str(tree / "pkg")]) == 1
    assert (tree / "pkg" / "legacy.py").read_text() == LEGACY
    assert main(["--check", str(tree / "pkg" / "clean.py")]) == 0


def test_findings_for_a_human_exit_1_with_location(tmp_path, capsys):
    path = tmp_path / "fs.py"
    path.write_text(MANUAL)
    assert main([str(path)]) == 1
    # On stdout, so that `fsdp-migrate src/ > todo.txt` keeps them; the summary on stderr.
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{path}:1:31: FSDP304 ")
    assert "1 findings left for a human" in captured.err
    assert path.read_text() == MANUAL


def test_findings_an_unsafe_fix_would_fix_are_marked(tmp_path, capsys):
    path = tmp_path / "t.py"
    path.write_text(
        "from pytorch_lightning import Trainer\nt = Trainer(strategy='ddp_fully_sharded')\n"
    )
    assert main(["--diff", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2:13: FSDP205 " in err and err.count("[fix with --unsafe-fixes]") == 1
    assert "(1 of the findings can be fixed with --unsafe-fixes)" in err
    assert main(["--diff", "--unsafe-fixes", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- {path}\n+++ {path}\n")  # an absolute path, shown as it is


@pytest.mark.parametrize("mode", ["--diff", "--check", "write", "stdin"])
def test_each_unsafe_fix_applied_is_named_with_what_it_changes(tmp_path, capsys, mode):
    """The finding's message says what may change; a run that applies its fix prints it."""
    path = tmp_path / "t.py"
    path.write_text(
        "from pytorch_lightning import Trainer\n"
        "t = Trainer(strategy='ddp_fully_sharded', precision=16)\n"
    )
    message = REGISTRY["FSDP205"].message
    report = tmp_path / "report.json"
    if mode == "stdin":
        with open(path, "rb") as stdin:
            monkeypatched = sys.stdin
            sys.stdin = io.TextIOWrapper(stdin)
            try:
                assert main(["--unsafe-fixes", "--stdin-filename", str(path), "-"]) == 1
            finally:
                sys.stdin = monkeypatched
    else:
        flags = [] if mode == "write" else [mode]
        assert main([*flags, "--unsafe-fixes", "--report", str(report), str(path)]) == 1
    out, err = capsys.readouterr()
    state = "unsafe fix applied" if mode in ("write", "stdin") else "unsafe fix"
    line = f"{path}:2:13: FSDP205 {message} [{state}: behaviour may change]\n"
    # Where the findings left go: standard error where standard output carries code.
    assert (err if mode in ("--diff", "stdin") else out).count(line) == 1
    assert "FSDP206" not in out + err.partition("files scanned")[0]  # a safe fix: not listed
    if mode != "stdin":
        assert "2 fixes applied (1 unsafe, listed above)" in err or (
            "2 fixes available (1 unsafe, listed above)" in err
        )
        data = json.loads(report.read_text())
        verb = "applied" if mode == "write" else "available"
        assert data["summary"][f"unsafe_fixes_{verb}"] == 1
        found = {f["code"]: f["applicability"] for f in data["files"][0]["findings"]}
        assert found == {"FSDP205": "unsafe", "FSDP206": "safe"}
    # Without --unsafe-fixes nothing unsafe is applied, and no line says so.
    path.write_text("from pytorch_lightning import Trainer\nt = Trainer(precision=16)\n")
    assert main(["--diff", str(path)]) == 1
    err = capsys.readouterr().err
    assert "behaviour may change" not in err and "fixes available, " in err


@pytest.mark.parametrize("mode", ["--diff", "--check", "write", "stdin"])
def test_show_fixes_lists_the_fixes_by_file_and_rule(tmp_path, capsys, mode):
    """As ``fsdp-lint --fix --show-fixes`` (ruff's flag): after the summary, beside the
    findings (standard error where standard output carries code)."""
    path = tmp_path / "t.py"
    path.write_text(
        "from pytorch_lightning import Trainer\n"
        "t = Trainer(strategy='ddp_fully_sharded', precision=16)\n"
    )
    listing = (
        f" 2 findings:\n- {path}:\n    1 × FSDP205 ({REGISTRY['FSDP205'].name}, unsafe)\n"
        f"    1 × FSDP206 ({REGISTRY['FSDP206'].name})\n"
    )
    if mode == "stdin":
        with open(path, "rb") as stdin:
            monkeypatched = sys.stdin
            sys.stdin = io.TextIOWrapper(stdin)
            try:
                argv = ["--unsafe-fixes", "--show-fixes", "--stdin-filename", str(path), "-"]
                assert main(argv) == 1
            finally:
                sys.stdin = monkeypatched
    else:
        flags = [] if mode == "write" else [mode]
        assert main([*flags, "--unsafe-fixes", "--show-fixes", str(path)]) == 1
    out, err = capsys.readouterr()
    fixed = "Fixed" if mode in ("write", "stdin") else "Would fix"
    assert (err if mode in ("--diff", "stdin") else out).endswith(f"\n{fixed}{listing}")
    assert main(["--show-fixes", "--check", str(tmp_path / "none.py")]) == 2  # no such file
    assert "No fixes available." in capsys.readouterr().out


def test_select_ignore_and_unsafe_fixes(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(
        "from pytorch_lightning import Trainer\n"
        "t = Trainer(strategy='ddp_fully_sharded', precision=16)\n"
    )
    assert main(["--select", "FSDP206", str(path)]) == 1
    # An integer has no quote style to keep: the new string takes double quotes.
    assert 'precision="16-mixed"' in path.read_text() and "ddp_fully_sharded" in path.read_text()
    assert main(["--ignore", "FSDP205", str(path)]) == 0
    assert main([str(path)]) == 1  # the unsafe one is left for a human
    assert main(["--unsafe-fixes", str(path)]) == 1
    assert "strategy='fsdp'" in path.read_text()
    assert main([str(path)]) == 0


def test_parse_error_is_reported_and_others_processed(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("from lightning.pytorch import Trainer\nTrainer(strategy='fsdp_native'\n")
    good = tmp_path / "good.py"
    good.write_text(LEGACY)
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {broken}: cannot parse" in err
    assert good.read_text() == MIGRATED
    assert (
        broken.read_text()
        == "from lightning.pytorch import Trainer\nTrainer(strategy='fsdp_native'\n"
    )


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("latin1", "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + LEGACY.encode()),
        ("bom", b"\xef\xbb\xbf" + LEGACY.encode()),
        ("crlf", LEGACY.replace("\n", "\r\n").encode()),
    ],
)
def test_encoding_bom_and_line_endings_survive(tmp_path, name, data):
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    assert main([str(path)]) == 1
    expected = data.replace(b'"fsdp_native", precision=16', b'"fsdp", precision="16-mixed"')
    assert path.read_bytes() == expected


def test_permissions_are_kept(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(LEGACY)
    path.chmod(0o750)
    main([str(path)])
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_read_only_file_is_reported_unchanged(tmp_path, capsys):
    path = tmp_path / "ro.py"
    path.write_text(LEGACY)
    path.chmod(0o444)
    assert main([str(path)]) == 2
    assert "is read-only" in capsys.readouterr().err and path.read_text() == LEGACY


def test_missing_path_exit_2_and_zero_files_exit_0(tmp_path, capsys, monkeypatch):
    assert main([str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 0  # an empty directory: nothing to do
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0


def test_no_path_means_the_current_directory(tree, capsys, monkeypatch):
    monkeypatch.chdir(tree)
    assert main(["--check"]) == 1  # as ruff: no PATH is `.`, not zero files
    assert "2 files scanned, 1 would change" in capsys.readouterr().err


def test_report_json(tree):
    report = tree / "report.json"
    main(["--check", "--report", str(report), str(tree / "pkg")])
    data = json.loads(report.read_text())
    assert data["summary"]["files_scanned"] == 2
    legacy = next(f for f in data["files"] if f["path"].endswith("legacy.py"))
    assert legacy["changed"] and not legacy["written"]
    assert [(f["code"], f["line"], f["fixable"]) for f in legacy["findings"]] == [
        ("FSDP204", 2, True),
        ("FSDP206", 2, True),
    ]


def test_stdin_to_stdout(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "codemods.migrate", "-"],
        cwd=tmp_path,  # its [tool.fsdp-compat] names the current releases
        env=checkout_env(),
        input=LEGACY.encode(),
        capture_output=True,
        timeout=60,
    )
    assert run.returncode == 1 and run.stdout.decode() == MIGRATED


def test_an_engine_failure_is_reported_per_file_not_raised(monkeypatch, tmp_path, capsys):
    import codemods.engine.run

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(codemods.engine.run, "run", explode)
    path = tmp_path / "legacy.py"
    path.write_text(LEGACY)
    assert main([str(path)]) == 2
    assert "internal error (RuntimeError: boom); please report it" in capsys.readouterr().err
    assert path.read_text() == LEGACY


def test_progress_is_reported_as_results_arrive(tmp_path):
    from codemods.batch.runner import process_files
    from codemods.settings import Settings

    paths = []
    for index in range(5):
        path = tmp_path / f"m{index}.py"
        path.write_text(LEGACY if index % 2 else "x = 1\n")
        paths.append(path)
    seen = []
    results = process_files(
        paths, Settings(fix=True), write=False, progress=lambda d, t: seen.append((d, t))
    )
    assert seen == [(i, 5) for i in range(1, 6)]
    assert [r.new_source is not None for r in results] == [False, True, False, True, False]


def test_progress_shows_only_for_long_runs_with_a_percentage_and_an_eta(monkeypatch):
    import io

    from codemods.cli import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", terminal)
    assert progress.progress_printer(10) is None  # a short run
    ticks = iter([0.0, 2.0, 40.0])
    show = progress.progress_printer(progress.PROGRESS_MIN_FILES, clock=lambda: next(ticks))
    show(10, 200)
    show(200, 200)
    # One line rewritten in place on a terminal, ended once the run is done.
    assert terminal.getvalue() == (
        "\r\033[K10/200 files (5%), ETA 38s\r\033[K200/200 files (100%), 40s\n"
    )
    log = io.StringIO()  # not a terminal (a CI log): a line each tenth of the run
    monkeypatch.setattr(progress.sys, "stderr", log)
    show = progress.progress_printer(1000, clock=lambda: 0.0)
    for done in range(1, 1001):
        show(done, 1000)
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 and lines[0] == "100/1000 files (10%), ETA 0s"
    assert lines[-1] == "1000/1000 files (100%), 0s"


def test_a_large_run_keeps_the_input_order_whatever_order_it_works_in(tmp_path):
    from codemods.batch.runner import POOL_THRESHOLD, likeliest_first, process_files
    from codemods.settings import Settings

    paths = []
    (tmp_path / "strategies").mkdir()
    for index in range(POOL_THRESHOLD + 20):
        # every seventh file is named like an old API's module, and only those have findings
        folder = tmp_path / ("strategies" if index % 7 == 0 else "")
        path = folder / f"m{index}.py"
        path.write_text(LEGACY if index % 7 == 0 else f"x = {index}\n")
        paths.append(path)
    assert likeliest_first(paths)[:3] == [0, 7, 14]  # worked on first
    results = process_files(paths, Settings(), write=False, jobs=2)
    assert [r.path for r in results] == [str(p) for p in paths]
    assert [bool(r.findings) for r in results] == [i % 7 == 0 for i in range(len(paths))]


@pytest.mark.parametrize(
    ("sizes", "pooled"),
    [
        ([10] * 300, True),  # many small files (a package tree)
        ([100_000, 100_000], True),  # a few large files full of FSDP
        ([400_000], False),  # one file: nothing to share out
        ([2_000] * 20, False),  # a commit's few small files: start-up would dominate
    ],
    ids=["many-files", "many-bytes", "one-file", "few-small-files"],
)
def test_a_run_goes_to_workers_by_files_or_bytes(tmp_path, sizes, pooled):
    from codemods.batch.runner import _worth_a_pool

    paths = []
    for index, size in enumerate(sizes):
        path = tmp_path / f"m{index}.py"
        path.write_bytes(b"#" * (size - 1) + b"\n")
        paths.append(path)
    assert _worth_a_pool(paths) is pooled


def test_a_few_large_files_in_workers_give_what_one_process_gives(tmp_path):
    from codemods.batch.runner import _worth_a_pool, process_files
    from codemods.settings import Settings

    paths = []
    for index in range(3):
        path = tmp_path / f"train{index}.py"
        filler = "".join(f"value_{n} = {n}  # padding\n" for n in range(2_000))
        path.write_text(LEGACY + filler if index != 1 else filler)
        paths.append(path)
    assert _worth_a_pool(paths)
    pooled = process_files(paths, Settings(), write=False, jobs=2)
    alone = process_files(paths, Settings(), write=False, jobs=1)
    assert [r.findings for r in pooled] == [r.findings for r in alone]
    assert [bool(r.findings) for r in pooled] == [True, False, True]


def test_withheld_fixes_are_listed_counted_and_reported(tmp_path, capsys):
    from tests.migrate_fixtures import FIXTURES

    source = tmp_path / "driver.py"
    source.write_text(FIXTURES["lazy-torch-import-is-withheld-by-the-verifier"].source)
    before = source.read_bytes()
    report = tmp_path / "report.json"
    assert main([str(source), "--report", str(report)]) == 1
    assert source.read_bytes() == before
    out, err = capsys.readouterr()
    assert "[fix withheld: `torch` imported unconditionally at 8:1;" in out
    assert "1 fixes withheld in 1 files" in err
    data = json.loads(report.read_text())
    assert data["summary"]["fixes_withheld"] == 1
    assert all(f["withheld"] for f in data["files"][0]["findings"])
