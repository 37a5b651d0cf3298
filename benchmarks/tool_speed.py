"""How fast lint and migrate are, measured side by side with ruff and grep in one run.

    python benchmarks/tool_speed.py [--repeat N] [--tree DIR]

Prints, for the installed torch package's source tree (or ``--tree``):

- wall time and files/s of ``fsdp-lint``, ``fsdp-migrate --check``, ``ruff check
  --select UP --no-cache`` and ``grep -rl`` of the old names (the floor: reading every
  file once), each the median of ``--repeat`` runs taken in turn, and the ratios to ruff;
- migrate, in place on a copy, of a generated hit-dense tree (every file has findings),
  in files/s;
- ``import codemods.lint`` time, from ``python -X importtime``, with torch blocked.

Every tool runs as a fresh process, as a user or a pre-commit hook would run it. The
machines are shared and noisy: quote the ratios, which come from interleaved runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "migrate"

BLOCK_TORCH = (
    "import sys\n"
    "class _NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError(name)\n"
    "sys.meta_path.insert(0, _NoTorch())\n"
)


def torch_tree() -> Path:
    """The installed torch package's directory (found without importing torch)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed: pass --tree DIR")
    return Path(next(iter(spec.submodule_search_locations)))


def _old_names() -> str:
    sys.path.insert(0, str(ROOT))
    from codemods.registry import REGISTRY

    leaves = {name.rpartition(".")[2] for rule in REGISTRY for name in rule.old}
    return "|".join(sorted(re.escape(leaf) for leaf in leaves))


def commands(tree: Path) -> dict[str, list[str]]:
    """The commands to time, by label."""
    python = sys.executable
    return {
        "fsdp-lint": [python, "-m", "codemods.lint", "--exit-zero", "--quiet", str(tree)],
        "fsdp-migrate --check": [python, "-m", "codemods.migrate", "--check", "--quiet", str(tree)],
        "ruff check --select UP": [
            shutil.which("ruff") or "ruff", "check", "--select", "UP", "--no-cache",
            "--exit-zero", "--quiet", str(tree),
        ],
        "grep -rlE (old names)": [
            "grep", "-rlE", "--include=*.py", "--include=*.pyi", _old_names(), str(tree),
        ],
    }  # fmt: skip


def wall(command: list[str]) -> float:
    """Seconds one run of ``command`` takes."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def count_files(tree: Path) -> int:
    """The .py and .pyi files under ``tree``."""
    return sum(1 for p in tree.rglob("*") if p.suffix in (".py", ".pyi") and p.is_file())


def tree_speed(tree: Path, repeat: int) -> None:
    """Time every command on ``tree``, interleaved, and print medians and ratios."""
    runs = commands(tree)
    times: dict[str, list[float]] = {label: [] for label in runs}
    for command in runs.values():  # warm the file cache and the bytecode
        wall(command)
    for _ in range(repeat):
        for label, command in runs.items():
            times[label].append(wall(command))
    files = count_files(tree)
    ruff = statistics.median(times["ruff check --select UP"])
    print(f"tree: {tree} ({files} files), median of {repeat} interleaved runs")
    print(f"{'command':<26}{'wall s':>9}{'files/s':>10}{'vs ruff':>9}")
    for label, samples in times.items():
        median = statistics.median(samples)
        print(f"{label:<26}{median:>9.2f}{files / median:>10.0f}{median / ruff:>9.2f}")


def dense_tree(directory: Path, copies: int) -> int:
    """Write ``copies`` of every fixture input with findings; return the file count."""
    sources = [
        path.read_text(encoding="utf-8")
        for path in sorted(FIXTURES.glob("*/input.py"))
        if (path.parent / "output.py").exists()
    ]
    count = 0
    for copy in range(copies):
        package = directory / f"pkg{copy}"
        package.mkdir(parents=True)
        for number, source in enumerate(sources):
            (package / f"legacy_{number}.py").write_text(source, encoding="utf-8")
            count += 1
    return count


def dense_speed(copies: int) -> None:
    """Migrate a generated tree where every file has findings; print files/s."""
    with tempfile.TemporaryDirectory() as tmp:
        files = dense_tree(Path(tmp), copies)
        command = [sys.executable, "-m", "codemods.migrate", "--unsafe-fixes", "--quiet", tmp]
        seconds = wall(command)
        first = {path: path.read_bytes() for path in Path(tmp).rglob("*.py")}
        subprocess.run(command, cwd=ROOT, capture_output=True)
        changed = sum(path.read_bytes() != text for path, text in first.items())
    print(f"hit-dense tree: {files} files, every one with findings")
    print(f"fsdp-migrate --unsafe-fixes (in place): {seconds:.2f} s, {files / seconds:.0f} files/s")
    print(f"files a second run changes: {changed}")


def import_time(repeat: int) -> None:
    """``import codemods.lint`` with torch blocked: the median of ``repeat`` runs."""
    totals = []
    for _ in range(repeat):
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", BLOCK_TORCH + "import codemods.lint"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        line = [ln for ln in run.stderr.splitlines() if ln.rstrip().endswith("| codemods.lint")]
        totals.append(int(line[-1].split("|")[1]) / 1000)
    print(f"import codemods.lint (torch blocked): {statistics.median(totals):.0f} ms")


def main(argv: list[str]) -> int:
    """Run every measurement and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=None)
    parser.add_argument("--copies", type=int, default=10, help="hit-dense tree size")
    args = parser.parse_args(argv)
    tree_speed(args.tree or torch_tree(), args.repeat)
    print()
    dense_speed(args.copies)
    print()
    import_time(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
