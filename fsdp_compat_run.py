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

import os
import sys
import types

PROG = "fsdp-compat-run"
#: The folder that holds this module and, beside it, the ``compat`` package.
HOME = os.path.dirname(os.path.abspath(__file__))


def import_own_compat() -> types.ModuleType:
    """Import ``compat.__main__`` from :data:`HOME`, never from a module that shadows it.

    Raises:
        ImportError: If another module named ``compat`` was imported already, or this
            installation has no ``compat`` package beside this module.
    """
    own = os.path.join(HOME, "compat")
    loaded = sys.modules.get("compat")
    if loaded is not None and not any(
        os.path.realpath(path) == os.path.realpath(own) for path in getattr(loaded, "__path__", [])
    ):
        where = getattr(loaded, "__file__", None) or loaded
        raise ImportError(f"another module named compat was imported already: {where}")
    saved = list(sys.path)
    sys.path.insert(0, HOME)  # only while compat itself is imported: its submodules follow
    try:
        import compat.__main__ as runner
    finally:
        sys.path[:] = saved
    return runner


def main(argv: list[str] | None = None) -> int:
    """Run ``fsdp-compat-run ARGS``; return the exit code."""
    wrapper = sys.argv[0]
    path0 = None
    if os.path.isfile(wrapper) and sys.path and not sys.flags.safe_path:
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
