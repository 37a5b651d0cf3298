"""``may_refuse``: no module the symbol table refuses after ``ast`` parsed it goes unasked."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from codemods.batch.syntax_errors import SyntaxCheck, compiles
from codemods.lint import main
from codemods.screen.prefilter import screen
from codemods.settings import Settings
from codemods.syntax.symbol_table import CHECKED_UP_TO, may_refuse

#: One module per message of the symbol tables of Python 3.9 to 3.13 (each Python
#: refuses those of its own; the others parse, compile, or fail to parse there).
REFUSED = {
    "nonlocal at module level": "nonlocal x\n",
    "nonlocal without binding": "def f():\n    nonlocal x\n",
    "nonlocal in a class": "def f():\n    class C:\n        nonlocal y\n",
    "parameter and nonlocal": "def f(x):\n    def g(x):\n        nonlocal x\n",
    "parameter and global": "def f(x):\n    global x\n",
    "used before global": "def f():\n    print(x)\n    global x\n",
    "assigned before global": "def f():\n    x = 1\n    global x\n",
    "annotated global": "def f():\n    global x\n    x: int = 1\n",
    "annotated global in a class": "class C:\n    global x\n    x: int\n",
    "nonlocal and global": (
        "def f():\n    x = 1\n    def g():\n        global x\n        nonlocal x\n"
    ),
    "duplicate parameter": "def f(a, a):\n    pass\n",
    "duplicate keyword-only": "def f(a, *, a):\n    pass\n",
    "duplicate star": "def f(a, *a):\n    pass\n",
    "duplicate positional-only": "def f(a, /, a):\n    pass\n",
    "duplicate lambda parameter": "g = lambda a, a: 1\n",
    "star import in a function": "def f():\n    from os import *\n",
    "star import in a class": "class C:\n    from os import *\n",
    "yield in a list comprehension": "def f():\n    return [(yield x) for x in y]\n",
    "yield in a set comprehension": "def f():\n    return {(yield) for x in y}\n",
    "yield in a generator expression": "def f():\n    return ((yield x) for x in y)\n",
    "walrus in an iterable": "[x for x in (y := [1])]\n",
    "walrus in an inner iterable": "[i for i in range(3) for j in (i := [])]\n",
    "walrus in a class comprehension": "class C:\n    [(y := x) for x in range(3)]\n",
    "walrus rebinding a loop variable": "[(x := 1) for x in range(3)]\n",
    "walrus rebinding an inner loop variable": "[(j := 0) for i in range(3) for j in range(2)]\n",
    "yield in an annotation": "from __future__ import annotations\ndef f(x: (yield)): pass\n",
    "walrus in an annotation": "from __future__ import annotations\ndef f(x: (y := 1)): pass\n",
    "await in an annotation": "from __future__ import annotations\nasync def f(x: await y): pass\n",
    "a future that is not": "from __future__ import braces\n",
    "an unknown future": "from __future__ import nothing_here\n",
    "a late future": (
        '"""d"""\nfrom __future__ import division; import os; from __future__ import division\n'
    ),
    "duplicate type parameter": "def f[T, T](): pass\n",
    "duplicate class type parameter": "class C[T, T]: pass\n",
    "yield in a type alias": "type X = (yield)\n",
    "walrus in a type bound": "def f[T: (x := 1)](): pass\n",
}

#: Modules with none of those constructs (the symbol table takes each).
TAKEN = {
    "plain": "import torch\nmodel = torch.nn.Linear(2, 2)\n",
    "functions": "def f(a, /, b, *c, d, **e):\n    return [x for x in a if x]\n",
    "classes": "class C(Base):\n    x: int = 1\n    def m(self):\n        return super().m()\n",
    "futures first": '"""d"""\nfrom __future__ import annotations\n'
    "from __future__ import division\nx = 1\n",
    "star import at module level": "from os import *\n",
    "lambdas": "key = lambda a, b=1, *c, **d: (a, b)\n",
    "a generator, a walrus and an await outside comprehensions": (
        "def gen(xs):\n    for x in xs:\n        yield [y for y in x]\n"
        "async def run(f):\n    if (n := await f()) > 1:\n        return n\n"
    ),
}


def _parsed(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError:
        pytest.skip(f"Python {sys.version_info[:2]} does not parse it")


@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_module_is_asked_of_the_symbol_table(name: str) -> None:
    assert may_refuse(_parsed(REFUSED[name]))


@pytest.mark.parametrize("name", TAKEN)
def test_a_module_without_those_constructs_is_not(name: str) -> None:
    tree = _parsed(TAKEN[name])
    assert compiles(TAKEN[name].encode()) == (True, None)
    assert not may_refuse(tree) or sys.version_info[:2] > CHECKED_UP_TO


def test_this_pythons_refusals_are_all_covered() -> None:
    """Every module above that this Python's symbol table refuses is one ``may_refuse`` asks."""
    refused = [s for s in REFUSED.values() if _parses(s) and not compiles(s.encode())[0]]
    assert refused, "this Python refuses none of them: the table above is stale"
    assert all(may_refuse(ast.parse(source)) for source in refused)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


#: A file the text test lets through (``wrap.default_auto_wrap_policy``, the module
#: path's parts spelled) and the ``ast`` scan rules out: ``wrap`` is a local name.
SCREENED_OUT = (
    "import torch\ndistributed = fsdp = wrap = object()\nprint(wrap.default_auto_wrap_policy)\n"
)


@pytest.mark.parametrize("name", [None, "nonlocal at module level", "duplicate parameter"])
def test_the_scan_tells_the_syntax_check_its_tree(name: str | None) -> None:
    """The tree of a file the scan rules out answers for the symbol table where it can."""
    source = (SCREENED_OUT + (REFUSED[name] if name else "")).encode()
    syntax = SyntaxCheck("m.py", source, None)
    assert screen(source, Settings(), None, syntax) is None
    assert syntax._answer == (None if name else (True, None))  # symtable not asked yet
    assert syntax.compiles() is (name is None)
    assert (syntax.error() is None) is (name is None)


@pytest.mark.parametrize("name", [None, "nonlocal at module level", "duplicate parameter"])
def test_a_file_parsed_for_its_evidence_and_ruled_out_still_reports_a_refusal(
    name: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A declared top has the file parsed before the text test, which rules it out."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=2.0,<2.3"]\n', encoding="utf-8"
    )
    (tmp_path / "m.py").write_text("import torch\n" + (REFUSED[name] if name else ""), "utf-8")
    assert main([str(tmp_path / "m.py")]) == (1 if name else 0)
    out = capsys.readouterr().out
    assert ("invalid-syntax" in out) is (name is not None), out


LEGACY = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"


@pytest.mark.parametrize("name", ["nonlocal at module level", "walrus rebinding a loop variable"])
def test_a_file_with_findings_that_python_refuses_is_reported_and_left(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past the screen, the detector's tree answers for the symbol table, as it does above."""
    from codemods import migrate

    path = tmp_path / "m.py"
    path.write_text(LEGACY + REFUSED[name], encoding="utf-8")
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "m.py:2:" in out and "invalid-syntax" in out and "FSDP101" not in out, out
    assert migrate.main([str(path)]) != 0
    assert path.read_text(encoding="utf-8") == LEGACY + REFUSED[name]
    assert "cannot parse" in capsys.readouterr().err


def test_a_file_with_findings_that_compiles_keeps_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.py"
    path.write_text(LEGACY + "def f(a):\n    global b\n    return a\n", encoding="utf-8")
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "FSDP101" in out and "invalid-syntax" not in out, out
