"""Release numbers (``2.4``, ``1.12.1``) read and compared without ``packaging``.

The releases a rule names and those a range is given as are plain numbers; a
one-file lint (a commit hook's) compares them at every start, and importing
``packaging.version`` (which imports ``typing`` and compiles its version pattern)
costs it about 3 to 6 ms of CPU. :class:`Release` orders as ``packaging``'s
``Version`` orders the same text (``2.0`` equals ``2``), and compares with a
``Version`` too (a declaration's, read with ``packaging``), through one.

Example:
    >>> release("1.12") < release("1.12.1") < release("2"), release("2.0") == release("2")
    (True, True)
    >>> from packaging.version import Version
    >>> release("2.4") > Version("2.4rc1"), Version("2.4.0") == release("2.4")
    (True, True)
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from packaging.version import Version


class Release:
    """A release number: its parts, ordered as ``packaging`` orders them.

    Attributes:
        release: The numbers, as written (``(1, 12, 0)`` for ``1.12.0``).
    """

    __slots__ = ("release", "_key", "_version")

    def __init__(self, parts: tuple[int, ...]) -> None:
        self.release = parts
        key = list(parts)
        while key and key[-1] == 0:  # 2.0 is 2, as packaging has it
            key.pop()
        self._key = tuple(key)
        self._version: Version | None = None

    @property
    def base_version(self) -> str:
        """The release as text, as ``Version.base_version`` writes it."""
        return str(self)

    @property
    def major(self) -> int:
        """The first number."""
        return self.release[0]

    @property
    def minor(self) -> int:
        """The second number (0 where there is none)."""
        return self.release[1] if len(self.release) > 1 else 0

    def __str__(self) -> str:
        return ".".join(map(str, self.release))

    def __repr__(self) -> str:
        return f"<Release('{self}')>"

    def __hash__(self) -> int:
        return hash(self._key)

    def _other(self, other: object) -> tuple[object, object] | None:
        """The two keys to compare with a ``Version``: both as ``packaging`` versions."""
        versions = sys.modules.get("packaging.version")  # no Version to meet before it loads
        if versions is not None and isinstance(other, versions.Version):
            if self._version is None:
                self._version = versions.Version(str(self))
            return self._version, other
        return None

    # Two releases compare by their keys at once: a run asks every rule's releases.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is Release:
            return self._key == other._key  # type: ignore[attr-defined]
        keys = self._other(other)
        return NotImplemented if keys is None else keys[0] == keys[1]

    def __lt__(self, other: object) -> bool:
        if other.__class__ is Release:
            return self._key < other._key  # type: ignore[attr-defined]
        keys = self._other(other)
        return NotImplemented if keys is None else keys[0] < keys[1]  # type: ignore[operator]

    def __le__(self, other: object) -> bool:
        if other.__class__ is Release:
            return self._key <= other._key  # type: ignore[attr-defined]
        keys = self._other(other)
        return NotImplemented if keys is None else keys[0] <= keys[1]  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        if other.__class__ is Release:
            return self._key > other._key  # type: ignore[attr-defined]
        keys = self._other(other)
        return NotImplemented if keys is None else keys[0] > keys[1]  # type: ignore[operator]

    def __ge__(self, other: object) -> bool:
        if other.__class__ is Release:
            return self._key >= other._key  # type: ignore[attr-defined]
        keys = self._other(other)
        return NotImplemented if keys is None else keys[0] >= keys[1]  # type: ignore[operator]


def release(text: str) -> Release | Version:
    """``text``'s release with any pre-, post-, dev- or local part dropped.

    What ``Version(Version(text).base_version)`` gives: a plain release is read here,
    anything else by ``packaging`` (an epoch's ``1!2.0`` stays a ``Version``).

    Raises:
        packaging.version.InvalidVersion: If ``text`` is not a version.

    Example:
        >>> release("1.12.0"), release(" v2.4 "), release("2.4.0rc1")
        (<Release('1.12.0')>, <Release('2.4')>, <Release('2.4.0')>)
    """
    # Numbers and dots, as packaging reads them (a ``v`` and spaces around allowed).
    plain = text.strip()
    parts = (plain[1:] if plain[:1] in ("v", "V") else plain).split(".")
    if all(part.isdigit() and part.isascii() for part in parts):
        return Release(tuple(map(int, parts)))
    from packaging.version import Version

    version = Version(text)
    return Version(version.base_version) if version.epoch else Release(version.release)
