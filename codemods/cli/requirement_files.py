"""Readers of each file a project declares its requirements in, collecting framework floors.

:class:`Reader` reads, relative to a project root and in this order: ``pyproject.toml``
(PEP 621 dependencies and optional dependencies, PEP 735 dependency groups, Poetry's
tables), ``setup.cfg`` (``[options] install_requires``, ``[options.extras_require]``,
``file:`` values), ``setup.py`` (see :mod:`codemods.cli.setup_py`),
``requirements*.txt`` and ``requirements/*.txt`` with their ``-r`` includes
(:mod:`codemods.cli.environment_files` reads the files users keep besides these). Each
declaration of torch or Lightning becomes a :class:`Declaration`; whatever cannot be
read becomes a problem message naming the file and, where known, the line.
:func:`codemods.cli.floors.declared_floors` is the public entry point.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from codemods.cli.requirement_names import another_distribution, requirements_files
from codemods.cli.setup_py import setup_py_requirements
from codemods.cli.specifiers import (
    FRAMEWORKS,
    pep440_floor_noted,
    pep440_top,
    poetry_floor_noted,
    poetry_top,
)
from codemods.cli.url_pins import pinned

__all__ = ["Declaration", "Reader"]

_COMMENT = re.compile(r"(^|\s)#.*$")
_TRAILING_OPTIONS = re.compile(r"\s+(?=--?[A-Za-z])")
_URL = re.compile(r"^[A-Za-z][\w+.-]*://")
_ARCHIVE = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar")
# Options of a requirements file that say where or how to install, not what: skipped
# silently. Editables, URLs and unknown options are reported.
_QUIET_OPTIONS = {
    "-i",
    "--index-url",
    "--extra-index-url",
    "--no-index",
    "-f",
    "--find-links",
    "--trusted-host",
    "--pre",
    "--prefer-binary",
    "--only-binary",
    "--no-binary",
    "--require-hashes",
    "--use-feature",
    "-c",  # a constraints file limits versions; it declares no requirement
    "--constraint",
}


class Declaration(NamedTuple):
    """One requirement that bounds a framework from below.

    Attributes:
        framework: ``"torch"`` or ``"lightning"``.
        floor: The lowest release it admits (None: nothing bounds it from below).
        source: Where it was read and what it says, e.g. ``requirements.txt:3: torch>=1.12``.
        top: The highest release it admits (None: the newest).
        top_exclusive: ``top`` itself is not admitted (``<2.0``).
    """

    framework: str
    floor: Version | None
    source: str
    top: Version | None = None
    top_exclusive: bool = False


class Reader:
    """Reads every declaration under one root, collecting them and the problems met.

    Args:
        root: The project directory.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.declarations: list[Declaration] = []
        self.problems: list[str] = []
        #: Framework -> the first declaration that pins it by a URL or path (no release).
        self.unversioned: dict[str, str] = {}
        self._read_files: set[Path] = set()

    def read(self) -> None:
        """Read each file the project may declare requirements in, in the documented order."""
        self._read_pyproject(self.root / "pyproject.toml")
        self._read_setup_cfg(self.root / "setup.cfg")
        found, problems = setup_py_requirements(self.root / "setup.py")
        self.problems.extend(problems)
        for text, where in found:
            self.add_pep508(text, where)
        for path in self._requirements_files():
            self._read_requirements(path, ())

    def _label(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return Path(os.path.relpath(path, self.root)).as_posix()

    def add_pep508(self, text: str, where: str, parsed: Requirement | None = None) -> None:
        """Count one PEP 508 requirement string (``parsed``: it, read); ``where``: its source."""
        if parsed is None and another_distribution(text):
            return
        try:
            requirement = parsed or Requirement(text)
        except InvalidRequirement as exc:
            self.problems.append(f"{where}: cannot parse requirement {text!r}: {exc}")
            return
        framework = FRAMEWORKS.get(canonicalize_name(requirement.name))
        if framework is None:
            return
        if requirement.url:
            self._url_or_path(requirement.url, f"{where}: {text}", requirement.name)
            return
        floor, note = pep440_floor_noted(requirement.specifier)
        top, exclusive = pep440_top(requirement.specifier)
        self._add(framework, floor, f"{where}: {text}", note, top, exclusive)

    def pinned_without_release(self, framework: str, source: str) -> None:
        """Record a pin that names no release (a URL, a path, an editable install)."""
        self.unversioned.setdefault(framework, source)

    def _add(
        self,
        framework: str,
        floor: Version | None,
        source: str,
        note: str,
        top: Version | None = None,
        exclusive: bool = False,
    ) -> None:
        source = f"{source} ({note})" if note else source
        self.declarations.append(Declaration(framework, floor, source, top, exclusive))

    def _read_pyproject(self, path: Path) -> None:
        if not path.is_file():
            return
        data = self._load_toml(path)
        if data is None:
            return
        project = data.get("project", {})
        if isinstance(project, dict):
            self._pep508_list(project.get("dependencies"), "pyproject.toml [project.dependencies]")
            optional = project.get("optional-dependencies", {})
            if isinstance(optional, dict):
                for group, requirements in optional.items():
                    self._pep508_list(
                        requirements, f"pyproject.toml [project.optional-dependencies.{group}]"
                    )
            else:
                self.problems.append(
                    "pyproject.toml: [project.optional-dependencies] is not a table; not read"
                )
        groups = data.get("dependency-groups", {})
        if isinstance(groups, dict):
            for group, requirements in groups.items():
                if isinstance(requirements, list):  # {include-group = ...} tables are skipped
                    requirements = [item for item in requirements if not isinstance(item, dict)]
                self._pep508_list(requirements, f"pyproject.toml [dependency-groups.{group}]")
        tool = data.get("tool", {})
        poetry = tool.get("poetry", {}) if isinstance(tool, dict) else None
        if isinstance(poetry, dict):
            self._poetry_table(poetry.get("dependencies"), "tool.poetry.dependencies")
            self._poetry_table(poetry.get("dev-dependencies"), "tool.poetry.dev-dependencies")
            group_tables = poetry.get("group", {})
            if isinstance(group_tables, dict):
                for group, table in group_tables.items():
                    if isinstance(table, dict):
                        self._poetry_table(
                            table.get("dependencies"), f"tool.poetry.group.{group}.dependencies"
                        )

    def _load_toml(self, path: Path) -> dict[str, Any] | None:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.9 and 3.10
            try:
                import tomli as tomllib
            except ImportError:
                self.problems.append(
                    f"{self._label(path)}: not read: on Python < 3.11 reading TOML needs "
                    "the tomli package"
                )
                return None
        try:
            with path.open("rb") as handle:
                return tomllib.load(handle)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            self.problems.append(
                f"{self._label(path)}: cannot parse TOML ({exc}); its requirements are not read"
            )
            return None

    def _pep508_list(self, requirements: Any, where: str) -> None:
        if requirements is None:
            return
        if not isinstance(requirements, list) or not all(
            isinstance(item, str) for item in requirements
        ):
            self.problems.append(f"{where}: not a list of requirement strings; not read")
            return
        for text in requirements:
            self.add_pep508(text.strip(), where)

    def _poetry_table(self, table: Any, name: str) -> None:
        if table is None:
            return
        where = f"pyproject.toml [{name}]"
        if not isinstance(table, dict):
            self.problems.append(f"{where}: not a table; not read")
            return
        for package, value in table.items():
            framework = FRAMEWORKS.get(canonicalize_name(package))
            if framework is None:
                continue
            for item in value if isinstance(value, list) else [value]:
                constraint = item.get("version") if isinstance(item, dict) else item
                if not isinstance(constraint, str):
                    self.pinned_without_release(framework, f"{where}: {package} = {item!r}")
                    continue
                try:
                    floor, note = poetry_floor_noted(constraint)
                    top, exclusive = poetry_top(constraint)
                except ValueError as exc:
                    self.problems.append(f"{where}: {package} = {constraint!r}: {exc}")
                    continue
                source = f'{where}: {package} = "{constraint}"'
                self._add(framework, floor, source, note, top, exclusive)

    def load_ini(self, path: Path) -> configparser.ConfigParser | None:
        """``path`` read as an INI file; None (and a problem) where it does not parse."""
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
        except (OSError, UnicodeDecodeError, configparser.Error) as exc:
            message = str(exc).splitlines()[0]
            self.problems.append(
                f"{self._label(path)}: cannot parse ({message}); its requirements are not read"
            )
            return None
        return parser

    def _read_setup_cfg(self, path: Path) -> None:
        if not path.is_file():
            return
        parser = self.load_ini(path)
        if parser is None:
            return
        if parser.has_option("options", "install_requires"):
            value = parser.get("options", "install_requires", raw=True)
            self._cfg_requirements(value, "setup.cfg [options] install_requires")
        section = "options.extras_require"
        if parser.has_section(section):
            defaults = set(parser.defaults())
            for extra in parser[section]:
                if extra not in defaults:
                    value = parser.get(section, extra, raw=True)
                    self._cfg_requirements(value, f"setup.cfg [{section}] {extra}")

    def _cfg_requirements(self, value: str, where: str) -> None:
        value = value.strip()
        if value.startswith("file:"):
            for name in value[len("file:") :].split(","):
                target = (self.root / name.strip()).resolve()
                if not target.is_file():
                    self.problems.append(f"{where}: file {name.strip()!r} not found; not read")
                elif target not in self._read_files:
                    self._read_requirements(target, ())
            return
        lines = [_COMMENT.sub("", line).strip() for line in value.splitlines()]
        lines = [line for line in lines if line and not line.startswith(";")]
        if len(lines) == 1 and ";" in lines[0]:
            # setuptools splits a one-line value on ';' -- unless it is one requirement
            # with a marker, which is what such a line usually means.
            try:
                Requirement(lines[0])
            except InvalidRequirement:
                lines = [part.strip() for part in lines[0].split(";") if part.strip()]
        for line in lines:
            self.add_pep508(line, where)

    def _requirements_files(self) -> list[Path]:
        return [path.resolve() for path in requirements_files(self.root)]

    def _read_requirements(self, path: Path, stack: tuple[Path, ...]) -> None:
        path = path.resolve()
        if path in self._read_files:
            return  # read already (by a glob or another include): counted once
        self._read_files.add(path)
        label = self._label(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(f"{label}: cannot read ({exc}); its requirements are not read")
            return
        for number, line in _logical_lines(text):
            self._requirements_line(path, f"{label}:{number}", line, (*stack, path))

    def _requirements_line(
        self, path: Path, where: str, line: str, stack: tuple[Path, ...]
    ) -> None:
        option = re.match(r"^(--?[A-Za-z][\w-]*)(?:\s*=\s*|\s+)?(.*)$", line)
        if line.startswith("-") and option:
            name, argument = option.group(1), option.group(2).strip()
            if len(name) > 2 and not name.startswith("--"):  # -rfile.txt
                name, argument = name[:2], name[2:] + argument
            if name in ("-r", "--requirement"):
                self._include(path, argument, where, stack)
            elif name in ("-e", "--editable"):
                self._url_or_path(argument, f"{where}: {line}")
            elif name not in _QUIET_OPTIONS:
                self.problems.append(f"{where}: skipped unknown option {line!r}")
            return
        requirement = _TRAILING_OPTIONS.split(line, maxsplit=1)[0].strip()
        if another_distribution(requirement):
            return
        try:
            parsed: Requirement | None = Requirement(requirement)  # parsed once, not again
        except InvalidRequirement:
            parsed = None
            archive = requirement.lower().endswith(_ARCHIVE)
            if _URL.match(requirement) or requirement.startswith((".", "/", "~")) or archive:
                self._url_or_path(requirement, f"{where}: {requirement}")
                return
        self.add_pep508(requirement, where, parsed)

    def _url_or_path(self, text: str, source: str, name: str | None = None) -> None:
        """A URL, path or editable install: a framework's pin where it installs one.

        Which distribution it installs is read from it (:mod:`codemods.cli.url_pins`),
        and must be ``name`` where the line names one (``torch @ <url>``). A wheel or an
        archive names its release, which bounds the range both ways as ``==`` does;
        anything else is a pin with no release.
        """
        installs, release = pinned(text)
        wanted = canonicalize_name(name) if name else installs
        framework = FRAMEWORKS.get(wanted or "")
        if framework is None:
            return
        if release is None or installs != wanted:
            self.pinned_without_release(framework, source)
            return
        release = Version(release.base_version)
        self._add(framework, release, source, "", release)

    def _include(self, path: Path, argument: str, where: str, stack: tuple[Path, ...]) -> None:
        if not argument:
            self.problems.append(f"{where}: -r without a file name; skipped")
            return
        if _URL.match(argument):
            self.problems.append(f"{where}: skipped -r {argument}: a URL is not followed")
            return
        target = (path.parent / argument).resolve()
        if target in stack:
            self.problems.append(
                f"{where}: -r {argument} includes a file already being read (a cycle); "
                "not read again"
            )
        elif not target.is_file():
            self.problems.append(f"{where}: -r {argument}: file not found; not read")
        else:
            self._read_requirements(target, stack)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, line)`` per logical line: continuations joined, comments cut."""
    buffer: list[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not buffer:
            first = number
        if raw.endswith("\\"):
            buffer.append(raw[:-1])
            continue
        buffer.append(raw)
        line = _COMMENT.sub("", " ".join(buffer)).strip()
        buffer = []
        if line:
            yield first, line
    if buffer:
        line = _COMMENT.sub("", " ".join(buffer)).strip()
        if line:
            yield first, line
