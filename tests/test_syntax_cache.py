"""A file Python has compiled already is not parsed again for its syntax; any other is.

``invalid-syntax`` is reported for every file of a run, as ruff reports it; a file's
bytecode cache vouches for it only while it matches the bytes read
(:func:`codemods.batch.syntax_errors.compiled_already`).
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import time
from pathlib import Path

import pytest

from codemods import lint
from codemods.batch import syntax_errors

VALID = "import os\n\ndef f(x):\n    pass\n"
BROKEN = "import os\n\ndef f(:):\n    pass\n"  # the same size as VALID


def _compile(path: Path, mode: py_compile.PycInvalidationMode) -> None:
    """Write ``path``'s bytecode cache as an installer would: after the source."""
    earlier = time.time() - 10
    os.utime(path, (earlier, earlier))
    py_compile.compile(str(path), doraise=True, invalidation_mode=mode)


def _lint(capsys, *argv: str) -> tuple[int, str]:
    code = lint.main(list(argv))
    return code, capsys.readouterr().out


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The files the run parsed for their syntax alone (``syntax_errors.compiles``'s sources)."""
    seen: list[str] = []
    real = syntax_errors.compiles

    def counted(source: bytes):
        seen.append(source.decode())
        return real(source)

    monkeypatch.setattr(syntax_errors, "compiles", counted)
    return seen


MODES = [
    py_compile.PycInvalidationMode.TIMESTAMP,
    py_compile.PycInvalidationMode.CHECKED_HASH,
    py_compile.PycInvalidationMode.UNCHECKED_HASH,
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name.lower())
def test_a_compiled_file_is_not_parsed_again(tmp_path, monkeypatch, capsys, parses, mode):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fine.py").write_text(VALID)
    (tmp_path / "new.py").write_text("y = 2\n")
    _compile(tmp_path / "fine.py", mode)
    code, out = _lint(capsys, ".")
    assert code == 0 and out == "All checks passed!\n"
    assert parses == ["y = 2\n"]  # only the file no cache vouches for


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name.lower())
def test_a_broken_file_with_a_stale_cache_is_reported(tmp_path, monkeypatch, capsys, mode):
    # Compiled while it was valid, then broken with the same number of bytes: the
    # cache's time (or hash) no longer matches, and the file is parsed and reported.
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "broken.py"
    path.write_text(VALID)
    _compile(path, mode)
    path.write_text(BROKEN)
    code, out = _lint(capsys, ".")
    assert code == 1
    assert out.splitlines()[0] == "broken.py:3:7: invalid-syntax invalid syntax"


def test_a_rewrite_within_the_recorded_second_is_parsed(tmp_path, monkeypatch, capsys):
    # The cache's header records the source's time in whole seconds, as Python does:
    # a rewrite that keeps that second and the size is told apart by the cache being
    # older than the source.
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "broken.py"
    path.write_text(VALID)
    second = int(time.time()) - 100
    os.utime(path, (second, second))
    py_compile.compile(str(path), doraise=True)
    path.write_text(BROKEN)
    os.utime(path, ns=(second * 10**9 + 5, second * 10**9 + 5))
    cache = importlib.util.cache_from_source(str(path))
    os.utime(cache, ns=(second * 10**9 + 1, second * 10**9 + 1))
    code, out = _lint(capsys, ".")
    assert code == 1 and "invalid-syntax" in out


def test_standard_input_is_parsed_whatever_the_named_file_holds(
    tmp_path, monkeypatch, capsys, parses
):
    # --stdin-filename names a file whose cache matches its own bytes, not stdin's.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fine.py").write_text(VALID)
    _compile(tmp_path / "fine.py", py_compile.PycInvalidationMode.TIMESTAMP)
    monkeypatch.setattr("sys.stdin", _Stdin(BROKEN.encode()))
    code, out = _lint(capsys, "--stdin-filename", "fine.py", "-")
    assert code == 1 and "invalid-syntax" in out
    assert parses == [BROKEN]


class _Stdin:
    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)
