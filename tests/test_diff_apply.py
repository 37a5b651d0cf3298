"""``fsdp-migrate --diff`` prints a patch that ``git apply`` takes, byte for byte.

Files without a final newline, CRLF files, a Latin-1 file, a form feed inside a line,
and several files in one patch: the patch passes ``git apply --check`` in a real git
repository, and applying it gives exactly what the in-place run writes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")

BODY = (
    "from lightning.pytorch import Trainer\n"
    "\n"
    'trainer = Trainer(strategy="fsdp_native", precision=16)\n'
    "name = 'kept as it is'\n"
)
LAST_LINE = 'from lightning.pytorch import Trainer\nTrainer(strategy="fsdp_native", precision=16)'
FILES = {
    # the changed line is the last one, and it has no newline
    "no_newline_changed.py": LAST_LINE.encode(),
    # a changed line, then unchanged context whose last line has no newline
    "no_newline_context.py": BODY.rstrip("\n").encode(),
    "crlf.py": BODY.replace("\n", "\r\n").encode(),
    "crlf_no_newline.py": BODY.replace("\n", "\r\n").rstrip("\r\n").encode(),
    "latin1.py": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BODY.encode(),
    "form_feed.py": b"# section one\x0c still the same line\n" + BODY.encode(),
    "pkg/nested.py": BODY.encode(),
    "pkg/unchanged.py": b"x = 1",  # no finding: not in the patch
}


def git(repo: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [GIT, "-c", "core.autocrlf=false", *args],
        cwd=repo,
        input=data,
        capture_output=True,
        timeout=60,
    )


def make_tree(root: Path, names: list[str]) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(FILES[name])


def migrate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "codemods.migrate", *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "names",
    [[name] for name in FILES if name != "pkg/unchanged.py"] + [sorted(FILES)],
    ids=lambda names: names[0] if len(names) == 1 else "all-in-one-patch",
)
def test_the_diff_applies_with_git_and_gives_the_in_place_result(tmp_path, names):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q").returncode == 0
    make_tree(repo, names)
    diff = migrate(repo, "--diff", ".")
    assert diff.returncode == 1, diff.stderr
    patch = diff.stdout
    check = git(repo, "apply", "--check", "-", data=patch)
    assert check.returncode == 0, check.stderr.decode() + patch.decode("latin-1")
    expected = tmp_path / "in-place"
    make_tree(expected, names)
    assert migrate(expected, ".").returncode == 1  # rewritten in place
    assert git(repo, "apply", "-", data=patch).returncode == 0
    for name in names:
        assert (repo / name).read_bytes() == (expected / name).read_bytes(), name
    changed = [name for name in names if name != "pkg/unchanged.py"]
    assert patch.count(b"\n--- a/") + patch.startswith(b"--- a/") == len(changed)


def test_a_missing_final_newline_is_marked_and_the_next_header_starts_a_line(tmp_path):
    make_tree(tmp_path, ["no_newline_changed.py", "pkg/nested.py"])
    patch = migrate(tmp_path, "--diff", "no_newline_changed.py", "pkg/nested.py").stdout
    assert (
        b'-Trainer(strategy="fsdp_native", precision=16)\n\\ No newline at end of file\n'
        b'+Trainer(strategy="fsdp", precision="16-mixed")\n\\ No newline at end of file\n'
        b"--- a/pkg/nested.py\n"
    ) in patch
