"""Where a project keeps its requirements files, and the distributions read in them.

:mod:`codemods.cli.floors` asks whether a directory is a project root, and
:mod:`codemods.cli.requirement_files` reads what it declares; both find the files here.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

#: Normalised distribution name -> the framework whose floor it sets.
FRAMEWORKS: dict[str, str] = {
    "torch": "torch",
    "lightning": "lightning",
    "pytorch-lightning": "lightning",
    "lightning-fabric": "lightning",
}

#: A requirement in the plainest form packaging takes: a name, extras, and release
#: numbers after comparison operators (no markers, URLs, wildcards or pre-releases).
#: Compiled when first asked: a hook's run on a plain file loads this module, not it.
_PLAIN = (
    r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:\[\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
    r"(?:\s*,\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)*\s*\]\s*)?"
    r"(?:(?:~=\s*\d+(?:\.\d+)+|(?:[<>]=?|[=!]=)\s*\d+(?:\.\d+)*)"
    r"(?:\s*,\s*(?:~=\s*\d+(?:\.\d+)+|(?:[<>]=?|[=!]=)\s*\d+(?:\.\d+)*))*)?\s*"
)


def another_distribution(text: str) -> bool:
    """Whether ``text`` is a plain, valid requirement of a distribution no framework is.

    Most lines of a project's requirements name other packages (``numpy>=1.24``); such a
    line sets no floor, and packaging's parser costs far more than this look. A line in
    any other form is left to that parser (which may refuse it, and is then reported).

    Example:
        >>> another_distribution("numpy>=1.24,<2"), another_distribution("Torch>=2.0")
        (True, False)
        >>> another_distribution("numpy>=>1"), another_distribution("numpy; python_version<'3.9'")
        (False, False)
    """
    match = _plain().fullmatch(text)
    return match is not None and framework_of(match.group(1)) is None


def framework_of(name: str) -> str | None:
    """The framework whose floor the distribution ``name`` sets (any spelling), or None.

    Example:
        >>> framework_of("PyTorch_Lightning"), framework_of("numpy")
        ('lightning', None)
    """
    return FRAMEWORKS.get(re.sub(r"[-_.]+", "-", name).lower())


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


@functools.cache
def _plain() -> re.Pattern[str]:
    return re.compile(_PLAIN)
