"""A plain class's repr and equality, written as a dataclass writes them.

The one-file lint (a commit hook's) creates its classes at every start, and a
dataclass costs about half a millisecond to create (``dataclasses`` compiles the
source of each method it adds), on top of importing ``dataclasses`` and ``inspect``
(about 4 ms). The records on that path are named tuples where they are immutable
values, and plain classes with :class:`Record` where they are built up in place.
"""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """Repr and equality from the attributes ``_fields`` names, like a dataclass's.

    Equal: the same class and equal attributes, in order; unhashable, as a mutable
    dataclass is.

    Example:
        >>> class Point(Record):
        ...     _fields = ("x", "y")
        ...
        ...     def __init__(self, x: int, y: int = 0) -> None:
        ...         self.x, self.y = x, y
        >>> Point(1), Point(1) == Point(1, 0), Point(1) == Point(2)
        (Point(x=1, y=0), True, False)
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    __hash__ = None  # type: ignore[assignment]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]
