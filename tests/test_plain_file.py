"""``fsdp-lint``'s answer for files that name nothing legacy (codemods/cli/plain_file.py).

It may answer only where the whole lint would print and return the same: each case runs
``fsdp-lint`` with it and without it, in this process, on the same files, and compares
them; and says whether the answer was the short one. A run of ``fsdp-lint`` as
pre-commit makes it, on such a file, loads none of the lint's machinery (checked in a
fresh process).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codemods import lint
from codemods.cli import plain_file

ROOT = Path(__file__).resolve().parents[1]

PLAIN = "def add(a, b):\n    return a + b  # noqa: E501\n\n\nclass Point:\n    x: int = 0\n"
LEGACY = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
#: A hook rule's method on a class whose Lightning base is in another file.
HOOK = "from base import Base\n\n\nclass Model(Base):\n    def configure_sharded_model(self): ...\n"
BASE = "from lightning.pytorch import LightningModule\n\n\nclass Base(LightningModule): ...\n"


@pytest.mark.parametrize(
    ("files", "argv", "short"),
    [
        ({"util.py": PLAIN}, ["util.py"], True),
        ({"util.py": PLAIN}, ["--force-exclude", "util.py"], True),
        ({"util.py": PLAIN}, ["--quiet", "--exit-zero", "util.py"], True),
        ({"util.py": PLAIN}, ["-s", "util.py"], True),
        ({"pkg/util.pyi": "def add(a: int) -> int: ...\n"}, ["pkg/util.pyi"], True),
        ({"empty.py": ""}, ["empty.py"], True),
        ({"c.py": "# compatible with lightningly fast code\nx = 1\n"}, ["c.py"], True),
        # A finding possible: the lint decides.
        ({"train.py": LEGACY}, ["train.py"], False),
        ({"notes.py": "# we left torch behind\nx = 1\n"}, ["notes.py"], False),
        ({"c.py": "import compat\n"}, ["c.py"], False),
        ({"p.py": "def p(m, recurse, unwrapped_params):\n    return 1\n"}, ["p.py"], False),
        # Not Python that parses, not one file, not the default report, left out.
        ({"bad.py": "def f(:\n"}, ["bad.py"], False),
        ({"nul.py": "x = 1\x00\n"}, ["nul.py"], False),
        ({"a.py": PLAIN, "b.py": PLAIN}, ["--force-exclude", "a.py", "b.py"], True),
        ({"a.py": PLAIN, "b.py": LEGACY}, ["a.py", "b.py"], False),
        # With several files, a hook's name sends the lint through the project's classes.
        ({"base.py": BASE, "m.py": HOOK}, ["m.py"], True),
        ({"base.py": BASE, "m.py": HOOK, "a.py": PLAIN}, ["a.py", "m.py"], False),
        ({"a.py": PLAIN, "b.py": "strategy = 'fast'\n"}, ["a.py", "b.py"], True),
        ({"a.py": PLAIN, "b.py": "x = 1\x00\n"}, ["a.py", "b.py"], False),
        ({"util.py": PLAIN}, ["--statistics", "util.py"], False),
        ({"util.py": PLAIN}, ["--fix", "util.py"], False),
        ({"util.py": PLAIN}, ["--verbose", "util.py"], False),
        ({"util.py": PLAIN}, ["--select", "FSDP1", "util.py"], False),
        ({"util.py": PLAIN}, ["missing.py"], False),
        ({"util.txt": PLAIN}, ["util.txt"], False),
        ({".venv/site.py": PLAIN}, ["--force-exclude", ".venv/site.py"], False),
        ({"util.py": PLAIN}, [], False),
        # A configuration at or above the file: the lint reads it.
        (
            {"pyproject.toml": '[tool.fsdp-compat]\nexclude = ["gen"]\n', "src/util.py": PLAIN},
            ["src/util.py"],
            False,
        ),
        (
            {"pyproject.toml": "[project]\nname = 'x'\n", "src/util.py": PLAIN},
            ["src/util.py"],
            True,
        ),
    ],
)
def test_it_answers_as_the_lint_does(tmp_path, monkeypatch, capsys, files, argv, short):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(text.encode())
    monkeypatch.chdir(tmp_path)
    assert (plain_file.settled(list(argv)) is not None) is short
    capsys.readouterr()
    answered = _run(lint.main, argv), capsys.readouterr()
    monkeypatch.setattr(lint, "settled", lambda argv: None)  # the whole lint
    linted = _run(lint.main, argv), capsys.readouterr()
    assert answered == linted
    if short:
        assert answered[0] == 0 and answered[1].err == ""


def _run(tool, argv: list[str]) -> int | str | None:
    try:
        return tool(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        return exc.code


def test_a_hook_on_a_plain_file_loads_none_of_the_lint(tmp_path):
    """As pre-commit runs it: the script's ``re``, then the answer, and nothing heavier."""
    (tmp_path / "util.py").write_text(PLAIN)
    code = (
        f"import re, sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "sys.argv = ['fsdp-lint', '--force-exclude', 'util.py']\n"
        "from codemods.lint import main\n"
        "status = main()\n"
        "print('MODULES', status, ' '.join(sorted(sys.modules)))\n"
    )
    # -S: no site-packages, so no editable install's import hook loads pathlib first.
    run = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    output, _, modules = run.stdout.partition("MODULES ")
    status, *loaded = modules.split()
    assert (output, status) == ("All checks passed!\n", "0")
    heavy = {
        "typing",
        "pathlib",
        "packaging",
        "ast",
        "codemods.cli.options",
        "codemods.registry.model",
        "importlib.util",  # the bytecode cache is read with the import system's own helpers
        "contextlib",  # codemods.startup's long_lived is a plain class
        "symtable",  # the syntax check calls the C function under it (and no weakref)
        "weakref",
        "importlib",  # the package: the lint's modules are loaded with it, the answer is not
    }
    assert heavy.isdisjoint(loaded), sorted(heavy.intersection(loaded))
