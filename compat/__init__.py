"""Runtime layer: legacy FSDP, Lightning and FairScale names that keep working.

Import the old name from ``compat`` instead of its original home and the code runs on
the installed torch, with an :class:`FSDPDeprecationWarning` that points at your line
and says what to write instead. Or change nothing: ``python -m compat script.py`` (or
:func:`install` inside the program) puts the old names back at their old homes.
"""

from compat._torch import check_torch

# Found, not imported: the drop-in patches torch's modules when the program imports them.
check_torch()

from codemods._version import __version__  # noqa: E402
from compat.deprecation import FSDPDeprecationWarning, warn_deprecated  # noqa: E402
from compat.dropin import install, installed, is_installed, uninstall  # noqa: E402

__all__ = [
    "FSDPDeprecationWarning",
    "__version__",
    "install",
    "installed",
    "is_installed",
    "uninstall",
    "warn_deprecated",
]
