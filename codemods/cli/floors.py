r"""The oldest torch and Lightning releases a project declares it supports.

ruff reads ``requires-python`` to pick its default target; fsdp-compat does the same for
the frameworks it migrates. This module reads a project's declared requirements, without
importing or running anything of the project, and returns the lowest release each
framework's requirements admit: a fix that needs a newer release than that is withheld.

Files read, all relative to the project root (see :func:`find_project_root`), in this
order (:mod:`codemods.cli.requirement_files` reads them):

1. ``pyproject.toml``: ``[project] dependencies``, every group of
   ``[project.optional-dependencies]``, every group of ``[dependency-groups]`` (PEP 735),
   ``[tool.poetry.dependencies]``, ``[tool.poetry.dev-dependencies]`` and every
   ``[tool.poetry.group.<name>.dependencies]`` (caret, tilde, ``>=``, exact and wildcard
   constraints, ``||`` unions).
2. ``setup.cfg``: ``[options] install_requires`` and ``[options.extras_require]`` (a
   ``file:`` value is read as a requirements file).
3. ``setup.py``: the ``install_requires`` and ``extras_require`` keywords of its
   ``setup(...)`` call, read with :mod:`ast` and never executed (see
   :mod:`codemods.cli.setup_py`); anything but a literal is reported as a problem.
4. ``requirements*.txt`` in the root, then ``requirements/*.txt`` (names in any case),
   each in name order, following ``-r``/``--requirement`` includes (relative to the
   including file, each file read once, a cycle reported).
5. ``tox.ini`` ``deps`` of every ``[testenv...]``, conda's ``environment.yml`` (its
   ``pip:`` list too), ``Pipfile`` ``[packages]`` / ``[dev-packages]``, and each
   ``.github/workflows/*.yml`` job matrix that lists torch releases
   (:mod:`codemods.cli.environment_files`).

A pin that names no release (a URL, a path, a git dependency, an editable install) is
recorded in ``unversioned``: below the evidence floor, the range is then unknown.

A project that holds Lightning's own source (``src/pytorch_lightning/`` and the like) and
declares no Lightning requirement is Lightning itself: its release is its own, read as
the oldest, so no Lightning rule rewrites the names it defines.

Which distributions count and how one requirement's floor is taken is in
:mod:`codemods.cli.specifiers`. Environment markers are ignored and the requirement
kept: ``torch>=1.12; python_version < "3.11"`` still says the project runs on torch 1.12
somewhere. When several declarations name a framework, the floor is the lowest of theirs
(the oldest release the project claims to support), and ``sources`` names that
declaration (the first one read, on a tie).

Example:
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "requirements.txt").write_text("numpy\ntorch>=1.12.0  # LTS\n")
    >>> floors = declared_floors(root)
    >>> floors.torch, floors.sources["torch"]
    (<Version('1.12.0')>, 'requirements.txt:2: torch>=1.12.0')
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from codemods.cli.requirement_names import framework_of, requirements_files
from codemods.records import Record
from codemods.release_numbers import release

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "ROOT_MARKERS",
    "DeclaredFloors",
    "declared_floors",
    "find_project_root",
    "is_project_root",
]


def __getattr__(name: str) -> object:
    """``poetry_floor``, ``specifier_floor``: loaded when asked.

    ``packaging``'s requirement and specifier parsers cost a run with no project file
    to read more than its own work does.
    """
    if name in ("poetry_floor", "specifier_floor"):
        from codemods.cli import specifiers

        return getattr(specifiers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Files whose presence makes a directory a project root (besides ``requirements*.txt``).
ROOT_MARKERS = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "Pipfile",
    "environment.yml",
    "environment.yaml",
)


class DeclaredFloors(Record):
    """The oldest torch and Lightning releases a project declares.

    Attributes:
        torch: The lowest torch release the project's requirements admit (None: no
            requirement bounds torch from below).
        lightning: The same for Lightning (``lightning``, ``pytorch-lightning``,
            ``lightning-fabric``).
        sources: Framework (``"torch"``, ``"lightning"``) -> the declaration the floor
            came from, e.g. ``"requirements.txt:3: torch>=1.12.0"``.
        problems: One message per requirement, file or line that could not be read
            (and so did not count), naming the file and, where known, the line.
        tops: Framework -> ``(release, exclusive)``: the newest release the project's
            declarations admit, where every declaration of it has a top (a pin, ``<X``).
        top_sources: Framework -> the declaration the top came from.
        unversioned: Framework -> a declaration that pins it by a URL or path (no
            release): below the evidence floor, the range is unknown.
    """

    _fields = ("torch", "lightning", "sources", "problems", "tops", "top_sources", "unversioned")

    def __init__(
        self,
        torch: Version | None = None,
        lightning: Version | None = None,
        sources: dict[str, str] | None = None,
        problems: list[str] | None = None,
        tops: dict[str, tuple[Version, bool]] | None = None,
        top_sources: dict[str, str] | None = None,
        unversioned: dict[str, str] | None = None,
    ) -> None:
        self.torch = torch
        self.lightning = lightning
        self.sources = {} if sources is None else sources
        self.problems = [] if problems is None else problems
        self.tops = {} if tops is None else tops
        self.top_sources = {} if top_sources is None else top_sources
        self.unversioned = {} if unversioned is None else unversioned


#: A requirement line's distribution name, or an include of another file.
_NAME = re.compile(r"\s*(?:(-r|--requirement\b)|([A-Za-z0-9][A-Za-z0-9._-]*))")


def _declares(path: Path) -> bool:
    """Whether a requirements file declares torch or Lightning, or includes another file.

    An empty ``requirements.txt`` beside a package's modules, or a ``tests/requirements.txt``
    of pytest and coverage, declares nothing about them and must not hide the project's
    own declarations above it.
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        found = _NAME.match(line)
        if found is None:
            continue
        if found.group(1):
            return True
        if framework_of(found.group(2)) or re.search(r"[/=]torch-\d", line):  # a wheel's URL
            return True
    return False


def is_project_root(directory: Path) -> bool:
    """Whether ``directory`` holds a root marker, or requirements files that declare some.

    The markers are ``pyproject.toml``, ``setup.cfg`` and ``setup.py``; requirements are
    a ``requirements*.txt`` file, or a ``requirements/`` folder of ``*.txt`` files (a
    project may keep only that), each counting only where it declares torch or Lightning
    (or includes another file).
    """
    try:
        # Most directories of a tree hold none of these names: one listing rules them
        # out (the file tests and two globs cost 0.1 s over torch's 345 directories).
        # Folded, for a file system that ignores case, as the tests below would; as one
        # text, each name between NULs (which no name holds): a directory walked up to
        # (``/tmp``, thousands of names) costs a one-file lint no loop over its names.
        names = "\0" + "\0".join(os.listdir(directory)).casefold() + "\0"
    except OSError:
        names = None  # not listed: the tests below decide
    if names is not None and not (
        any(f"\0{marker.casefold()}\0" in names for marker in ROOT_MARKERS)
        or "\0requirements" in names
    ):
        return False
    if any((directory / marker).is_file() for marker in ROOT_MARKERS):
        return True
    return any(_declares(candidate) for candidate in requirements_files(directory))


def find_project_root(path: str | os.PathLike[str]) -> Path | None:
    """The project directory whose declared requirements apply to ``path``.

    The rule: from ``path`` (a directory, or the directory of a file), walk up to the
    first directory that holds any of ``pyproject.toml``, ``setup.cfg``, ``setup.py``, or a
    ``requirements*.txt`` file or ``requirements/*.txt`` file that declares torch or
    Lightning (or includes another file); the closest one wins, whichever marker it holds
    (ruff likewise uses the closest ``pyproject.toml``). A requirements file that names
    neither (an empty one, a ``tests/requirements.txt`` of test tools) makes no root.

    Args:
        path: A file or directory; it need not exist.

    Returns:
        That directory, resolved, or None when no directory up to the file-system root
        has one.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp()).resolve()
        >>> _ = (root / "setup.py").write_text("")
        >>> find_project_root(root / "pkg" / "sub" / "module.py") == root
        True
    """
    start = Path(path).resolve()
    if not start.is_dir():
        start = start.parent
    for directory in (start, *start.parents):
        if is_project_root(directory):
            return directory
    return None


#: Lightning's own packages: a project holding one is Lightning's source, not a user's.
LIGHTNING_PACKAGES = ("pytorch_lightning", "lightning", "lightning_fabric", "lightning_lite")
OWN_LIGHTNING_FLOOR = "1.0"


def _own_lightning(directory: Path) -> str | None:
    """The Lightning package ``directory`` holds as its own source (``src/`` or top), or None."""
    for base in ("src", ""):
        for package in LIGHTNING_PACKAGES:
            candidate = directory / base / package if base else directory / package
            if candidate.is_dir() and any(candidate.glob("**/*.py")):
                return f"{base}/{package}" if base else package
    return None


def declared_floors(root: str | os.PathLike[str]) -> DeclaredFloors:
    """Read the requirements declared in ``root`` and return each framework's floor.

    See the module's documentation for the files read, their order, and how a floor is
    taken. Nothing is imported or executed; a file that cannot be read adds a message to
    ``problems`` and the rest is still read.

    Args:
        root: The project directory (see :func:`find_project_root`); a file means its
            directory.

    Returns:
        The floors, where each came from, and the problems met.
    """
    # The readers (and packaging's parsers) only where there is a project to read.
    from codemods.cli.environment_files import read_environment_files
    from codemods.cli.requirement_files import Reader

    directory = Path(root)
    if directory.is_file():
        directory = directory.parent
    reader = Reader(directory)
    reader.read()
    read_environment_files(reader)
    floors: dict[str, Version] = {}
    sources: dict[str, str] = {}
    for declaration in reader.declarations:  # strictly lower only: the first read wins a tie
        current = floors.get(declaration.framework)
        if declaration.floor is not None and (current is None or declaration.floor < current):
            floors[declaration.framework] = declaration.floor
            sources[declaration.framework] = declaration.source
    tops, top_sources = _tops(reader.declarations)
    own = _own_lightning(directory)
    if own is not None and "lightning" not in floors:
        # Lightning's own source defines the names the rules would rename: its release is
        # its own, unknown here, so the oldest is taken and no Lightning rule applies.
        floors["lightning"] = release(OWN_LIGHTNING_FLOOR)
        sources["lightning"] = f"{own}/ (this project is Lightning itself)"
    return DeclaredFloors(
        torch=floors.get("torch"),
        lightning=floors.get("lightning"),
        sources=sources,
        problems=list(reader.problems),
        tops=tops,
        top_sources=top_sources,
        unversioned=dict(reader.unversioned),
    )


def _tops(declarations: list) -> tuple[dict[str, tuple[Version, bool]], dict[str, str]]:
    """Each framework's newest admitted release: the highest top, none if one has none.

    The declarations of one project are alternatives (a floor in ``setup.py``, a pin in
    a CI file), so the range is their union: any declaration without a top leaves it open.
    """
    tops: dict[str, tuple[Version, bool]] = {}
    sources: dict[str, str] = {}
    open_ended: set[str] = set()
    for declaration in declarations:
        framework = declaration.framework
        if declaration.top is None:
            open_ended.add(framework)
            continue
        candidate = (declaration.top, declaration.top_exclusive)
        current = tops.get(framework)
        if current is None or (candidate[0], not candidate[1]) > (current[0], not current[1]):
            tops[framework] = candidate
            sources[framework] = declaration.source
    for framework in open_ended:
        tops.pop(framework, None)
        sources.pop(framework, None)
    return tops, sources
