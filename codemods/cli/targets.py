"""Each file's releases, and the run's record of them for its summary.

A file's range of releases for a framework is, first found: ``--target-torch`` /
``--target-lightning``, ``target-torch`` / ``target-lightning`` in ``[tool.fsdp-compat]``
(a release, or a range ``2.4..2.13``), the range its project declares
(:mod:`codemods.cli.floors`: the lowest floor and, where every declaration has one, the
highest top), else from the file's own evidence floor (:mod:`codemods.screen.evidence`) to the
newest release. A pin that names no release (a URL or path) leaves the floor to the
evidence too, and says so.
A run may cover several projects, so the project is found per file; each directory's
project root and each root's declared floors are looked up once and cached, so a run
over thousands of files reads each project's files once. Standard input without a file
name belongs to no project.
"""

from __future__ import annotations

import os
from pathlib import Path

from codemods.cli.floors import DeclaredFloors, declared_floors, is_project_root
from codemods.cli.resolved_paths import ResolvedDirectories
from codemods.records import Frozen, Record
from codemods.releases import TITLES, Releases, Span

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.settings import Settings

__all__ = ["ProjectTarget", "ProjectTargets"]


class ProjectTarget(Frozen):
    """The releases used for the files of one project, and what could not be read.

    Attributes:
        root: The project root (None: no project, or no need to look one up).
        releases: The releases its files run on (an evidence span's floor is each
            file's, filled in when the file is read).
        problems: The declarations that could not be read, each naming the file
            relative to the current directory.
    """

    __slots__ = _fields = ("root", "releases", "problems")

    root: Path | None
    releases: Releases
    problems: tuple[str, ...]

    def __init__(
        self,
        root: Path | None,
        releases: Releases,
        problems: tuple[str, ...] = (),
    ) -> None:
        self._set(root=root, releases=releases, problems=problems)

    def line(self) -> str:
        """The summary line: ``releases torch 1.12..latest (floor: ...); Lightning ...``."""
        return "releases " + self.releases.line()

    def notes(self) -> list[str]:
        """One ``note:`` line per declaration that could not be read."""
        return [f"note: {problem}; it does not count" for problem in self.problems]


class ProjectTargets(Record):
    """Chooses each file's releases and records them per project root.

    Attributes:
        command_line: Framework -> the ``--target-...`` span given, if any.
        config: Framework -> the ``[tool.fsdp-compat]`` span, if any.
        config_path: The ``pyproject.toml`` the configuration came from.
    """

    _fields = ("command_line", "config", "config_path")  # what repr and == show

    def __init__(
        self,
        command_line: dict[str, Span | None] | None = None,
        config: dict[str, Span | None] | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.command_line = {} if command_line is None else command_line
        self.config = {} if config is None else config
        self.config_path = config_path
        self._roots: dict[Path, Path | None] = {}
        self._directories: dict[str, Path | None] = {}
        self._resolved = ResolvedDirectories()
        self._given: dict[str, Path | None] = {}
        self._settings: dict[int, tuple[Settings, Settings]] = {}
        self._projects: dict[Path | None, ProjectTarget] = {}

    def for_file(self, path: str | os.PathLike[str]) -> dict[str, Releases]:
        """The ``Settings`` fields for ``path``: its project's releases.

        Args:
            path: The file (``-``: standard input, which belongs to no project).

        Returns:
            ``{"releases": ...}`` (where the command line and the configuration set every
            framework's range, the one range of the run).
        """
        explicit = all(self._explicit(framework) for framework in TITLES)
        root = None if explicit or os.fspath(path) == "-" else self._root_of(os.fspath(path))
        return {"releases": self._project(root).releases}

    def with_releases(self, settings: Settings, releases: Releases) -> Settings:
        """``settings`` with ``releases``: one copy per project, which all its files share.

        A copy of the settings costs more than finding the file's project (a tree's
        thousands of files have a few projects), and the same object pickles once per
        batch of work sent to a worker.
        """
        cached = self._settings.get(id(releases))
        if cached is None or cached[0] is not settings or cached[1].releases is not releases:
            cached = self._settings[id(releases)] = (settings, settings.replace(releases=releases))
        return cached[1]

    def _explicit(self, framework: str) -> Span | None:
        return self.command_line.get(framework) or self.config.get(framework)

    def _root_of(self, path: str) -> Path | None:
        # Each directory as the run spells it is made absolute once: the files of a
        # tree share a few hundred, and ``abspath`` of each file cost most of this.
        given = os.path.dirname(path)
        found = self._given.get(given, self)
        if found is self:
            found = self._given[given] = self._absolute_root(os.path.abspath(given))
        return found  # type: ignore[return-value]

    def _absolute_root(self, directory: str) -> Path | None:
        if directory not in self._directories:
            resolved = self._resolved(directory)
            self._directories[directory] = None if resolved is None else self._walk(resolved)
        return self._directories[directory]

    def _walk(self, start: Path) -> Path | None:
        """:func:`codemods.cli.floors.find_project_root`, remembering every directory seen."""
        seen: list[Path] = []
        root: Path | None = None
        directory = start
        while True:  # up to the first directory seen before (not every parent of each)
            if directory in self._roots:
                root = self._roots[directory]
                break
            seen.append(directory)
            if is_project_root(directory):
                root = directory
                break
            if directory.parent == directory:
                break
            directory = directory.parent
        for directory in seen:
            self._roots[directory] = root
        return root

    def _project(self, root: Path | None) -> ProjectTarget:
        if root not in self._projects:
            floors = declared_floors(root) if root is not None else DeclaredFloors()
            prefix = _prefix(root)
            spans = {framework: self._span(framework, floors, prefix) for framework in TITLES}
            problems = tuple(prefix + problem for problem in floors.problems)
            self._projects[root] = ProjectTarget(root, Releases(**spans), problems)
        return self._projects[root]

    def _span(self, framework: str, floors: DeclaredFloors, prefix: str) -> Span:
        command_line = self.command_line.get(framework)
        if command_line:
            return command_line
        config = self.config.get(framework)
        if config:
            where = _display(self.config_path) if self.config_path else "pyproject.toml"
            return config.replace(
                floor_origin=f"{config.floor_origin} in {where}" if config.floor_origin else "",
                top_origin=f"{config.top_origin} in {where}" if config.top_origin else "",
            )
        top, exclusive = floors.tops.get(framework, (None, False))
        top_origin = f"declared: {prefix}{floors.top_sources[framework]}" if top else ""
        floor = getattr(floors, framework)
        if floor is not None:
            origin = f"declared: {prefix}{floors.sources[framework]}"
            return Span(floor, top, exclusive, origin, top_origin, declared=True)
        unversioned = floors.unversioned.get(framework, "")
        return Span(
            None,
            top,
            exclusive,
            "",
            top_origin,
            evidence=True,
            unversioned=prefix + unversioned if unversioned else "",
            declared=top is not None,
        )

    @property
    def projects(self) -> list[ProjectTarget]:
        """The projects whose files this run chose releases for, by root.

        Not in the order first seen: with several jobs that order is the order files
        happen to finish, and the summary would change from one run to the next.
        """
        return sorted(self._projects.values(), key=lambda p: "" if p.root is None else str(p.root))

    def summary_lines(self) -> list[str]:
        """The summary's lines: each distinct project's releases, then each note."""
        lines = list(dict.fromkeys(project.line() for project in self.projects))
        return lines + list(dict.fromkeys(n for project in self.projects for n in project.notes()))

    def report(self) -> list[dict]:
        """The releases for ``--report``: one object per project, with their sources."""
        return [
            {
                "root": str(project.root) if project.root is not None else None,
                **{
                    framework: _span_report(project.releases.span(framework))
                    for framework in TITLES
                },
                "notes": list(project.problems),
            }
            for project in self.projects
        ]


def _span_report(span: Span) -> dict:
    """One framework's range for ``--report``: bounds, and which declaration set each."""
    return {
        "range": span.text(),
        "floor": None if span.floor is None else str(span.floor),
        "floor_origin": span.floor_origin
        or ("each file's evidence floor" if span.evidence else "default"),
        "top": None if span.top is None else str(span.top),
        "top_exclusive": span.top_exclusive,
        "top_origin": span.top_origin or "the newest release",
        "unversioned": span.unversioned or None,
    }


def _display(path: Path) -> str:
    """``path`` relative to the current directory where it is inside it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def _prefix(root: Path | None) -> str:
    """What to put before a file name of ``root`` to name it from the current directory."""
    if root is None:
        return ""
    cwd = Path.cwd().resolve()
    if root == cwd:
        return ""
    try:
        return root.relative_to(cwd).as_posix() + "/"
    except ValueError:
        return root.as_posix() + "/"
