r"""Readers of the declarations users keep besides packaging metadata.

A project's releases are often declared where it is tested or installed rather than in
its package metadata: tox's ``deps``, a conda ``environment.yml``, a ``Pipfile``, or a
CI workflow that runs a matrix of torch releases. Each reader here hands what it finds
to a :class:`codemods.cli.requirement_files.Reader`, which collects them with the rest.

Example:
    >>> import pathlib, tempfile
    >>> from codemods.cli.requirement_files import Reader
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "environment.yml").write_text("dependencies:\n  - pytorch=1.13\n")
    >>> reader = Reader(root)
    >>> read_environment_files(reader)
    >>> [(d.framework, str(d.floor), str(d.top), d.top_exclusive) for d in reader.declarations]
    [('torch', '1.13', '1.14', True)]
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from codemods.cli.specifiers import FRAMEWORKS, release

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

    from codemods.cli.requirement_files import Reader

__all__ = ["read_environment_files"]

#: conda's package names for the frameworks (``pytorch`` is torch on conda).
CONDA_NAMES = {**FRAMEWORKS, "pytorch": "torch"}
#: A workflow matrix key that lists torch releases: ``torch``, ``torch-version``,
#: ``pytorch_version``, ``torch-versions``.
_MATRIX_KEY = re.compile(r"^(?:py)?torch(?:[-_](?:version|versions|ver))?$", re.IGNORECASE)
#: Where a workflow's text may hold such a key (any case, quoted or not, the colon on
#: the same line or the next): a workflow without one has no such matrix.
_MATRIX_KEY_TEXT = re.compile(r"""torch(?:[-_](?:version|versions|ver))?['"]?\s*:""", re.IGNORECASE)
_FACTOR = re.compile(r"^[\w!,.-]+:\s+")


def read_environment_files(reader: Reader) -> None:
    """Read ``tox.ini``, ``environment.yml``, ``Pipfile`` and CI workflows under the root."""
    root = reader.root
    _read_tox(reader, root / "tox.ini")
    for name in ("environment.yml", "environment.yaml"):
        _read_conda(reader, root / name)
    _read_pipfile(reader, root / "Pipfile")
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        for path in sorted([*workflows.glob("*.yml"), *workflows.glob("*.yaml")]):
            _read_workflow(reader, path)


def _read_tox(reader: Reader, path: Path) -> None:
    """Every ``deps`` line of every ``[testenv...]`` section (factor prefixes dropped)."""
    if not path.is_file():
        return
    parser = reader.load_ini(path)
    if parser is None:
        return
    for section in parser.sections():
        if not (section == "testenv" or section.startswith("testenv:")):
            continue
        if not parser.has_option(section, "deps"):
            continue
        for line in parser.get(section, "deps", raw=True).splitlines():
            line = _FACTOR.sub("", line.split("#")[0].strip())
            if not line or "{" in line or line.startswith("-"):
                continue  # substitutions, options and includes name no framework release
            reader.add_pep508(line, f"tox.ini [{section}] deps")


def _load_yaml(reader: Reader, path: Path, text: str | None = None) -> Any:
    """The YAML document of ``path`` (``text``: its text, read already), or None."""
    try:
        import yaml  # libcst's own dependency: always there where the codemods are
    except ImportError:  # pragma: no cover - libcst requires pyyaml
        reader.problems.append(f"{reader._label(path)}: not read: reading YAML needs pyyaml")
        return None
    try:
        text = path.read_text(encoding="utf-8") if text is None else text
        try:
            # libyaml's loader where pyyaml was built with it: the pure-Python one took
            # most of the time a run over 53 projects spent reading their workflows.
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
        except yaml.YAMLError:
            return yaml.safe_load(text)  # the same refusal, in the pure-Python loader's words
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        reader.problems.append(f"{reader._label(path)}: cannot parse YAML ({first}); not read")
        return None


def _read_conda(reader: Reader, path: Path) -> None:
    """A conda environment: its ``dependencies`` and their ``pip:`` list."""
    if not path.is_file():
        return
    data = _load_yaml(reader, path)
    if not isinstance(data, dict):
        return
    where = f"{reader._label(path)} dependencies"
    for item in data.get("dependencies") or []:
        if isinstance(item, dict):
            for requirement in item.get("pip") or []:
                if isinstance(requirement, str):
                    reader.add_pep508(requirement.strip(), f"{where} pip")
        elif isinstance(item, str):
            _conda_spec(reader, item.strip(), where)


def _conda_spec(reader: Reader, spec: str, where: str) -> None:
    """One conda match spec: ``pytorch=1.12`` (1.12.*), ``pytorch>=1.12``, ``pytorch``."""
    name = spec.split("::")[-1]
    match = re.match(r"^([A-Za-z0-9_.-]+)\s*(.*)$", name)
    if match is None:
        return
    framework = CONDA_NAMES.get(canonicalize_name(match.group(1)))
    if framework is None:
        return
    constraint = match.group(2).strip()
    if constraint.startswith("=") and not constraint.startswith("=="):
        version = constraint[1:].split("=")[0].rstrip(".*")  # name=version=build
        constraint = f"=={version}.*"
    elif re.match(r"^\d", constraint):
        constraint = f"=={constraint.split('=')[0]}"
    reader.add_pep508(f"{'torch' if framework == 'torch' else match.group(1)}{constraint}", where)


def _read_pipfile(reader: Reader, path: Path) -> None:
    """``[packages]`` and ``[dev-packages]``: a version, or a table (git or path: no release)."""
    if not path.is_file():
        return
    data = reader._load_toml(path)
    if data is None:
        return
    for table in ("packages", "dev-packages"):
        entries = data.get(table)
        if not isinstance(entries, dict):
            continue
        where = f"Pipfile [{table}]"
        for package, value in entries.items():
            framework = FRAMEWORKS.get(canonicalize_name(package))
            if framework is None:
                continue
            version = value.get("version") if isinstance(value, dict) else value
            if isinstance(value, dict) and version is None:
                reader.pinned_without_release(framework, f"{where}: {package} = {value!r}")
            elif isinstance(version, str):
                text = "" if version.strip() == "*" else version.strip()
                reader.add_pep508(f"{package}{text}", where)


def _read_workflow(reader: Reader, path: Path) -> None:
    """A CI workflow's job matrices that list torch releases: their lowest and highest.

    A workflow whose text holds no key of :data:`_MATRIX_KEY` has no such matrix and is
    not parsed (:data:`_MATRIX_KEY_TEXT`): most projects' workflows are of linting and
    publishing, and most that name torch only install it.
    """
    try:
        text: str | None = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = None  # _load_yaml says why it cannot be read
    if text is not None and _MATRIX_KEY_TEXT.search(text) is None:
        return
    jobs = _matrices(text) if text is not None else None
    if jobs is None:  # not read so: the whole document (a YAML error is reported there)
        data = _load_yaml(reader, path, text)
        jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, dict):
        return
    for job, body in jobs.items():
        matrix = (body.get("strategy") or {}).get("matrix") if isinstance(body, dict) else None
        if not isinstance(matrix, dict):
            continue
        rows = [matrix, *(row for row in matrix.get("include") or [] if isinstance(row, dict))]
        releases: list[str] = []
        for row in rows:
            for key, value in row.items():
                if isinstance(key, str) and _MATRIX_KEY.match(key):
                    releases += [str(v) for v in (value if isinstance(value, list) else [value])]
        # An `include` row often repeats a release to add values to it: list each once.
        _matrix(reader, list(dict.fromkeys(releases)), f"{reader._label(path)} jobs.{job} matrix")


def _matrices(text: str) -> dict[Any, Any] | None:
    """A workflow's ``jobs``, each with its ``strategy.matrix`` alone built; or None.

    libyaml composes the document (in C) and only each job's matrix is made into Python
    values: the steps, most of a workflow, are never built. None where that reading does
    not answer as the whole document's would (no libyaml, a merge key ``<<`` on the way,
    a YAML error): the caller reads the whole document. A value the safe loader refuses
    outside the matrices (an unknown tag) goes unremarked here.
    """
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", None)
    if loader_class is None:
        return None
    loader = loader_class(text)
    try:
        jobs = _member(loader.get_single_node(), "jobs")
        if not isinstance(jobs, yaml.MappingNode):
            return None if jobs is False else {}
        found: dict[Any, Any] = {}
        for name, body in jobs.value:
            strategy = _member(body, "strategy")
            matrix = _member(strategy, "matrix")
            if False in (strategy, matrix):
                return None
            built = {} if matrix is None else {"matrix": loader.construct_document(matrix)}
            found[loader.construct_document(name)] = {"strategy": built}
        return found
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def _member(node: Any, key: str) -> Any:
    """The value node of ``key`` in a YAML mapping node (the last, as the loader keeps).

    None where ``node`` is not a mapping or lacks the key; False where it merges
    another mapping in (``<<``), which only the whole document's reading resolves.
    """
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    found = None
    for name, value in node.value:
        if name.tag == "tag:yaml.org,2002:merge":
            return False
        if isinstance(name, yaml.ScalarNode) and name.value == key:
            found = value
    return found


def _matrix(reader: Reader, values: list[str], where: str) -> None:
    """The range a list of matrix releases spans (``nightly`` and the like: the newest)."""
    found: list[tuple[Version, Version, bool]] = []  # (floor, top, top exclusive)
    open_top = False
    for value in values:
        try:
            version = release(value)
        except InvalidVersion:
            open_top = True  # "nightly", "latest", "stable": the newest release
            continue
        parts = list(version.release)
        if len(parts) <= 2:  # "1.13": any 1.13.x
            parts = [*parts, 0][:2]
            parts[-1] += 1
            found.append((version, Version(".".join(map(str, parts))), True))
        else:
            found.append((version, version, False))
    if not found:
        return
    floor = min(f[0] for f in found)
    top, exclusive = max(((f[1], f[2]) for f in found), key=lambda t: (t[0], not t[1]))
    listed = ", ".join(values)
    reader._add(
        "torch",
        floor,
        f"{where}: {listed}",
        "",
        None if open_top else top,
        exclusive,
    )
