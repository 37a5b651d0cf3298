"""Each file's target releases, and the run's record of them for its summary.

A file's target for a framework is, first found: ``--target-torch`` /
``--target-lightning``, ``target-torch`` / ``target-lightning`` in ``[tool.fsdp-compat]``,
the floor its project declares (:mod:`codemods.cli.floors`), else the current release.
A run may cover several projects, so the project is found per file; each directory's
project root and each root's declared floors are looked up once and cached, so a run
over thousands of files reads each project's files once. Standard input without a file
name belongs to no project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from codemods.cli.floors import DeclaredFloors, choose_target, declared_floors, is_project_root
from codemods.cli.specifiers import TITLES

__all__ = ["ProjectTarget", "ProjectTargets", "Target", "short_release"]


def short_release(version: Version) -> str:
    """``version`` as a target: trailing zero parts dropped down to ``major.minor``.

    Example:
        >>> short_release(Version("1.12.0")), short_release(Version("2")), short_release(Version("2.0.1"))
        ('1.12', '2.0', '2.0.1')
    """  # noqa: E501
    parts = list(version.release)
    while len(parts) > 2 and parts[-1] == 0:
        parts.pop()
    parts += [0] * (2 - len(parts))
    return ".".join(map(str, parts))


@dataclass(frozen=True)
class Target:
    """One framework's target for a project, and where it came from.

    Attributes:
        release: The release, like ``"1.12"`` (None: the current release).
        origin: Where it came from, e.g. ``--target-torch`` or
            ``declared: requirements.txt:3: torch>=1.12.0`` (empty for the default).
    """

    release: str | None = None
    origin: str = ""


@dataclass(frozen=True)
class ProjectTarget:
    """The targets used for the files of one project, and what could not be read.

    Attributes:
        root: The project root (None: no project, or no need to look one up).
        targets: Framework (``"torch"``, ``"lightning"``) -> its target.
        problems: The declarations that could not be read, each naming the file
            relative to the current directory.
    """

    root: Path | None
    targets: dict[str, Target]
    problems: tuple[str, ...] = ()

    @property
    def default(self) -> bool:
        """Whether every framework's target is the current release."""
        return all(target.release is None for target in self.targets.values())

    def line(self) -> str:
        """The summary line: ``target torch 1.12 (declared: ...); Lightning latest``."""
        parts = []
        for framework, title in TITLES.items():
            target = self.targets[framework]
            if target.release is None:
                parts.append(f"{title} latest")
            else:
                parts.append(f"{title} {target.release} ({target.origin})")
        return "target " + "; ".join(parts)

    def notes(self) -> list[str]:
        """One ``note:`` line per declaration that could not be read."""
        then = "; the default target is used" if self.default else ""
        return [f"note: {problem}{then}" for problem in self.problems]


@dataclass
class ProjectTargets:
    """Chooses each file's targets and records them per project root.

    Attributes:
        command_line: Framework -> the ``--target-...`` release given, if any.
        config: Framework -> the ``[tool.fsdp-compat]`` release, if any.
        config_path: The ``pyproject.toml`` the configuration came from.
    """

    command_line: dict[str, str | None] = field(default_factory=dict)
    config: dict[str, str | None] = field(default_factory=dict)
    config_path: Path | None = None
    _roots: dict[Path, Path | None] = field(default_factory=dict, repr=False)
    _directories: dict[str, Path | None] = field(default_factory=dict, repr=False)
    _projects: dict[Path | None, ProjectTarget] = field(default_factory=dict, repr=False)

    def for_file(self, path: str | os.PathLike[str]) -> dict[str, str]:
        """The targets the file's project declares where nothing explicit sets them.

        Args:
            path: The file (``-``: standard input, which belongs to no project).

        Returns:
            ``Settings`` fields to replace, e.g. ``{"target_torch": "1.12"}``; empty when
            the command line and the configuration set every target, or nothing is
            declared.
        """
        explicit = all(self._explicit(framework) for framework in TITLES)
        if explicit or os.fspath(path) == "-":
            project = self._project(None)
        else:
            project = self._project(self._root_of(os.fspath(path)))
        return {
            f"target_{framework}": target.release
            for framework, target in project.targets.items()
            if target.release is not None and not self._explicit(framework)
        }

    def _explicit(self, framework: str) -> str | None:
        return self.command_line.get(framework) or self.config.get(framework)

    def _root_of(self, path: str) -> Path | None:
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in self._directories:
            self._directories[directory] = self._walk(Path(directory).resolve())
        return self._directories[directory]

    def _walk(self, start: Path) -> Path | None:
        """:func:`codemods.cli.floors.find_project_root`, remembering every directory seen."""
        seen: list[Path] = []
        root: Path | None = None
        for directory in (start, *start.parents):
            if directory in self._roots:
                root = self._roots[directory]
                break
            seen.append(directory)
            if is_project_root(directory):
                root = directory
                break
        for directory in seen:
            self._roots[directory] = root
        return root

    def _project(self, root: Path | None) -> ProjectTarget:
        if root not in self._projects:
            floors = declared_floors(root) if root is not None else DeclaredFloors()
            prefix = _prefix(root)
            targets = {framework: self._target(framework, floors, prefix) for framework in TITLES}
            problems = tuple(prefix + problem for problem in floors.problems)
            self._projects[root] = ProjectTarget(root, targets, problems)
        return self._projects[root]

    def _target(self, framework: str, floors: DeclaredFloors, prefix: str) -> Target:
        command_line = self.command_line.get(framework)
        config = self.config.get(framework)
        release, origin = choose_target(framework, command_line, config, floors)
        if release is None:
            return Target()
        if command_line:
            return Target(release, origin)
        if config:
            where = _display(self.config_path) if self.config_path else "pyproject.toml"
            return Target(release, f"{origin} in {where}")
        floor = getattr(floors, framework)
        return Target(short_release(floor), f"declared: {prefix}{origin}")

    @property
    def projects(self) -> list[ProjectTarget]:
        """The projects whose files this run chose targets for, by root.

        Not in the order first seen: with several jobs that order is the order files
        happen to finish, and the summary would change from one run to the next.
        """
        return sorted(self._projects.values(), key=lambda p: "" if p.root is None else str(p.root))

    def summary_lines(self) -> list[str]:
        """The summary's lines: each distinct target line, then each note.

        Nothing when every file's targets are the current releases and nothing failed to
        read (the output of a run on a project that declares nothing stays as it was).
        """
        lines = list(dict.fromkeys(project.line() for project in self.projects))
        if all(project.default for project in self.projects):
            lines = []
        return lines + list(dict.fromkeys(n for project in self.projects for n in project.notes()))

    def report(self) -> list[dict]:
        """The targets for ``--report``: one object per project."""
        return [
            {
                "root": str(project.root) if project.root is not None else None,
                **{
                    framework: {"release": target.release, "origin": target.origin or "default"}
                    for framework, target in project.targets.items()
                },
                "notes": list(project.problems),
            }
            for project in self.projects
        ]


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
