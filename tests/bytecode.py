"""The checkout's bytecode, compiled once per test run where Python is told not to write it.

With ``PYTHONDONTWRITEBYTECODE`` set (``python -B``; CI images often set it), no process
writes ``__pycache__``, so every process the suite starts (the CLIs it runs, each rank
of a multi-process test) compiled the ``codemods``, ``compat`` and ``tests`` modules it
imported again from source: about 0.1 s of CPU per rank and per CLI run, hundreds of
times. :func:`compile_checkout` compiles them once (under a second) before the tests
start; Python reads bytecode that exists even when told not to write it.
:func:`remove` takes away, when the run ends, the ``__pycache__`` folders it made, so
the checkout is left as it was. Where Python may write bytecode, it does so itself and
nothing here runs.
"""

from __future__ import annotations

import compileall
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The packages compiled whole; of ``tests``, only its own modules (not the fixtures,
#: some of which do not parse on purpose).
PACKAGES = ("codemods", "compat")


def _folders() -> list[Path]:
    found = [ROOT / "tests"]
    for package in PACKAGES:
        found += sorted({path.parent for path in (ROOT / package).rglob("*.py")})
    return found


def compile_checkout() -> list[Path]:
    """Compile the checkout's modules where Python writes no bytecode; the folders made.

    Returns:
        The ``__pycache__`` folders that did not exist before (for :func:`remove`).
    """
    if not sys.flags.dont_write_bytecode:
        return []
    made = [folder / "__pycache__" for folder in _folders()]
    made = [cache for cache in made if not cache.exists()]
    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=2)
    compileall.compile_dir(ROOT / "tests", maxlevels=0, quiet=2)
    return [cache for cache in made if cache.exists()]


def remove(made: list[Path]) -> None:
    """Remove the ``__pycache__`` folders :func:`compile_checkout` made."""
    for cache in made:
        shutil.rmtree(cache, ignore_errors=True)
