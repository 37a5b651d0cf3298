"""``[tool.fsdp-compat]`` in the nearest ``pyproject.toml``, merged with the command line.

Example ``pyproject.toml``::

    [tool.fsdp-compat]
    select = ["FSDP1", "FSDP2"]
    ignore = ["FSDP206"]
    exclude = ["third_party/*", "legacy_*.py"]
    target-torch = "2.2..2.13"   # or one release: "2.2"
    target-lightning = "2.1"
    fsdp2-bridge = true          # FSDP401 may use compat's FSDP1 bridge (default: false)

    [tool.fsdp-compat.per-file-ignores]
    "tests/*" = ["FSDP1"]

Command-line flags override the file (``--extend-select`` adds to whichever ``select``
applies). A target set neither here nor on the command line is the oldest release the
file's project declares (:mod:`codemods.cli.targets`). ``exclude`` adds to the built-in
excludes (``.git``, virtual environments, ``build``, ``dist``, ...); a file named on the
command line is always checked.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from codemods.records import Frozen
from codemods.release_numbers import release
from codemods.releases import RangeError, Span, parse_span

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

    from packaging.version import Version

SECTION = "fsdp-compat"
_LISTS = ("select", "extend-select", "ignore", "exclude")
_VERSIONS = ("target-torch", "target-lightning")
_FLAGS = ("fsdp2-bridge",)
_KNOWN = {*_LISTS, *_VERSIONS, *_FLAGS, "per-file-ignores"}


#: A rule selector's shape: the linter's letters, then some digits of a code.
@functools.cache
def _selector() -> re.Pattern[str]:
    return re.compile(r"[A-Z]+[0-9]*")


class ConfigError(ValueError):
    """The configuration cannot be used; the message says where and why."""


class Config(Frozen):
    """The ``[tool.fsdp-compat]`` table.

    Attributes:
        path: The ``pyproject.toml`` it came from (None: no file, the defaults).
        select: Codes or prefixes to report (empty: every rule that is not opt-in).
        extend_select: Codes or prefixes added to ``select``.
        ignore: Codes or prefixes never reported.
        exclude: Globs of paths (relative to the file's directory) or names not walked.
        per_file_ignores: ``(glob, codes)`` pairs: codes ignored in matching files.
        target_torch: The torch releases the code must run on (a release or a range,
            as written; :func:`codemods.releases.parse_span` reads it).
        target_lightning: The same for Lightning.
        fsdp2_bridge: Whether FSDP401 may rewrite a call to ``compat``'s FSDP1 bridge
            (None: not set here).
    """

    __slots__ = _fields = (
        "path",
        "select",
        "extend_select",
        "ignore",
        "exclude",
        "per_file_ignores",
        "target_torch",
        "target_lightning",
        "fsdp2_bridge",
    )

    path: Path | None
    select: tuple[str, ...]
    extend_select: tuple[str, ...]
    ignore: tuple[str, ...]
    exclude: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    target_torch: str | None
    target_lightning: str | None
    fsdp2_bridge: bool | None

    def __init__(
        self,
        path: Path | None = None,
        select: tuple[str, ...] = (),
        extend_select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        exclude: tuple[str, ...] = (),
        per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (),
        target_torch: str | None = None,
        target_lightning: str | None = None,
        fsdp2_bridge: bool | None = None,
    ) -> None:
        self._set(
            path=path,
            select=select,
            extend_select=extend_select,
            ignore=ignore,
            exclude=exclude,
            per_file_ignores=per_file_ignores,
            target_torch=target_torch,
            target_lightning=target_lightning,
            fsdp2_bridge=fsdp2_bridge,
        )

    @property
    def root(self) -> Path:
        """The directory relative paths are matched from."""
        return self.path.parent if self.path else Path.cwd()

    def ignored_in(self, path: str | Path) -> tuple[str, ...]:
        """The codes ``per-file-ignores`` ignores in ``path``."""
        if not self.per_file_ignores:
            return ()
        relative = _relative(Path(path), self.root)
        codes: list[str] = []
        for pattern, ignored in self.per_file_ignores:
            if _matches(relative, pattern):
                codes.extend(ignored)
        return tuple(codes)


def _relative(path: Path, root: Path) -> str:
    # abspath, not resolve: a link (even one in a loop) is matched where it sits.
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return path.as_posix()


def _matches(relative: str, pattern: str) -> bool:
    """``pattern`` matches the path, or its file name (``legacy_*.py``)."""
    name = relative.rsplit("/", 1)[-1]
    return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)


def excluded(path: Path, config: Config) -> bool:
    """Whether ``exclude`` leaves ``path`` (a walked file or directory) out."""
    relative = _relative(path, config.root)
    return any(_matches(relative, pattern) for pattern in config.exclude)


def find(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has ``[tool.fsdp-compat]``."""
    directory = start.resolve()
    if not directory.is_dir():
        directory = directory.parent
    for candidate in (directory, *directory.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() and f"tool.{SECTION}" in path.read_text("utf-8", errors="replace"):
            return path
    return None


def load(path: Path | None) -> Config:
    """Read the ``[tool.fsdp-compat]`` table of ``path`` (None: the defaults).

    Raises:
        ConfigError: For a file that does not parse, an unknown key, or a value of the
            wrong type; the message names the file and the key.
    """
    if path is None:
        return Config()
    # Imported here: most runs (a tree without a configuration) never need it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.9 and 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc}") from exc
    table = data.get("tool", {}).get(SECTION, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{SECTION}] must be a table")
    unknown = sorted(set(table) - _KNOWN)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {unknown[0]!r} in [tool.{SECTION}]; "
            f"known keys: {', '.join(sorted(_KNOWN))}"
        )
    values: dict[str, Any] = {"path": path}
    for key in _LISTS:
        if key in table:
            strings = _strings(path, key, table[key])
            if key != "exclude":
                strings = check_selectors(strings, f"{path}: {key}")
            values[key.replace("-", "_")] = strings
    for key in _VERSIONS:
        if key in table:
            values[key.replace("-", "_")] = _version(path, key, table[key])
    for key in _FLAGS:
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{path}: {key} must be true or false, got {table[key]!r}")
            values[key.replace("-", "_")] = table[key]
    ignores = table.get("per-file-ignores", {})
    if not isinstance(ignores, dict):
        raise ConfigError(f"{path}: per-file-ignores must be a table of glob = [codes]")
    values["per_file_ignores"] = tuple(
        (
            pattern,
            check_selectors(
                _strings(path, f"per-file-ignores.{pattern}", codes),
                f"{path}: per-file-ignores.{pattern}",
            ),
        )
        for pattern, codes in ignores.items()
    )
    return Config(**values)


def _strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    # A bare string is refused, as ruff refuses it: ``ignore = "FSDP101"`` is a typo
    # for a list more often than not, and a silent reading of it hides the mistake.
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(
            f"{path}: {key} must be a list of strings, got {value!r}"
            + (f' (write {key} = ["{value}"])' if isinstance(value, str) else "")
        )
    return tuple(value)


def check_selectors(codes: Sequence[str], where: str) -> tuple[str, ...]:
    """``codes`` (rule codes or prefixes), upper-cased, each checked against the registry.

    A selector is a rule code (``FSDP101``) or a prefix of one made of the linter's
    letters and leading digits (``FSDP``, ``FSDP1``, ``FSDP10``).

    Raises:
        ConfigError: For a selector no rule matches (``FSDP999``, ``E501``); the
            message says where it was given and lists the valid prefixes.

    Example:
        >>> check_selectors(["fsdp1", "FSDP101"], "--select")
        ('FSDP1', 'FSDP101')
        >>> check_selectors(["E501"], "--select")
        Traceback (most recent call last):
        ...
        codemods.cli.config.ConfigError: --select: unknown rule selector 'E501'; ...
    """
    from codemods.cli.output import TOOL_RULES  # not for runs without selectors
    from codemods.registry import REGISTRY

    known = [rule.code for rule in REGISTRY] + [c for c in TOOL_RULES if c[-1].isdigit()]
    checked = []
    for raw in codes:
        code = raw.strip().upper()
        if not (_selector().fullmatch(code) and any(c.startswith(code) for c in known)):
            prefixes = sorted({c[: len(c) - 2] for c in known})
            raise ConfigError(
                f"{where}: unknown rule selector {raw!r}; a selector is a rule code "
                f"or a prefix of one: {', '.join(['FSDP', *prefixes])} "
                "(`python -m codemods.lint --explain` lists every rule)"
            )
        checked.append(code)
    return tuple(checked)


def _version(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(
            f'{path}: {key} must be a string, a release like "2.2" or a range like '
            f'"2.4..2.13", got {value!r}'
        )
    check_version(value, key, f"{path}: ")
    return value.strip()


def check_version(text: str, option: str, where: str = "") -> Span:
    """A release or range (``--target-torch 2.2``, ``2.4..2.13``, ``2.4..``), read.

    Raises:
        ConfigError: If it is not a release or a range of releases, or a bound is newer
            than any release this version of fsdp-compat knows
            (:func:`check_known_release`).
    """
    try:
        span = parse_span(text, option)
    except RangeError as exc:
        raise ConfigError(f"{where}{exc}") from exc
    framework = option.rsplit("-", 1)[-1]
    for bound in (span.floor, span.top):
        if bound is not None:
            check_known_release(framework, bound, f"{where}{option}")
    return span


@functools.cache  # asked for each bound of each range a run reads: the registry's, fixed
def newest_known(framework: str) -> Version:
    """The newest ``torch`` or ``lightning`` release the registry knows anything about.

    The releases it was measured on, and every version a rule names.

    Example:
        >>> newest_known("torch") >= release("2.13")
        True
    """
    from codemods.registry import REGISTRY, Framework
    from codemods.registry.deprecations import LIGHTNING_RELEASES, TORCH_RELEASES

    lightning = framework == "lightning"
    versions = [release(v) for v in (LIGHTNING_RELEASES if lightning else TORCH_RELEASES)]
    for rule in REGISTRY:
        if (rule.version_framework is Framework.LIGHTNING) == lightning:
            versions += [release(v) for v in (rule.introduced, rule.deprecated, rule.removed) if v]
    return max(versions)


def check_known_release(framework: str, version: str | Version, where: str) -> None:
    """Refuse a target newer than any release of ``framework`` this tool knows.

    Such a target is a typo (``2.99``, ``9.0``) or a release this version of
    fsdp-compat cannot know the changes of; a later release of the same minor
    (``2.13.5`` beside a known ``2.13.0``) is accepted. ``where`` names the option or
    the file and key, for the message.

    Raises:
        ConfigError: For such a target.

    Example:
        >>> check_known_release("torch", "2.2", "--target-torch")
        >>> check_known_release("torch", "9.0", "--target-torch")
        Traceback (most recent call last):
        ...
        codemods.cli.config.ConfigError: --target-torch: torch 9.0 is newer than any release ...
    """
    newest = newest_known(framework)
    wanted = release(str(version))
    if wanted.release[:2] > newest.release[:2]:
        title = "Lightning" if framework == "lightning" else "torch"
        raise ConfigError(
            f"{where}: {title} {version} is newer than any release this fsdp-compat "
            f"knows (the newest is {title} {newest.major}.{newest.minor}); "
            "check the number, or upgrade fsdp-compat"
        )


def start_of(paths: Sequence[str]) -> Path:
    """Where to look for the configuration: the first path given, or the current directory."""
    for raw in paths:
        if raw != "-":
            return Path(raw)
    return Path.cwd()
