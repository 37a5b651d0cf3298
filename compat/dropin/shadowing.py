"""Finding a user's own module named ``compat``, which hides this package from the drop-in.

``python -m compat`` imports whatever ``compat`` comes first on ``sys.path``, and that
starts with the working directory: a ``compat.py`` (or ``compat/`` package) there runs
instead of the drop-in, and the script never runs. ``fsdp-compat-run`` imports this
package by its own location, so it always runs; but a script run through either form
that does ``import compat`` for its own module gets this package instead (it is in
``sys.modules`` already). :func:`shadowing_note` says so, naming the module.
"""

from __future__ import annotations

import importlib.machinery
import os
from collections.abc import Iterable

#: This package's folder.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The console script that no local module can shadow.
SAFE_COMMAND = "fsdp-compat-run"


def foreign_compat(directory: str) -> str | None:
    """The module named ``compat`` that ``directory`` holds, unless it is this package.

    Args:
        directory: A folder as ``sys.path`` names it (``""`` is the working directory).

    Returns:
        The path of that module (its file, or its folder for a package), or None.

    Example:
        >>> foreign_compat(os.path.dirname(PACKAGE_DIR)) is None  # this package itself
        True
    """
    folder = os.path.abspath(directory or os.curdir)
    spec = importlib.machinery.PathFinder.find_spec("compat", [folder])
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if any(os.path.realpath(location) == os.path.realpath(PACKAGE_DIR) for location in locations):
        return None
    if locations:
        return locations[0]
    return spec.origin


def shadowing_note(directories: Iterable[str], program: str) -> str | None:
    """What to tell the user about modules named ``compat`` in ``directories``, or None.

    Args:
        directories: The working directory and the script's folder, say.
        program: How the drop-in was started (``"python -m compat"``, ``fsdp-compat-run``).
    """
    found = []
    for directory in directories:
        module = foreign_compat(directory)
        if module is not None and module not in found:
            found.append(module)
    if not found:
        return None
    listed = ", ".join(os.path.relpath(path) for path in found)
    head = f"{program}: warning: {listed} is a module named `compat` that is not fsdp-compat's"
    imports = "an `import compat` in your script gets fsdp-compat's package instead of it"
    if program == SAFE_COMMAND:
        return f"{head}: {imports} (and `python -m compat` started in its folder would run it)."
    return (
        f"{head}: `python -m compat` started in its folder runs it instead of the drop-in, "
        f"and {imports}. Use `{SAFE_COMMAND} SCRIPT` (torchrun: `--no-python {SAFE_COMMAND} "
        f"SCRIPT`), or rename it."
    )


__all__ = ["PACKAGE_DIR", "SAFE_COMMAND", "foreign_compat", "shadowing_note"]
