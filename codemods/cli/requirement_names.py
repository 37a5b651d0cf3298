"""Where a project keeps its requirements files, and the distributions read in them.

:mod:`codemods.cli.floors` asks whether a directory is a project root, and
:mod:`codemods.cli.requirement_files` reads what it declares; both find the files here.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Normalised distribution name -> the framework whose floor it sets.
FRAMEWORKS: dict[str, str] = {
    "torch": "torch",
    "lightning": "lightning",
    "pytorch-lightning": "lightning",
    "lightning-fabric": "lightning",
}


def requirements_files(directory: Path) -> list[Path]:
    r"""``requirements*.txt`` in ``directory``, then ``requirements/*.txt``, in name order.

    Names are matched in any case: a project's ``REQUIREMENTS.txt`` (which its
    ``setup.py`` reads) declares as a ``requirements.txt`` does.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> for name in ("REQUIREMENTS.txt", "requirements-dev.txt", "README.txt"):
        ...     _ = (root / name).write_text("torch\n")
        >>> [path.name for path in requirements_files(root)]
        ['REQUIREMENTS.txt', 'requirements-dev.txt']
    """
    files, nested = [], []
    for name in _listed(directory):
        folded = name.casefold()
        if folded == "requirements":
            folder = directory / name
            nested += [folder / n for n in _listed(folder) if n.casefold().endswith(".txt")]
        elif folded.startswith("requirements") and folded.endswith(".txt"):
            files.append(directory / name)
    return [path for path in files + nested if path.is_file()]


def _listed(directory: Path) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:  # missing, or not a directory
        return []
