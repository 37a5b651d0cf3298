"""Which files a run reads: ``--force-exclude`` for named files, ``.gitignore`` in walks.

The ``.gitignore`` matcher is checked against git itself (``git check-ignore``) on the
same tree, so a pattern it reads differently from git fails here.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemods import lint, migrate
from codemods.batch.excludes import DEFAULT_EXCLUDES, excluded, named_excluded
from codemods.batch.files import discover
from codemods.batch.gitignore import ignorer
from tests.scratch_projects import CURRENT_RELEASES

LEGACY = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def vendored(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        CURRENT_RELEASES + 'exclude = ["third_party/*", "legacy_*.py"]\n'
    )
    for name in ("train.py", "third_party/copy.py", "third_party/deep/more.py", "legacy_1.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(LEGACY)
    return tmp_path


NAMED = ["train.py", "third_party/copy.py", "third_party/deep/more.py", "legacy_1.py"]


def test_named_files_are_checked_unless_force_exclude(vendored, capsys):
    assert lint.main(["--quiet", *NAMED]) == 1
    out = capsys.readouterr().out
    assert all(f"{name}:1:41" in out for name in NAMED)  # as ruff: a named file is checked
    assert lint.main(["--quiet", "--force-exclude", *NAMED]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == ["train.py:1:41: FSDP101 [*] " + out.split("[*] ", 1)[1].strip()]
    assert migrate.main(["--force-exclude", "--quiet", *NAMED[1:]]) == 0  # nothing to do
    assert (vendored / "third_party" / "copy.py").read_text() == LEGACY


def test_force_exclude_applies_the_built_in_excludes_too(vendored, capsys):
    (vendored / ".venv").mkdir()
    (vendored / ".venv" / "site.py").write_text(LEGACY)
    assert lint.main(["--force-exclude", ".venv/site.py"]) == 0
    assert lint.main([".venv/site.py"]) == 1


@pytest.mark.parametrize(
    "name",
    ["build", "builds", "venv", ".venv", "pkg.egg-info", "egg-info", "x.egg-info.py", "[x]"],
)
@pytest.mark.parametrize(
    "patterns", [DEFAULT_EXCLUDES, ("build",), ("*.egg-info", "[x]"), ("[[]x]",), ("b?ild",), ()]
)
def test_an_excluded_name_is_one_a_pattern_matches(name, patterns):
    """Plain names are compared as they are, globs matched: as ``fnmatch`` says of each."""
    expected = any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
    assert excluded(name, patterns) is expected


@pytest.mark.parametrize(
    "path",
    [
        "train.py",
        "src/model.py",
        ".venv/site.py",
        "src/./build/x.py",
        "../build/x.py",
        "/abs/venv/x.py",
        "a//node_modules/b.py",
        "pkg.egg-info/x.py",
        "build",
    ],
)
def test_a_named_path_is_excluded_by_the_names_it_is_written_with(path):
    """As ``pathlib`` parts the path: its names and its parents' (not ``.`` nor ``..``)."""
    written = [p.name for p in (Path(path), *Path(path).parents) if p.name not in ("", ".", "..")]
    expected = any(excluded(name, DEFAULT_EXCLUDES) for name in written)
    assert named_excluded(path, DEFAULT_EXCLUDES) is expected


def _repository(root: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    files = {
        ".gitignore": "generated/\n*.gen.py\n!keep.gen.py\n/top_only.py\ndocs/**/draft_*.py\n"
        "build_[0-9].py\n\\#hash.py\nspaced.py \n",
        "train.py": LEGACY,
        "generated/out.py": LEGACY,
        "src/generated/out.py": LEGACY,  # a name pattern matches at any depth
        "src/model.gen.py": LEGACY,
        "src/keep.gen.py": LEGACY,  # re-included
        "top_only.py": LEGACY,  # anchored: only at the root
        "src/top_only.py": LEGACY,
        "docs/a/b/draft_1.py": LEGACY,
        "docs/a/final.py": LEGACY,
        "build_7.py": LEGACY,
        "build_x.py": LEGACY,
        "#hash.py": LEGACY,
        "spaced.py": LEGACY,
        "pkg/.gitignore": "local.py\n!/generated/\n",
        "pkg/local.py": LEGACY,
        "pkg/sub/local.py": LEGACY,
        "pkg/generated/kept.py": LEGACY,  # re-included below pkg by its own .gitignore
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret.py\n")
    (root / "secret.py").write_text(LEGACY)


@needs_git
def test_the_gitignore_matcher_agrees_with_git(tmp_path):
    _repository(tmp_path)
    every = sorted(
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*.py")
        if ".git" not in p.relative_to(tmp_path).parts
    )
    asked = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=tmp_path,
        input="\n".join(every) + "\n",
        capture_output=True,
        text=True,
    )
    by_git = set(asked.stdout.split())
    assert {"generated/out.py", "src/model.gen.py", "secret.py"} <= by_git  # it did ignore
    git = ignorer(tmp_path)
    assert git is not None
    ours = set()
    for name in every:
        # As a walk asks: each directory on the way, then the file.
        parts = Path(name).parts
        for depth in range(1, len(parts)):
            if git.ignored(tmp_path.joinpath(*parts[:depth]), is_dir=True):
                ours.add(name)
        if git.ignored(tmp_path / name, is_dir=False):
            ours.add(name)
    assert ours == by_git


@pytest.mark.parametrize("top", [".", "./", "src/..", "ABSOLUTE"])
def test_a_walks_question_is_answered_as_the_paths(tmp_path, monkeypatch, top):
    # ignored_in(directory, name) makes each directory relative once: the same verdict
    # as ignored(Path(directory, name)) for every entry of a walk, however it starts.
    _repository(tmp_path)
    monkeypatch.chdir(tmp_path)
    git = ignorer(tmp_path)
    assert git is not None
    asked = 0
    for root, dirs, names in os.walk(str(tmp_path) if top == "ABSOLUTE" else top):
        for name, is_dir in [*((d, True) for d in dirs), *((n, False) for n in names)]:
            asked += 1
            assert git.ignored_in(root, name, is_dir) == git.ignored(Path(root, name), is_dir)
    assert asked > 20


@needs_git
def test_a_walk_respects_gitignore_unless_told_not_to(tmp_path, monkeypatch, capsys):
    _repository(tmp_path)
    monkeypatch.chdir(tmp_path)
    files, _ = discover(["."], respect_gitignore=True)
    walked = {p.as_posix() for p in files}
    assert "train.py" in walked and "src/keep.gen.py" in walked
    assert not walked & {"generated/out.py", "src/model.gen.py", "secret.py", "build_7.py"}
    assert lint.main(["--quiet", "."]) == 1
    out = capsys.readouterr().out
    assert "generated/out.py" not in out and "train.py:1:41" in out
    assert lint.main(["--quiet", "--no-respect-gitignore", "."]) == 1
    assert "generated/out.py:1:41" in capsys.readouterr().out
    # A file named on the command line is checked, ignored or not (as ruff does).
    assert lint.main(["--quiet", "generated/out.py"]) == 1


def test_outside_a_repository_gitignore_files_mean_nothing(tmp_path, monkeypatch):
    if any((parent / ".git").exists() for parent in tmp_path.parents):
        pytest.skip("the temporary directory is inside a git repository")
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "train.py").write_text(LEGACY)
    monkeypatch.chdir(tmp_path)
    files, _ = discover(["."], respect_gitignore=True)
    assert [p.name for p in files] == ["train.py"]
