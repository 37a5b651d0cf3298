"""``python -m compat SCRIPT``: the script runs as under ``python SCRIPT``, compat installed.

Each test runs a small script both ways and compares what the script sees (argv,
``__main__``, ``sys.path[0]``), the exit code and the traceback, and checks that the
processes the script starts (a subprocess, a ``multiprocessing`` spawn child) have the
drop-in too. ``-c CODE`` and ``-`` (stdin) are compared with ``python -c`` and
``python -``. The console script ``fsdp-compat-run`` runs through a wrapper written
from ``pyproject.toml``'s entry point, as pip writes it, also where a ``compat.py`` in
the working directory replaces ``python -m compat``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import console_scripts

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


def run(
    args: list[str],
    cwd: Path,
    path: Path | None = None,
    stdin: str | None = None,
    first: str | None = None,
) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in (first, ROOT, path) if p)
    environment.pop("FSDP_COMPAT_INSTALL", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def console_script(folder: Path) -> Path:
    return console_scripts.console_script(folder, "fsdp-compat-run")


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
    [
        ("import sys\nsys.exit(3)\n", 3),
        ("raise SystemExit('bye')\n", 1),
        ("pass\n", 0),
        ("def f(:\n", 1),
    ],
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
        (["-c"], "-c needs a program", 2),
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


_SHOW_CODE = """\
import json, sys
print(json.dumps({
    "argv": sys.argv, "name": __name__, "path0": sys.path[0], "file": globals().get("__file__"),
    "spec": __spec__, "loader": repr(__loader__), "package": __package__,
    "main": sys.modules["__main__"].__dict__ is globals(), "names": sorted(globals()),
}))
"""


@pytest.mark.parametrize("how", ["-m compat", "console script"])
def test_c_runs_code_as_python_c_does(tmp_path, how):
    command = ["-m", "compat"] if how == "-m compat" else [str(console_script(tmp_path))]
    native = run(["-c", _SHOW_CODE, "a", "-b"], tmp_path)
    dropin = run([*command, "-c", _SHOW_CODE, "a", "-b"], tmp_path)
    assert native.returncode == dropin.returncode == 0, dropin.stderr
    assert dropin.stdout == native.stdout


@pytest.mark.parametrize("how", ["-m compat", "console script"])
def test_dash_runs_stdin_as_python_dash_does(tmp_path, how):
    command = ["-m", "compat"] if how == "-m compat" else [str(console_script(tmp_path))]
    native = run(["-", "a"], tmp_path, stdin=_SHOW_CODE)
    dropin = run([*command, "-", "a"], tmp_path, stdin=_SHOW_CODE)
    assert native.returncode == dropin.returncode == 0, dropin.stderr
    assert dropin.stdout == native.stdout


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["-c", "def f():\n    raise ValueError('boom')\n\nf()\n"], None),
        (["-"], "import sys\nsys.exit(4)\n"),
        (["-"], "def f(:\n"),
        (["-c", "from torch.distributed.fsdp.wrap import default_auto_wrap_policy"], None),
    ],
)
def test_c_and_dash_fail_as_python_does(tmp_path, args, stdin):
    native, dropin = (
        run(args, tmp_path, stdin=stdin),
        run(["-m", "compat", *args], tmp_path, stdin=stdin),
    )
    if "default_auto_wrap_policy" in args[-1]:  # gone from torch; back under the drop-in
        assert native.returncode == 1 and "cannot import name" in native.stderr
        assert dropin.returncode == 0 and "<string>:1: FSDPDeprecationWarning" in dropin.stderr
        return
    assert native.returncode == dropin.returncode != 0
    assert dropin.stderr == native.stderr


def test_legacy_code_on_stdin_gets_the_drop_in(tmp_path):
    code = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy as p\nprint(p)\n"
    result = run([str(console_script(tmp_path)), "-"], tmp_path, stdin=code)
    assert result.returncode == 0 and "default_auto_wrap_policy" in result.stdout, result.stderr
    assert "<stdin>:1: FSDPDeprecationWarning" in result.stderr


_USERS_COMPAT = "print('the user compat module ran')\n"


@pytest.mark.parametrize("shadow", ["compat.py", "compat/__init__.py"])
@pytest.mark.parametrize("pythonpath_first", [None, "."])
def test_a_local_compat_module_cannot_shadow_the_console_script(tmp_path, shadow, pythonpath_first):
    write(tmp_path, shadow, _USERS_COMPAT)
    write(tmp_path, "show.py", _SHOW)
    # What the console script is for: python -m compat runs the user's module instead.
    hijacked = run(["-m", "compat", "show.py", "x"], tmp_path, first=pythonpath_first)
    assert "the user compat module ran" in hijacked.stdout
    if shadow == "compat.py":  # and show.py never runs (a package fails for lack of __main__)
        assert hijacked.returncode == 0 and '"argv"' not in hijacked.stdout

    native = run(["show.py", "x"], tmp_path, first=pythonpath_first)
    script = console_script(tmp_path)
    dropin = run([str(script), "show.py", "x"], tmp_path, first=pythonpath_first)
    assert native.returncode == dropin.returncode == 0, dropin.stderr
    assert dropin.stdout == native.stdout
    assert "the user compat module ran" not in dropin.stdout
    expected = os.path.join("compat", "") if shadow.startswith("compat/") else "compat.py"
    assert (
        f"fsdp-compat-run: warning: {expected.rstrip(os.sep)} is a module named `compat` "
        "that is not fsdp-compat's" in dropin.stderr
    )


@pytest.mark.parametrize("how", ["beside the script", "-P"])
def test_python_m_compat_says_when_a_compat_module_is_near(tmp_path, how):
    if how == "-P" and sys.version_info < (3, 11):
        pytest.skip("-P (the working directory not searched) is Python 3.11's")
    folder = tmp_path / "scripts" if how == "beside the script" else tmp_path
    write(folder, "compat.py", _USERS_COMPAT)
    write(folder, "show.py", _SHOW)
    script = os.path.relpath(folder / "show.py", tmp_path)
    # Where fsdp-compat's __main__ runs after all: a compat.py only beside the script, or
    # -P, which leaves the working directory out of sys.path.
    flags = ["-P"] if how == "-P" else []
    result = run([*flags, "-m", "compat", script], tmp_path)
    assert result.returncode == 0, result.stderr
    expected = os.path.relpath(folder / "compat.py", tmp_path)
    assert f"python -m compat: warning: {expected} is a module named `compat`" in result.stderr
    assert "Use `fsdp-compat-run SCRIPT`" in result.stderr


def test_no_warning_without_a_compat_module(tmp_path):
    write(tmp_path, "show.py", _SHOW)
    result = run([str(console_script(tmp_path)), "show.py"], tmp_path)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr


def test_children_of_the_console_script_get_the_drop_in_despite_a_local_compat(tmp_path):
    write(tmp_path, "compat.py", _USERS_COMPAT)
    write(tmp_path, "legacy.py", _LEGACY_IN_CHILDREN)
    result = run([str(console_script(tmp_path)), "legacy.py"], tmp_path, first=".")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["_default_auto_wrap_policy", "4", "_default_auto_wrap_policy"]


def test_the_console_script_without_torch_says_what_to_install(run_without_torch):
    code = (
        "sys.argv = ['fsdp-compat-run', 'train.py']\n"
        "from fsdp_compat_run import main\n"
        "sys.exit(main())\n"
    )
    stderr = run_without_torch(code, expect_failure=True)
    assert stderr.startswith("fsdp-compat-run: cannot import fsdp-compat's compat package")
    assert "pip install torch" in stderr and "Traceback" not in stderr


def test_the_console_script_refuses_when_another_compat_was_imported(tmp_path):
    write(tmp_path, "compat.py", _USERS_COMPAT)
    code = (
        "import sys\n"
        "import compat\n"  # the user's, from the working directory ("" on sys.path)
        "sys.argv = ['fsdp-compat-run', 'train.py']\n"
        "from fsdp_compat_run import main\n"
        "sys.exit(main())\n"
    )
    result = run(["-c", code], tmp_path)
    assert result.returncode == 2 and "the user compat module ran" in result.stdout
    assert "another module named compat was imported already" in result.stderr
    assert str(tmp_path / "compat.py") in result.stderr
