"""Migrate a realistic legacy tree in place, safe and unsafe, and check every file after.

The tree (``tests/realistic_tree.py``: 60 modules of 300-2,500 lines of our own writing,
with the shapes of issue 15's defects) is written once, copied twice, and migrated in
place by ``python -m codemods.migrate`` (and ``--unsafe-fixes`` on the second copy), as a
user would. Then, per file and per mode:

- ``parses``: the output parses and migrate reported no error for it;
- ``undefined``: pyflakes finds no undefined name the input did not have;
- ``unused``: nor an unused (or rebound-before-use) import;
- ``stable``: a second run (``--check``) would change nothing;
- ``fallbacks``: version- and capability-gated code and ``except ImportError``
  fallbacks come out unchanged (issue 15: such code is never fixed);
- ``keywords``: calls by keyword of the file's own functions still match their
  parameters (issue 15's defect 3);
- ``fairscale``: FairScale's wrappers are not handed torch-only policies or wrappers
  (issue 15's defects 2 and 9);
- ``endings``: line endings and the final newline are as they were.

Where the codemod breaks a file today, the case is in ``BROKEN_TODAY`` with the defect it
shows, as a strict xfail: fixing the defect turns the case into an unexpected pass.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from codemods.verify.check import breakages
from tests.realistic import checks
from tests.realistic_tree import build_tree, compose_tree, plan_tree, tree_paths, write_tree

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FILES, SEED = 60, 0
PATHS = tree_paths(FILES, SEED)
MODES = ("safe", "unsafe")


BROKEN_TODAY: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {}
"""The cases the codemod fails today (issue 15), each with the defect it shows."""


@dataclass(frozen=True)
class Migrated:
    """The tree before migration and after each mode's run."""

    original: Path
    after: dict[str, Path]
    reports: dict[str, dict[str, dict]]
    would_change: dict[str, set[str]]


def _migrate(paths: list[Path], mode: str, report: Path, check: bool = False) -> dict:
    flags = ["--unsafe-fixes"] if mode == "unsafe" else []
    flags += ["--check"] if check else []
    command = [sys.executable, "-m", "codemods.migrate", *flags, "--quiet", "--report", str(report)]
    run = subprocess.run([*command, *map(str, paths)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    return json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def migrated(tmp_path_factory) -> Migrated:
    base = tmp_path_factory.mktemp("realistic")
    original = base / "original"
    write_tree(original, FILES, SEED)
    after, reports, would_change = {}, {}, {}
    for mode in MODES:
        tree = base / mode
        shutil.copytree(original, tree)
        report = _migrate([tree], mode, base / f"{mode}.json")
        reports[mode] = {Path(f["path"]).relative_to(tree).as_posix(): f for f in report["files"]}
        # a file the first run left alone would come out of a second run the same way
        changed = [
            tree / p for p in PATHS if (tree / p).read_bytes() != (original / p).read_bytes()
        ]
        second = _migrate(changed, mode, base / f"{mode}-again.json", check=True) if changed else {}
        would_change[mode] = {
            Path(f["path"]).relative_to(tree).as_posix()
            for f in second.get("files", [])
            if f["changed"]
        }
        after[mode] = tree
    return Migrated(original, after, reports, would_change)


def _cases(check: str) -> list:
    cases = []
    for path in PATHS:
        modes, reason = BROKEN_TODAY.get((check, path), ((), ""))
        for mode in MODES:
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if mode in modes else []
            cases.append(pytest.param(mode, path, marks=marks, id=f"{mode}:{path}"))
    return cases


def _texts(migrated: Migrated, mode: str, path: str) -> tuple[str, str]:
    before = (migrated.original / path).read_bytes().decode("utf-8")
    return before, (migrated.after[mode] / path).read_bytes().decode("utf-8")


@pytest.mark.parametrize("mode, path", _cases("parses"))
def test_output_parses(migrated, mode, path):
    assert migrated.reports[mode][path]["error"] is None
    ast.parse(_texts(migrated, mode, path)[1])


@pytest.mark.parametrize("mode, path", _cases("undefined"))
def test_no_new_undefined_name(migrated, mode, path):
    before, after = _texts(migrated, mode, path)
    new = checks.flakes(after, checks.UNDEFINED) - checks.flakes(before, checks.UNDEFINED)
    assert not new


@pytest.mark.parametrize("mode, path", _cases("unused"))
def test_no_new_unused_import(migrated, mode, path):
    before, after = _texts(migrated, mode, path)
    assert not checks.flakes(after, checks.UNUSED) - checks.flakes(before, checks.UNUSED)


@pytest.mark.parametrize("mode, path", _cases("verified"))
def test_the_verifier_finds_nothing_broken(migrated, mode, path):
    """The project's own verifier agrees with pyflakes on what was written."""
    before, after = _texts(migrated, mode, path)
    init = path.endswith("__init__.py")
    assert breakages(before, after, reexports=init) == []


@pytest.mark.parametrize("mode, path", _cases("stable"))
def test_a_second_run_changes_nothing(migrated, mode, path):
    assert path not in migrated.would_change[mode]


@pytest.mark.parametrize("mode, path", _cases("fallbacks"))
def test_gated_fallbacks_are_left_alone(migrated, mode, path):
    before, after = _texts(migrated, mode, path)
    assert checks.fallbacks(after) == checks.fallbacks(before)


@pytest.mark.parametrize("mode, path", _cases("keywords"))
def test_keyword_calls_still_match(migrated, mode, path):
    before, after = _texts(migrated, mode, path)
    assert not checks.keyword_mismatches(after) - checks.keyword_mismatches(before)


@pytest.mark.parametrize("mode, path", _cases("fairscale"))
def test_fairscale_gets_what_fairscale_takes(migrated, mode, path):
    before, after = _texts(migrated, mode, path)
    assert not checks.fairscale_mismatches(after) - checks.fairscale_mismatches(before)


@pytest.mark.parametrize("mode, path", _cases("endings"))
def test_line_endings_are_kept(migrated, mode, path):
    before = (migrated.original / path).read_bytes()
    assert checks.endings((migrated.after[mode] / path).read_bytes()) == checks.endings(before)


def test_the_tree_is_clean_and_realistic_before_migration(migrated):
    """Every module parses, pyflakes says nothing, sizes are in range, most have findings."""
    modules = [s.path for s in plan_tree(FILES, SEED)]
    assert len(modules) == FILES
    for path in PATHS:
        source = (migrated.original / path).read_bytes().decode("utf-8")
        assert checks.flakes(source, (object,)) == set(), path
        if path in modules:
            assert 300 <= source.count("\n") + 1 <= 2500, path
    with_findings = [p for p in modules if migrated.reports["safe"][p]["findings"]]
    assert len(with_findings) >= 0.6 * FILES
    assert len(with_findings) < FILES  # some have nothing to migrate
    endings = [checks.endings((migrated.original / p).read_bytes()) for p in modules]
    assert ("crlf", True) in endings and ("lf", False) in endings


def test_the_tree_is_deterministic():
    first = compose_tree(FILES, SEED)
    assert sorted(first) == PATHS
    assert compose_tree(FILES, SEED) == first == build_tree(FILES, SEED)
    assert compose_tree(FILES, SEED + 1) != first


def test_broken_today_names_real_cases():
    known = {"parses", "undefined", "unused", "stable", "fallbacks", "keywords", "fairscale"}
    known |= {"endings", "verified"}
    for (check, path), (modes, reason) in BROKEN_TODAY.items():
        assert check in known and path in PATHS and set(modes) <= set(MODES) and reason


@pytest.mark.parametrize(
    "name",
    ["tests.realistic_tree", "tests.realistic.source", "tests.realistic.checks"],
)
def test_generator_examples(name):
    module = importlib.import_module(name)
    assert doctest.testmod(module).failed == 0
