"""Time checkouts of this project against each other on one tree, runs interleaved.

    python benchmarks/side_by_side.py TREE NAME=CHECKOUT [NAME=CHECKOUT ...]
        [--tool migrate|lint] [--repeat N] [--same-output] [-- ARGS...]

Each round runs ``python -m codemods.<tool> --quiet ARGS TREE-COPY`` once in every
checkout (a source tree of this project, for example a ``git worktree`` of an earlier
commit: the command runs there, so that checkout's ``codemods`` is the one imported),
each on a fresh copy of ``TREE``, then one Python process that only ``ast.parse``s
every file of ``TREE`` (the floor). The machines here are shared and noisy: only
ratios taken in one such run mean anything. It prints each checkout's median and its
ratio to the floor's median; with ``--same-output`` it also says whether every
checkout's migrated copy is byte for byte the same as the first one's.

Example:
    git worktree add /tmp/before HEAD~3
    python benchmarks/side_by_side.py /tmp/tree before=/tmp/before after=. --repeat 5
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hit_dense_tree import PARSE_EVERY_FILE  # noqa: E402 - the same floor as there


def wall(command: list[str], cwd: Path) -> float:
    """Seconds one run of ``command`` in ``cwd`` takes."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def differing(first: Path, other: Path) -> list[str]:
    """The files whose bytes differ between two trees (or that one of them lacks)."""
    found: list[str] = []
    compared = filecmp.dircmp(first, other)
    stack = [(compared, Path())]
    while stack:
        node, where = stack.pop()
        found += [str(where / name) for name in node.left_only + node.right_only]
        _, mismatch, errors = filecmp.cmpfiles(
            node.left, node.right, node.common_files, shallow=False
        )
        found += [str(where / name) for name in mismatch + errors]
        stack += [(sub, where / name) for name, sub in node.subdirs.items()]
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the medians (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("checkouts", nargs="+", metavar="NAME=CHECKOUT")
    parser.add_argument("--tool", choices=("migrate", "lint"), default="migrate")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--same-output", action="store_true")
    argv = sys.argv[1:] if argv is None else argv
    passed: list[str] = []
    if "--" in argv:  # what follows goes to the tool
        argv, passed = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    options = parser.parse_args(argv)
    checkouts = dict(item.split("=", 1) for item in options.checkouts)
    times: dict[str, list[float]] = {name: [] for name in checkouts}
    floor: list[float] = []
    flags = ["--exit-zero"] if options.tool == "lint" else []
    with tempfile.TemporaryDirectory() as scratch:
        copies = {name: Path(scratch, name) for name in checkouts}
        for _ in range(options.repeat):
            for name, checkout in checkouts.items():
                shutil.rmtree(copies[name], ignore_errors=True)
                shutil.copytree(options.tree, copies[name])
                command = [sys.executable, "-m", f"codemods.{options.tool}", "--quiet"]
                command += [*flags, *passed, str(copies[name])]
                times[name].append(wall(command, Path(checkout).resolve()))
            parse = [sys.executable, "-c", PARSE_EVERY_FILE, str(options.tree)]
            floor.append(wall(parse, Path.cwd()))
        base = statistics.median(floor)
        print(f"median of {options.repeat} interleaved runs, `{options.tool}` on {options.tree}")
        print(f"{'ast.parse every file':32s} {base:7.2f} s   1.0x the floor")
        for name, runs in times.items():
            median = statistics.median(runs)
            print(f"{name:32s} {median:7.2f} s  {median / base:4.1f}x the floor")
        if options.same_output:
            first, *others = copies
            for name in others:
                files = differing(copies[first], copies[name])
                verdict = "the same" if not files else f"{len(files)} files differ: {files[:5]}"
                print(f"output of {name} against {first}: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
