"""``fsdp-compat-run SCRIPT [ARGS...]``: compat's drop-in, which no local module can shadow.

``python -m compat`` runs the first ``compat`` on ``sys.path``, and that starts with the
working directory: a ``compat.py`` there runs instead. This console script lives outside
the ``compat`` package and imports it from its own installed location, whatever
``sys.path`` (``PYTHONPATH=.`` included) puts first, then hands over to
:mod:`compat.__main__`. It takes the same arguments::

    fsdp-compat-run train.py --config old.yaml
    torchrun --nproc-per-node 8 --no-python fsdp-compat-run train.py --config old.yaml
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

PROG = "fsdp-compat-run"
#: The folder that holds this module and, beside it, the ``compat`` package.
HOME = os.path.dirname(os.path.abspath(__file__))


def import_own_compat() -> types.ModuleType:
    """Import ``compat.__main__`` from :data:`HOME`, never from a module that shadows it.

    Only the ``compat`` package is loaded by its location; what it imports (torch,
    Lightning) is found on ``sys.path`` as usual.

    Raises:
        ImportError: If another module named ``compat`` was imported already, or this
            installation has no ``compat`` package beside this module.
    """
    own = os.path.join(HOME, "compat")
    loaded = sys.modules.get("compat")
    if loaded is None:
        spec = importlib.util.spec_from_file_location(
            "compat", os.path.join(own, "__init__.py"), submodule_search_locations=[own]
        )
        if spec is None or spec.loader is None or not os.path.isdir(own):
            raise ImportError(f"no compat package beside {__file__}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["compat"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules["compat"]
            raise
    elif not any(
        os.path.realpath(path) == os.path.realpath(own) for path in getattr(loaded, "__path__", [])
    ):
        where = getattr(loaded, "__file__", None) or loaded
        raise ImportError(f"another module named compat was imported already: {where}")
    return importlib.import_module("compat.__main__")


def main(argv: list[str] | None = None) -> int:
    """Run ``fsdp-compat-run ARGS``; return the exit code."""
    wrapper = sys.argv[0]
    path0 = None
    if os.path.isfile(wrapper) and sys.path and not getattr(sys.flags, "safe_path", False):
        # Python put the console script's folder first: the program's own goes there.
        path0 = sys.path[0]
    try:
        runner = import_own_compat()
    except ImportError as exc:
        print(f"{PROG}: cannot import fsdp-compat's compat package: {exc}", file=sys.stderr)
        return 2
    return runner.main(sys.argv[1:] if argv is None else argv, prog=PROG, path0=path0)


if __name__ == "__main__":
    sys.exit(main())
