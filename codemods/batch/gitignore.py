"""Which walked paths a git repository's ``.gitignore`` files ignore, without running git.

A directory walk skips what git ignores, as ruff's does: the ``.gitignore`` of each
directory from the repository's root down, and ``.git/info/exclude``. Patterns follow
git's rules: the last one that matches decides, ``!`` re-includes, a trailing ``/``
matches directories only, a pattern with a ``/`` before its end is anchored to its
file's directory, one without matches a name at any depth, ``*`` and ``?`` stop at
``/``, ``**`` crosses directories. A file inside an ignored directory is never reached,
since the walk does not enter it (git cannot re-include it either). The user's global
excludes file (``core.excludesFile``) is not read. Outside a git repository nothing is
ignored.

Example:
    >>> rule = _rule("build/")
    >>> rule.matches("src/build", is_dir=True), rule.matches("src/build", is_dir=False)
    (True, False)
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from codemods.records import Frozen


class _Rule(Frozen):
    """One pattern line of a ``.gitignore``, for paths relative to its directory."""

    __slots__ = _fields = ("regex", "negated", "directories_only")

    regex: re.Pattern[str]
    negated: bool
    directories_only: bool

    def __init__(self, regex: re.Pattern[str], negated: bool, directories_only: bool) -> None:
        self._set(regex=regex, negated=negated, directories_only=directories_only)

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.directories_only and not is_dir:
            return False
        return self.regex.fullmatch(relative) is not None


def _translate(pattern: str) -> str:
    """The regular expression of a gitignore glob (already stripped of ``!`` and ``/``)."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _rule(line: str) -> _Rule | None:
    """The rule of one ``.gitignore`` line (None: a blank line or a comment)."""
    line = line.rstrip("\n").rstrip("\r")
    # Trailing spaces are dropped unless a backslash keeps the last one.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    directories_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    regex = _translate(line)
    if not anchored:
        regex = "(?:.*/)?" + regex
    return _Rule(re.compile(regex, re.DOTALL), negated, directories_only)


@functools.lru_cache(maxsize=1024)
def _rules_of(directory: Path) -> tuple[_Rule, ...]:
    """The rules of ``directory``'s ``.gitignore`` (none where it has none)."""
    return _read(directory / ".gitignore")


def _read(path: Path) -> tuple[_Rule, ...]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(rule for rule in (_rule(line) for line in text.splitlines()) if rule)


def repository_root(path: Path) -> Path | None:
    """The top directory of the git work tree holding ``path`` (None: not in one)."""
    directory = Path(os.path.abspath(path))
    if not directory.is_dir():
        directory = directory.parent
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


class GitIgnore:
    """The ``.gitignore`` rules of one repository, asked about paths inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = os.path.join(os.path.abspath(root), "")
        self._info = _read(root / ".git" / "info" / "exclude")
        self._levels: dict[str, tuple[tuple[int, tuple[_Rule, ...]], ...]] = {}
        self._directories: dict[str, str | None] = {}  # a walk's, relative to the root

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether git ignores ``path`` (its parent directories are not looked at)."""
        absolute = os.path.abspath(path)
        if not absolute.startswith(self._prefix):
            return False
        return self._ignored(absolute[len(self._prefix) :].replace(os.sep, "/"), is_dir)

    def ignored_in(self, directory: str, name: str, is_dir: bool) -> bool:
        """:meth:`ignored` of the entry ``name`` of a walk's ``directory``.

        The directory is made relative to the root once, not with each of its files.
        """
        inside = self._directories.get(directory, self)
        if inside is self:
            absolute = os.path.join(os.path.abspath(directory), "")
            inside = self._directories[directory] = (
                absolute[len(self._prefix) :].replace(os.sep, "/")
                if absolute.startswith(self._prefix)
                else None
            )
        return inside is not None and self._ignored(inside + name, is_dir)  # type: ignore[operator]

    def _ignored(self, relative: str, is_dir: bool) -> bool:
        if not relative or relative == ".git" or relative.startswith(".git/"):
            return False
        verdict = None
        # From the root's rules (info/exclude first, the lowest priority) down to the
        # parent directory's: a deeper .gitignore wins, and in each the last line.
        for cut, rules in self._chain(relative.rpartition("/")[0]):
            tail = relative[cut:]
            for rule in rules:
                if rule.matches(tail, is_dir):
                    verdict = not rule.negated
        return bool(verdict)

    def _chain(self, directory: str) -> tuple[tuple[int, tuple[_Rule, ...]], ...]:
        """The rules that apply in ``directory`` (relative, ``/``-separated), root first.

        Each comes with the length of its own directory's prefix in a relative path.
        """
        chain = self._levels.get(directory)
        if chain is None:
            if directory:
                parent, _, _ = directory.rpartition("/")
                own = _rules_of(self.root / directory)
                chain = self._chain(parent) + (((len(directory) + 1, own),) if own else ())
            else:
                own = _rules_of(self.root)
                chain = ((0, self._info),) + (((0, own),) if own else ())
            self._levels[directory] = chain
        return chain


def ignorer(top: Path) -> GitIgnore | None:
    """A :class:`GitIgnore` for walking ``top``, or None outside a git repository."""
    root = repository_root(top)
    return GitIgnore(root) if root is not None else None
