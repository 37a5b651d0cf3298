"""``python -m compat SCRIPT``: the script runs as under ``python SCRIPT``, compat installed.

Each test runs a small script both ways and compares what the script sees (argv,
``__main__``, ``sys.path[0]``), the exit code and the traceback, and checks that the
processes the script starts (a subprocess, a ``multiprocessing`` spawn child) have the
drop-in too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Every test starts Python processes that import torch: seconds each.
pytestmark = pytest.mark.slow

_SHOW = """\
import json, sys
print(json.dumps({
    "argv": sys.argv, "name": __name__, "file": __file__, "path0": sys.path[0],
    "spec": getattr(__spec__, "name", None), "main": sys.modules["__main__"].__dict__ is globals(),
    "package": __package__,
}))
"""


def run(args: list[str], cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in (ROOT, path) if p)
    environment.pop("FSDP_COMPAT_INSTALL", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_script_sees_what_it_sees_under_python(tmp_path):
    write(tmp_path, "sub/show.py", _SHOW)
    native = run(["sub/show.py", "a", "--b", "-m"], tmp_path)
    dropin = run(["-m", "compat", "sub/show.py", "a", "--b", "-m"], tmp_path)
    assert native.returncode == dropin.returncode == 0, dropin.stderr
    assert dropin.stdout == native.stdout


def test_a_module_sees_what_it_sees_under_python_m(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/show.py", _SHOW)
    native = run(["-m", "pkg.show", "x"], tmp_path)
    dropin = run(["-m", "compat", "-m", "pkg.show", "x"], tmp_path)
    assert native.returncode == dropin.returncode == 0, dropin.stderr
    assert dropin.stdout == native.stdout


@pytest.mark.parametrize(
    ("body", "code"),
    [("import sys\nsys.exit(3)\n", 3), ("raise SystemExit('bye')\n", 1), ("pass\n", 0)],
)
def test_the_exit_code_is_the_scripts(tmp_path, body, code):
    write(tmp_path, "s.py", body)
    native, dropin = run(["s.py"], tmp_path), run(["-m", "compat", "s.py"], tmp_path)
    assert native.returncode == dropin.returncode == code
    assert native.stderr == dropin.stderr


def test_a_traceback_starts_at_the_users_line(tmp_path):
    write(tmp_path, "boom.py", "def f():\n    raise ValueError('boom')\n\nf()\n")
    native, dropin = run(["boom.py"], tmp_path), run(["-m", "compat", "boom.py"], tmp_path)
    assert native.returncode == dropin.returncode == 1
    assert dropin.stderr == native.stderr
    assert dropin.stderr.splitlines()[1].endswith('boom.py", line 4, in <module>')


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["missing.py"], "can't open file", 2),
        (["-m", "no_such_module"], "No module named no_such_module", 1),
        ([], "usage: python -m compat", 2),
        (["--nope"], "unknown option --nope", 2),
    ],
)
def test_bad_command_lines(tmp_path, args, message, code):
    result = run(["-m", "compat", *args], tmp_path)
    assert result.returncode == code and message in result.stderr


_LEGACY_IN_CHILDREN = """\
import multiprocessing
import subprocess
import sys

from torch.distributed.fsdp.wrap import default_auto_wrap_policy


class Shape:  # pickled by reference to __main__, as under `python script.py`
    sides = 4


def child(shape):
    from torch.distributed.fsdp.wrap import default_auto_wrap_policy

    return default_auto_wrap_policy.__name__, shape.sides


if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(*pool.apply(child, (Shape(),)))
    command = "import torch.distributed.fsdp.wrap as w; print(w.default_auto_wrap_policy.__name__)"
    child = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True)
    print(child.stdout, end="")
"""


def test_processes_the_script_starts_have_the_drop_in(tmp_path):
    write(tmp_path, "legacy.py", _LEGACY_IN_CHILDREN)
    result = run(["-m", "compat", "legacy.py"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["_default_auto_wrap_policy", "4", "_default_auto_wrap_policy"]
    # Each process warns at the script's own import line.
    assert result.stderr.count("legacy.py:5: FSDPDeprecationWarning") == 2
    native = run(["legacy.py"], tmp_path)
    assert (
        native.returncode == 1 and "cannot import name 'default_auto_wrap_policy'" in native.stderr
    )


def test_the_sitecustomize_it_shadows_still_runs(tmp_path):
    write(tmp_path, "site/sitecustomize.py", "import builtins\nbuiltins.SITE_RAN = True\n")
    script = """\
        import subprocess, sys
        code = "import builtins, torch.distributed.fsdp.wrap as w; " + (
            "print(builtins.SITE_RAN, hasattr(w, 'default_auto_wrap_policy'))"
        )
        print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
        """
    write(tmp_path, "s.py", script)
    result = run(["-m", "compat", "s.py"], tmp_path, path=tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]
