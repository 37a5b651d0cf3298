"""Where one process's lint of a tree spends its CPU, stage by stage.

    python benchmarks/lint_stages.py TREE [--repeat N]

Runs ``fsdp-lint --jobs 1 TREE`` in this process (once untimed, so that imports and
the per-process caches are not counted, then ``--repeat`` times) with the stages the
goal of issue 44 weighs timed around their functions: the parses (``ast.parse``, and
the symbol table's own of a file the pre-filter rules out), the tree index, the
detector's scopes and walk, each file's settings (its project's declared releases)
and the project classes read after the workers. Prints the medians, in seconds of
wall time (one process on an otherwise idle core is its CPU) and as shares of the run.
The stages nest in the run's screening (``_screen``), which is shown whole; what it
holds beyond them is the text pre-filter, the ``ast`` name scan, the evidence, the
noqa comments and the findings' reports.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemods import lint  # noqa: E402
from codemods.astlint import scopes, walk  # noqa: E402
from codemods.batch import runner, syntax_errors  # noqa: E402
from codemods.cli import later_classes, options  # noqa: E402
from codemods.syntax import ast_nodes  # noqa: E402

SPENT: Counter[str] = Counter()


def _timed(owner: Any, name: str, stage: str) -> None:
    """Replace ``owner.name`` by a function that adds its time to ``SPENT[stage]``."""
    function: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[stage] += time.perf_counter() - start

    setattr(owner, name, timed)


STAGES = [
    (runner, "_screen", "screening, whole"),
    (ast, "parse", "ast.parse"),
    (syntax_errors, "compiles", "symbol table (files not parsed)"),
    (ast_nodes.TreeIndex, "__init__", "tree index"),
    (scopes.Names, "__init__", "detector: scopes"),
    (walk.Walk, "run", "detector: walk"),
    (options.Choices, "settings_for", "settings (declared releases)"),
    (later_classes.LaterClasses, "finish", "project classes, after"),
]


def run(tree: Path) -> float:
    """Seconds one ``--jobs 1`` lint of ``tree`` takes here (its output dropped)."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        lint.main(["--exit-zero", "--quiet", "--jobs", "1", str(tree)])
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Time the stages over ``--repeat`` runs and print their medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for owner, name, stage in STAGES:
        _timed(owner, name, stage)
    run(args.tree)  # imports and caches: not counted
    totals: list[float] = []
    shares: dict[str, list[float]] = {stage: [] for _, _, stage in STAGES}
    for _ in range(args.repeat):
        SPENT.clear()
        totals.append(run(args.tree))
        for stage in shares:
            shares[stage].append(SPENT[stage])
    total = statistics.median(totals)
    print(f"{args.tree}: lint --jobs 1, median of {args.repeat}: {total:.3f} s")
    for stage, spent in shares.items():
        seconds = statistics.median(spent)
        print(f"  {stage:<34}{seconds:>7.3f} s {seconds / total * 100:>5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
