"""Every figure of issue 44's table beside its yardstick, measured in one run.

    python benchmarks/goals.py [--repeat N] [--corpus DIR] [--tree DIR] [--tests]
                               [--installed] [--only TEXT] [--before DIR] [--readme]

Each row pairs a command with its yardstick; the two run as fresh processes, one after
the other, ``--repeat`` times (after one untimed warm-up each), and the row prints the
medians of wall time and of CPU time (user + system, the process and its children) and
the ratios of the medians against the goal:

- ``fsdp-lint`` on one legacy file (what a pre-commit hook or an editor pays per call),
  in a folder with no project file and in one whose ``pyproject.toml`` declares its
  releases, against a bare ``python -c pass`` (goal: 2.5x); and, with ``--installed``,
  as pre-commit runs it: the ``fsdp-lint-hook`` script of a fresh environment where the
  project is installed, not editable (an editable install's import hook makes every
  start of this environment's Python, the yardstick's too, about 10 ms slower), on the
  legacy file (in a folder with no project file, and in ``examples/legacy``, whose
  ``pyproject.toml`` each call reads) and on a module that names nothing legacy (most
  of a hook's calls), answered by its resident server (whose own CPU time a line below
  the table gives: benchmarks/resident_rows.py); on the legacy file with no server (a
  session's first call), and by the ``fsdp-lint`` console script; beside them, shown
  against no goal, the floor of a first call: the same Python importing ``ast`` and
  parsing the legacy file, which any lint built on ``ast`` pays;
- ``fsdp-lint`` on the installed torch package's source tree (or ``--tree``) against
  ``ruff check --select UP --no-cache`` (goal: 2x);
- ``fsdp-lint`` on the realistic 60-file tree of ``tests/realistic_tree.py`` and on a
  folder of real legacy files (``--corpus``, kept outside the repository) against one
  Python process that only ``ast.parse``s every file (goal: 2x in one process: judged
  on the CPU time of ``--jobs 1``; the default run, a worker per core, is shown below
  it, its CPU the workers' and the main process's together);
- ``python -m compat`` running a script that imports nothing, against ``python`` running
  it (goal: a few milliseconds);
- with ``--tests``, the README's test command (``python -m pytest``) once, against the
  goal of 6 minutes.

With ``--before DIR`` (a source tree of this project, an earlier commit's ``git
archive`` say), each round also runs every command with that tree first on
``PYTHONPATH``, and the table adds its medians: the change side by side with the same
yardsticks.

The machines here are shared and noisy: only ratios taken in one such run mean anything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import resident_rows  # noqa: E402
from hit_dense_tree import ENV, PARSE_EVERY_FILE, ROOT, ruff, write_tree  # noqa: E402
from tool_speed import torch_tree  # noqa: E402

PYTHON = sys.executable


def first_on_path(tree: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment ``env`` (default: this one) with ``tree`` first on ``PYTHONPATH``.

    Every command runs in a scratch folder: ``python -m`` puts the working directory
    before ``PYTHONPATH``, and in the checkout it would import the checkout.
    """
    base = ENV if env is None else env
    return {
        **base,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), base.get("PYTHONPATH")])),
    }


def before_environment(env: dict[str, str] | None, tree: Path, scratch: Path) -> dict[str, str]:
    """A row's environment for the earlier source ``tree`` (``--before``).

    The row's own environment (the resident server's switch and idle time kept) with
    ``tree`` first on ``PYTHONPATH``; the earlier tree's server, if any, in a folder of its
    own, so the server line counts this tree's CPU time alone.
    """
    earlier = first_on_path(tree, env)
    if env is not None and "FSDP_COMPAT_RUNTIME_DIR" in env:
        earlier = resident_rows.environment(scratch, earlier, resident_rows.BEFORE_FOLDER)
    return earlier


AFTER = first_on_path(ROOT)
LINT = [PYTHON, "-m", "codemods.lint", "--exit-zero", "--quiet"]
#: The example's file that a hook sees: legacy code with findings.
HOOK_FILE = ROOT / "examples" / "legacy" / "fairscale_script.py"
#: What a hook sees most often: a module that names nothing legacy (224 lines of ours).
PLAIN_FILE = ROOT / "codemods" / "batch" / "files.py"
#: The floor of a first call: what any ``ast``-based lint of the file must do.
FLOOR = "import ast, sys; ast.parse(open(sys.argv[1], 'rb').read())"


@dataclass
class Row:
    """A command, its yardstick and the goal for their ratio.

    Attributes:
        label: What the command measures.
        command: The command.
        yardstick_label: What it is measured against.
        yardstick: The yardstick's command.
        goal: The ratio of wall times the goal allows (``None``: a difference in ms).
        cwd: Where both run (None: the scratch folder).
        env: Their environment (None: this checkout first on ``PYTHONPATH``).
        on_cpu: The goal is of CPU time (one process's worth), not of wall time.
        info: Shown beside a judged row, against no goal of its own.
    """

    label: str
    command: list[str]
    yardstick_label: str
    yardstick: list[str]
    goal: float | None
    cwd: Path | None = None
    times: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    env: dict[str, str] | None = None
    on_cpu: bool = False
    info: bool = False


def timed(
    command: Sequence[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, with children) of one run of ``command``."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env or AFTER, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    return elapsed, usage.ru_utime + usage.ru_stime


def installed(scratch: Path) -> Path:
    """A fresh environment with this checkout installed as pre-commit installs it.

    pip builds and installs the project (not editable) into a folder that a new
    virtual environment reads first, then this environment's packages (libcst,
    packaging): its ``bin/fsdp-lint`` is the script pre-commit runs. Returns ``bin``.
    """
    venv, target = scratch / "venv", scratch / "installed"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [PYTHON, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(target), str(ROOT)], check=True, cwd=scratch)
    bin_dir = venv / "bin"
    python = bin_dir / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    packages = subprocess.run(
        [
            PYTHON,
            "-c",
            "import libcst, os; print(os.path.dirname(os.path.dirname(libcst.__file__)))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A path a .pth names is only added: the editable install's own .pth there is not run.
    Path(site, "fsdp_compat_installed.pth").write_text(f"{target}\n{packages}\n", encoding="utf-8")
    for name in ("fsdp-lint", "fsdp-lint-hook"):
        script = (target / "bin" / name).read_text(encoding="utf-8").split("\n", 1)[1]
        (bin_dir / name).write_text(f"#!{python}\n{script}", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    env = {name: value for name, value in ENV.items() if name != "PYTHONPATH"}
    subprocess.run([str(python), "-m", "compileall", "-q", str(target)], env=env, check=True)
    return bin_dir


def rows(
    scratch: Path, tree: Path, corpus: Path | None, installed_bin: Path | None = None
) -> list[Row]:
    """The rows to measure; the hook's folders and the realistic tree go in ``scratch``."""
    bare = scratch / "bare"
    bare.mkdir()
    shutil.copy(HOOK_FILE, bare / HOOK_FILE.name)
    shutil.copy(PLAIN_FILE, bare / PLAIN_FILE.name)
    realistic = scratch / "realistic"
    write_tree(realistic, 60, 0)
    noop = scratch / "noop.py"
    noop.write_text("pass\n", encoding="utf-8")
    checker = ruff() or "ruff"
    found = [
        Row(
            "fsdp-lint, 1 file, no project file",
            [*LINT, HOOK_FILE.name],
            "python -c pass",
            [PYTHON, "-c", "pass"],
            2.5,
            bare,
        ),
        Row(
            "fsdp-lint, 1 file of examples/legacy",
            [*LINT, str(HOOK_FILE)],
            "python -c pass",
            [PYTHON, "-c", "pass"],
            2.5,
        ),
        Row(
            f"fsdp-lint, torch tree ({_count(tree)} files)",
            [*LINT, str(tree)],
            "ruff check --select UP",
            [checker, "check", "--select", "UP", "--no-cache", "--exit-zero", "-q", str(tree)],
            2.0,
        ),
        *_one_process(f"realistic tree ({_count(realistic)} files)", realistic),
    ]
    if installed_bin is not None:
        plain = {name: value for name, value in ENV.items() if name != "PYTHONPATH"}
        resident = resident_rows.environment(scratch, plain)
        hook, console = str(installed_bin / "fsdp-lint-hook"), str(installed_bin / "fsdp-lint")
        legacy, off = HOOK_FILE.name, "FSDP_COMPAT_RESIDENT"
        found[2:2] = [
            Row(
                label,
                [script, "--force-exclude", file],
                "its python -c pass",
                [str(installed_bin / "python"), "-c", "pass"],
                2.5,
                bare,
                env=env,
            )
            for label, script, file, env in (
                ("fsdp-lint-hook, 1 file, installed (pre-commit)", hook, legacy, resident),
                ("fsdp-lint-hook, 1 plain file, installed", hook, PLAIN_FILE.name, resident),
                ("fsdp-lint-hook, 1 file, no server", hook, legacy, {**plain, off: "0"}),
                ("fsdp-lint (console script), 1 file", console, legacy, plain),
            )
        ]
        # The least any lint on `ast` pays on the first call: its import and the parse.
        found.insert(
            5,  # after the call with no server
            Row(
                "floor: import ast, parse the file, installed",
                [str(installed_bin / "python"), "-c", FLOOR, legacy],
                "its python -c pass",
                [str(installed_bin / "python"), "-c", "pass"],
                2.5,
                bare,
                env=plain,
                info=True,
            ),
        )
        # A repository's file sits in a project: its pyproject.toml is read at each call.
        found.insert(
            3,
            Row(
                "fsdp-lint-hook, 1 file of examples/legacy, installed",
                [hook, "--force-exclude", legacy],
                "its python -c pass",
                [str(installed_bin / "python"), "-c", "pass"],
                2.5,
                HOOK_FILE.parent,
                env=resident,
            ),
        )
    if corpus is not None:
        found += _one_process(f"real legacy files ({_count(corpus)})", corpus)
    # `python -m` itself costs a start: runpy and what it loads (importlib.util,
    # contextlib...), which a script that imports torch loads anyway. A runner that only
    # runs the script shows that part apart from compat's own.
    (scratch / "run_script.py").write_text(RUN_SCRIPT, encoding="utf-8")
    # What a training script pays: torch loads these first (its own import is seconds of
    # noise), so compat's share is what it adds to a script that imports them.
    like_torch = scratch / "like_torch.py"
    like_torch.write_text(f"import {', '.join(TORCH_LOADS)}\n", encoding="utf-8")
    pythons = [(PYTHON, "", None)]
    if installed_bin is not None:
        plain = {name: value for name, value in ENV.items() if name != "PYTHONPATH"}
        pythons.append((str(installed_bin / "python"), ", installed", plain))
    for python, where, env in pythons:
        compat = [python, "-m", "compat", str(noop)]
        found += [
            Row(
                f"python -m compat{where}, a script importing nothing",
                compat,
                "python, the same script",
                [python, str(noop)],
                None,
                env=env,
            ),
            Row(
                f"python -m compat{where}, the same",
                compat,
                "python -m, a bare runner",
                [python, "-m", "run_script", str(noop)],
                None,
                env=env,
            ),
            Row(
                f"python -m compat{where}, a script importing what torch does",
                [python, "-m", "compat", str(like_torch)],
                "python, the same script",
                [python, str(like_torch)],
                None,
                env=env,
            ),
        ]
    return found


def _one_process(what: str, tree: Path) -> list[Row]:
    """The goal's row, ``--jobs 1`` against one process parsing, and the default run's.

    The default run (a worker per core) is shown beside it: its wall time is what a
    user waits, its CPU the workers' and this process's together.
    """
    parse = [PYTHON, "-c", PARSE_EVERY_FILE, str(tree)]
    one, every = [*LINT, "--jobs", "1", str(tree)], [*LINT, str(tree)]
    return [
        Row(f"fsdp-lint --jobs 1, {what}", one, "ast.parse every file", parse, 2.0, on_cpu=True),
        Row(
            f"fsdp-lint, {what}", every, "ast.parse every file", parse, 2.0, on_cpu=True, info=True
        ),
    ]


#: Standard modules that ``import torch`` loads (2.13: all of them), among them what
#: ``python -m`` and compat need.
TORCH_LOADS = ("runpy", "pkgutil", "typing", "re", "pathlib", "inspect", "dataclasses")
#: The yardstick of ``python -m``'s own cost: a module that only runs the script.
RUN_SCRIPT = (
    "import runpy, sys\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def _count(tree: Path) -> int:
    return sum(1 for p in tree.rglob("*") if p.suffix in (".py", ".pyi") and p.is_file())


def measure(found: list[Row], repeat: int, scratch: Path, before: Path | None = None) -> None:
    """Run every row's pair ``repeat`` times, interleaved, after one warm-up each.

    With ``before``, also each row's command with that source tree first on the path.
    """
    earlier: dict[int, dict[str, str]] = {}
    for index, row in enumerate(found):
        row.cwd = row.cwd or scratch
        row.times = {"command": [], "yardstick": [], "before": []}
        timed(row.command, row.cwd, row.env)
        timed(row.yardstick, row.cwd, row.env)
        if before is not None:
            earlier[index] = before_environment(row.env, before, scratch)
            timed(row.command, row.cwd, earlier[index])
    for _ in range(repeat):
        for index, row in enumerate(found):
            row.times["command"].append(timed(row.command, row.cwd, row.env))
            row.times["yardstick"].append(timed(row.yardstick, row.cwd, row.env))
            if index in earlier:
                row.times["before"].append(timed(row.command, row.cwd, earlier[index]))


def report(found: list[Row], repeat: int) -> str:
    """The table: medians of wall and CPU time, the ratios, and whether the goal is met."""
    lines = [
        f"medians of {repeat} interleaved runs; wall s (CPU s)",
        f"{'what':<46}{'wall':>8}{'(CPU)':>8}  {'yardstick':<24}{'wall':>8}{'(CPU)':>8}"
        f"{'ratio':>8}{'(CPU)':>7}  goal",
    ]
    before = any(row.times.get("before") for row in found)
    if before:
        lines[1] += f"{'before':>10}{'(CPU)':>8}{'ratio':>8}"
    for row in found:
        wall, cpu = (statistics.median(t) for t in zip(*row.times["command"]))
        base_wall, base_cpu = (statistics.median(t) for t in zip(*row.times["yardstick"]))
        if row.goal is None:
            extra = (wall - base_wall) * 1000
            ratio = f"{extra:+7.0f} ms"
            goal = "a few ms"
        else:
            ratio = f"{wall / base_wall:>7.2f}x{cpu / base_cpu:>6.2f}x"
            judged = cpu / base_cpu if row.on_cpu else wall / base_wall
            met = "met" if judged <= row.goal else "NOT met"
            goal = "-" if row.info else f"{row.goal}x {'CPU ' if row.on_cpu else ''}{met}"
        line = (
            f"{row.label:<46}{wall:>8.3f}{f'({cpu:.3f})':>8}  {row.yardstick_label:<24}"
            f"{base_wall:>8.3f}{f'({base_cpu:.3f})':>8} {ratio}  {goal:<12}"
        )
        if before:
            old_wall, old_cpu = (statistics.median(t) for t in zip(*row.times["before"]))
            line += f"{old_wall:>10.3f}{f'({old_cpu:.3f})':>8}{old_wall / base_wall:>7.2f}x"
        lines.append(line)
    return "\n".join(lines)


def test_command() -> str:
    """The README's test command, once, in this checkout, against the goal of 6 minutes."""
    wall, cpu = timed([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider"], ROOT)
    met = "met" if wall <= 360 else "NOT met"
    return f"python -m pytest: {wall:.0f} s wall, {cpu:.0f} s CPU (goal 360 s: {met})"


def main(argv: list[str] | None = None) -> int:
    """Measure every row and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs per row")
    parser.add_argument("--tree", type=Path, default=None, help="default: torch's sources")
    parser.add_argument("--corpus", type=Path, default=None, help="real legacy files")
    parser.add_argument("--tests", action="store_true", help="also time the test command")
    parser.add_argument("--only", default="", help="only the rows whose label holds this")
    parser.add_argument("--before", type=Path, default=None, help="an earlier source tree")
    parser.add_argument(
        "--installed", action="store_true", help="also the hook as installed (pre-commit's)"
    )
    parser.add_argument("--readme", action="store_true", help="also write the table into README.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        bin_dir = installed(Path(scratch)) if args.installed else None
        found = rows(Path(scratch), args.tree or torch_tree(), args.corpus, bin_dir)
        found = [row for row in found if args.only in row.label]
        served = [row for row in found if "FSDP_COMPAT_RUNTIME_DIR" in (row.env or {})]
        if served:
            started = resident_rows.start(served[0].command, served[0].cwd, served[0].env)
        try:
            measure(found, args.repeat, Path(scratch), args.before)
            table = report(found, args.repeat)
            if served:
                requests = len(served) * (args.repeat + 1)
                folder = Path(scratch, resident_rows.FOLDER)
                table += "\n" + resident_rows.server_note(folder, started, requests)
        finally:
            for name in (resident_rows.FOLDER, resident_rows.BEFORE_FOLDER):
                resident_rows.stop(Path(scratch, name))
        print(table)
    if args.tests:
        table += "\n" + test_command()
        print(table.rpartition("\n")[2])
    if args.readme:
        import readme_table

        command = ["python", "benchmarks/goals.py", *(argv if argv is not None else sys.argv[1:])]
        readme_table.write(ROOT / "README.md", table, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
