"""Write the realistic hit-dense tree, describe it, and optionally time lint on it.

    python benchmarks/hit_dense_tree.py OUT [--files 60] [--seed 0] [--repeat N]

Writes ``tests/realistic_tree.py``'s tree of legacy FSDP code (our own writing: model
files, training scripts, policy modules, Lightning modules and tests, FairScale code) to
``OUT`` and prints its files, lines, the files with findings and the findings per rule
(from ``python -m codemods.lint --output-format json``).

With ``--repeat N`` it also times, each a fresh process, interleaved: ``python -m
codemods.lint`` on the tree, ``python -m codemods.migrate`` in place on a fresh copy of
it, one Python process that only ``ast.parse``s every file (the floor of a Python tool)
and ``ruff check --select UP --no-cache`` (where ruff is installed); then what a
pre-commit hook sees, lint and ruff on 1 file with findings, on 5 files (one with
findings) and on the tree's largest file with findings. It prints the medians, the
ratios to the floor, and how many of the files lint parses its ``ast`` detector left to
libcst (and why).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.realistic_tree import write_tree  # noqa: E402

PARSE_EVERY_FILE = (
    "import ast, pathlib, sys\n"
    "for path in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
    "    ast.parse(path.read_bytes())\n"
)


def lint_command(tree: Path, *flags: str) -> list[str]:
    """``python -m codemods.lint`` on ``tree`` (exit 0 even with findings)."""
    return [sys.executable, "-m", "codemods.lint", "--exit-zero", *flags, str(tree)]


def describe(tree: Path, paths: list[Path]) -> None:
    """Print the tree's size and its findings, per file and per rule."""
    lines = sum(p.read_bytes().count(b"\n") for p in paths)
    run = subprocess.run(
        lint_command(tree, "--output-format", "json"), cwd=ROOT, capture_output=True, text=True
    )
    findings = json.loads(run.stdout)
    per_file = Counter(f["filename"] for f in findings)
    per_rule = Counter(f["code"] for f in findings)
    print(f"tree: {tree}")
    print(f"files: {len(paths)} ({sum(p.name != '__init__.py' for p in paths)} modules)")
    print(f"lines: {lines}")
    print(f"files with findings: {len(per_file)}")
    print(f"findings: {len(findings)}")
    for code, count in sorted(per_rule.items(), key=lambda item: (-item[1], item[0])):
        print(f"{count:6d}  {code}")


#: The commands run as an installed tool runs: with its bytecode (installing a wheel
#: compiles it; an environment that turns writing it off would time compiling instead).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def wall(command: list[str]) -> float:
    """Seconds one run of ``command`` takes."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def ruff() -> str | None:
    """The ``ruff`` executable: on PATH, or beside this Python (a virtual environment)."""
    beside = Path(sys.executable).with_name("ruff")
    return shutil.which("ruff") or (str(beside) if beside.exists() else None)


def _with_findings(tree: Path, paths: list[Path]) -> set[Path]:
    run = subprocess.run(
        lint_command(tree, "--output-format", "json"), cwd=ROOT, capture_output=True, text=True
    )
    return {Path(f["filename"]).resolve() for f in json.loads(run.stdout)}


def hook_files(tree: Path, paths: list[Path]) -> dict[str, list[Path]]:
    """What a pre-commit hook and an editor see: 1 and 5 files, one with findings.

    The smallest module with findings, that one with the 4 smallest modules without,
    and the largest module with findings (a 2,000+-line model file).
    """
    found = _with_findings(tree, paths)
    modules = sorted((p for p in paths if p.name != "__init__.py"), key=lambda p: p.stat().st_size)
    hits = [p for p in modules if p.resolve() in found]
    clean = [p for p in modules if p.resolve() not in found]
    lines = hits[-1].read_bytes().count(b"\n")
    return {
        "1 file, with findings": hits[:1],
        "5 files, 1 with findings": hits[:1] + clean[:4],
        f"{lines}-line file, with findings": hits[-1:],
    }


def fallbacks(paths: list[Path]) -> tuple[int, int, list[str]]:
    """Files lint parses, and those of them its ``ast`` detector leaves to libcst (why)."""
    from codemods.astlint.lint import Undecided, lint
    from codemods.screen.prefilter import screen
    from codemods.settings import Settings

    parsed, left, reasons = 0, 0, []
    for path in paths:
        source = path.read_bytes()
        if screen(source, Settings()) is None:
            continue
        parsed += 1
        try:
            lint(source, Settings())
        except Undecided as exc:
            left += 1
            reasons.append(f"{path.name}: {exc}")
    return parsed, left, reasons


def _migrate(tree: Path) -> Callable[[], float]:
    """A run of ``fsdp-migrate`` in place on a fresh copy of ``tree`` (the copy untimed)."""

    def once() -> float:
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / "tree"
            shutil.copytree(tree, copy)
            return wall([sys.executable, "-m", "codemods.migrate", "--quiet", str(copy)])

    return once


def timing(tree: Path, repeat: int) -> None:
    """Lint, migrate and hook runs against the ``ast.parse`` floor and ruff, interleaved."""
    paths = sorted(tree.rglob("*.py"))
    checker = ruff()
    runs: dict[str, Callable[[], float]] = {
        "fsdp-lint": functools.partial(wall, lint_command(tree, "--quiet")),
        "fsdp-migrate (in place)": _migrate(tree),
        "ast.parse every file": functools.partial(
            wall, [sys.executable, "-c", PARSE_EVERY_FILE, str(tree)]
        ),
    }
    if checker:
        runs["ruff check --select UP"] = functools.partial(wall, _ruff_command(checker, [tree]))
    for label, files in hook_files(tree, paths).items():
        names = [str(p) for p in files]
        runs[f"fsdp-lint, {label}"] = functools.partial(
            wall, [sys.executable, "-m", "codemods.lint", "--exit-zero", "--quiet", *names]
        )
        if checker:
            runs[f"ruff, {label}"] = functools.partial(wall, _ruff_command(checker, files))
    times: dict[str, list[float]] = {label: [] for label in runs}
    for once in runs.values():  # warm the file cache and the bytecode
        once()
    for _ in range(repeat):
        for label, once in runs.items():
            times[label].append(once())
    floor = statistics.median(times["ast.parse every file"])
    print(f"median of {repeat} interleaved runs")
    for label, samples in times.items():
        median = statistics.median(samples)
        if label.startswith(("fsdp-lint, ", "ruff, ")):
            print(f"{label:<44}{median * 1000:>9.0f} ms")
        else:
            print(f"{label:<44}{median:>9.2f} s{median / floor:>8.1f}x the floor")
    parsed, left, reasons = fallbacks(paths)
    print(f"files past the pre-filter: {parsed}; left to libcst by the ast detector: {left}")
    for reason in reasons:
        print(f"  {reason}")


def _ruff_command(checker: str, paths: list[Path]) -> list[str]:
    return [checker, "check", "--select", "UP", "--no-cache", "--exit-zero", *map(str, paths)]


def main(argv: list[str] | None = None) -> None:
    """Write the tree, describe it and, with ``--repeat``, time lint on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write the tree to (must be empty)")
    parser.add_argument("--files", type=int, default=60, help="modules of 300-2,500 lines")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=0, help="time lint, N interleaved runs")
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty")
    paths = write_tree(args.out, args.files, args.seed)
    describe(args.out, paths)
    if args.repeat:
        timing(args.out, args.repeat)


if __name__ == "__main__":
    main()
