"""A file only a newer Python parses is no syntax error, and type parameters need no libcst.

Python 3.12's type parameters are decided by blanking them out
(:mod:`codemods.batch.type_parameters`); anything else this Python refuses goes to
libcst's grammar, as before. Both ways give libcst's answer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import libcst
import pytest

from codemods.batch import type_parameters
from codemods.batch.syntax_errors import newer_python, syntax_error
from tests.checkout_env import checkout_env

ROOT = Path(__file__).resolve().parents[1]


def _libcst_parses(source: bytes) -> bool:
    try:
        libcst.parse_module(source)
    except Exception:  # noqa: BLE001 - any failure means it does not parse
        return False
    return True


@pytest.mark.parametrize(
    ("source", "blanked"),
    [
        (b"def first[T](items: list[T]) -> T:\n    return items[0]\n", True),
        (b"class Box[T: (int, str)](Base):\n    item: T\n", True),
        (b"type Pair[K, V] = tuple[K, V]\ntype Name = str\n", True),
        (b"def f[\n    T: dict[str, int],\n    *Ts,\n    **P,\n](x: T): ...\n", True),
        (b"class C:\n    def m[T](self, x: T) -> T:\n        return x\n", True),
        # a list with an error of its own, a string inside, an error elsewhere
        (b"def f[T: ](x): pass\n", False),
        (b"def f[T: 'Forward'](x): pass\n", False),
        (b"def f[T](x): pass\nprint 'py2'\n", True),
        # not type parameters at all
        (b"print 'py2'\n", False),
        (b"x = (\n", False),
    ],
)
def test_the_answer_is_libcsts(source, blanked):
    assert (type_parameters.without(source) is not None) is blanked
    if sys.version_info < (3, 12):
        assert syntax_error(source) is not None
        assert newer_python(source) is _libcst_parses(source)


def test_blanking_keeps_every_position():
    source = b"def f[\n    T,\n](x: T) -> T:\n    return x\n"
    blanked = type_parameters.without(source)
    assert blanked is not None and len(blanked) == len(source)
    assert blanked.splitlines() == [b"def f ", b"      ", b" (x: T) -> T:", b"    return x"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses type parameters")
def test_a_run_over_a_newer_file_reports_nothing_and_loads_no_libcst(tmp_path):
    (tmp_path / "generic.py").write_text(
        "def first[T](items: list[T]) -> T:\n    return items[0]\n"
    )
    (tmp_path / "plain.py").write_text("import os\n")
    script = (
        "import sys\n"
        "from codemods import lint\n"
        f"code = lint.main([{str(tmp_path)!r}])\n"
        "assert 'libcst._nodes.base' not in sys.modules, 'libcst loaded'\n"
        "sys.exit(code)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=checkout_env(),
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "All checks passed!" in run.stdout


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameters are Python 3.12's")
@pytest.mark.parametrize(
    "source",
    [
        "def first[T](items: list[T]) -> T:\n    return items[0]\n",
        "class Box[T]:\n    item: T\n",
        "class Box[T](Base):\n    pass\n",
        "type Pair[K] = tuple[K, K]\n",
    ],
)
def test_the_ast_scopes_leave_type_parameters_to_libcst(source):
    """A type parameter's scope (a class's too) is not modelled: libcst decides the file."""
    import ast

    from codemods.astlint.detector import Undecided
    from codemods.astlint.scopes import Names

    with pytest.raises(Undecided, match="type parameters"):
        Names(ast.parse(source))
