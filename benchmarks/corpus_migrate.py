"""Run lint and migrate over real package sources, on a copy, and print what happened.

    python benchmarks/corpus_migrate.py [--no-prefilter] [PACKAGE ...]
        (default: the packages in DEFAULT_PACKAGES, more than 5,000 files)

Copies the installed packages' sources to a temporary directory and runs, in turn, the
lint (no fixes), migrate as ``--diff`` would (every fix, nothing written) and migrate in
place (every fix, unsafe ones too). Then checks: no file made the engine crash, every
rewritten file parses, a second run changes nothing, and every file the run did not
rewrite is byte-identical with an unchanged mtime. Prints the figures and exits 1 if any
check fails.
``--no-prefilter`` runs the engine on every file, not only those the text pre-filter
lets through: slow, but it puts the parser and every rule's visitor through all of them.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

import libcst

from codemods.batch.files import discover
from codemods.batch.runner import process_files
from codemods.settings import Settings


def package_dir(name: str) -> Path:
    """Where the installed package ``name`` lives."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


#: Installed packages that together hold more than 5,000 .py files (torch and its
#: dependencies, Lightning, libcst, the test and docs tools).
DEFAULT_PACKAGES = [
    "torch",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "torchmetrics",
    "libcst",
    "sympy",
    "networkx",
    "numpy",
    "pip",
]


def _timed(label: str, files: list[Path], settings: Settings, prefilter: bool, write: bool):
    start = time.perf_counter()
    results = process_files(files, settings, write=write, prefilter=prefilter)
    seconds = time.perf_counter() - start
    findings = sum(len(r.findings) for r in results)
    crashes = sum(r.crashed for r in results)
    print(
        f"{label:<24} {seconds:7.1f} s  {len(files) / seconds:6.0f} files/s  "
        f"findings {findings:5}  errors {sum(bool(r.error) for r in results):3}  crashes {crashes}"
    )
    return results, crashes


def main(names: list[str], prefilter: bool = True) -> int:
    """Lint and migrate a copy of ``names``' sources, check the results, print figures."""
    settings = Settings(fix=True, unsafe_fixes=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            shutil.copytree(
                package_dir(name), Path(tmp, name), ignore=shutil.ignore_patterns("__pycache__")
            )
        files, problems = discover([tmp])
        before = {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in files}
        print(f"packages: {', '.join(names)}  pre-filter: {'on' if prefilter else 'off'}")
        print(f"files: {len(files)}")
        _, lint_crashes = _timed("lint", files, Settings(), prefilter, write=False)
        _, diff_crashes = _timed("migrate --diff", files, settings, prefilter, write=False)
        first, _ = _timed("migrate (in place)", files, settings, prefilter, write=True)
        changed = {Path(r.path) for r in first if r.written}
        errors = [r for r in first if r.error]
        unparsable = [f for f in changed if not _parses(f.read_bytes())]
        touched = [
            f
            for f in files
            if f not in changed and (f.read_bytes(), f.stat().st_mtime_ns) != before[f]
        ]
        # Files the first run left alone would be read as the same bytes again: only the
        # rewritten ones can change on a second run.
        second = process_files(sorted(changed), settings, write=False, prefilter=prefilter)
        unstable = [r.path for r in second if r.new_source is not None]
        findings = sum(len(r.findings) for r in first)
        rewritten = [f"  rewritten: {path.relative_to(tmp)}" for path in sorted(changed)[:20]]
    print(f"rewritten: {len(changed)}  findings: {findings}  errors: {len(errors) + len(problems)}")
    crashes = sum(r.crashed for r in first + second) + lint_crashes + diff_crashes
    print(f"crashes: {crashes}  unparsable outputs: {len(unparsable)}")
    print(f"changed on a second run: {len(unstable)}")
    print(f"untouched files altered: {len(touched)}")
    print("\n".join(rewritten))
    for result in errors:
        print(f"  error: {result.path}: {result.error}")
    for path in unparsable + touched + unstable:
        print(f"  check failed: {path}")
    return 1 if crashes or unparsable or touched or unstable else 0


def _parses(source: bytes) -> bool:
    try:
        libcst.parse_module(source)
    except libcst.ParserSyntaxError:
        return False
    return True


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--no-prefilter"]
    sys.exit(main(arguments or DEFAULT_PACKAGES, "--no-prefilter" not in sys.argv))
