"""Installs compat's drop-in in each Python process a drop-in program starts.

``python -m compat`` (and ``compat.install(subprocesses=True)``) sets
``FSDP_COMPAT_INSTALL=1`` and puts this file's folder first on ``PYTHONPATH``. Python
imports a module named ``sitecustomize`` at start-up, before any of the program's
code: Lightning's launcher re-running the script for the other ranks, ``multiprocessing``
spawn children, ``torchrun`` workers. This one first runs the ``sitecustomize`` it
shadows, if there is one, then installs the drop-in, so that the child sees the old
names too. It imports ``compat`` from its own installation, so that a ``compat.py`` on
``PYTHONPATH`` does not answer. A child Python that cannot import ``compat`` (another
environment) is left as it is. Imported under any other name, it does nothing.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def run_shadowed() -> None:
    """Run the ``sitecustomize`` that this one hides on ``sys.path``, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def install() -> None:
    """Install the drop-in when the environment asks for it."""
    if os.environ.get("FSDP_COMPAT_INSTALL") != "1":
        return
    # From this file's own installation, as fsdp-compat-run imports it: a `compat.py`
    # on PYTHONPATH must not answer.
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    launcher = os.path.join(home, "fsdp_compat_run.py")
    try:
        if os.path.isfile(launcher):
            spec = importlib.util.spec_from_file_location("fsdp_compat_run", launcher)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            module.import_own_compat()
        import compat
    except ImportError:  # a Python without compat or torch, started by the program
        return
    compat.install(subprocesses=True)


if __name__ == "sitecustomize":
    run_shadowed()
    install()
