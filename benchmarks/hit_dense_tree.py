"""Write the realistic hit-dense tree, describe it, and optionally time lint on it.

    python benchmarks/hit_dense_tree.py OUT [--files 60] [--seed 0] [--repeat N]

Writes ``tests/realistic_tree.py``'s tree of legacy FSDP code (our own writing: model
files, training scripts, policy modules, Lightning modules and tests, FairScale code) to
``OUT`` and prints its files, lines, the files with findings and the findings per rule
(from ``python -m codemods.lint --output-format json``).

With ``--repeat N`` it also times ``python -m codemods.lint`` on the tree against one
Python process that only ``ast.parse``s every file (the floor of a Python tool), each a
fresh process, interleaved, and prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
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


def wall(command: list[str]) -> float:
    """Seconds one run of ``command`` takes."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def timing(tree: Path, repeat: int) -> None:
    """Lint against the ``ast.parse`` floor, interleaved; print medians and the ratio."""
    runs = {
        "fsdp-lint": lint_command(tree, "--quiet"),
        "ast.parse every file": [sys.executable, "-c", PARSE_EVERY_FILE, str(tree)],
    }
    times: dict[str, list[float]] = {label: [] for label in runs}
    for command in runs.values():  # warm the file cache and the bytecode
        wall(command)
    for _ in range(repeat):
        for label, command in runs.items():
            times[label].append(wall(command))
    floor = statistics.median(times["ast.parse every file"])
    print(f"median of {repeat} interleaved runs")
    for label, samples in times.items():
        median = statistics.median(samples)
        print(f"{label:<24}{median:>9.2f} s{median / floor:>8.1f}x the floor")


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
