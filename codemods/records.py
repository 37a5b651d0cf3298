"""A plain class's repr and equality, written as a dataclass writes them.

The one-file lint (a commit hook's) creates its classes at every start, and a
dataclass costs about half a millisecond to create (``dataclasses`` compiles the
source of each method it adds), on top of importing ``dataclasses`` and ``inspect``
(about 4 ms); a named tuple costs about a quarter of a millisecond (``typing``
compiles each field's annotation, ``collections`` the constructor). The records on
that path are plain classes: :class:`Frozen` for immutable values, :class:`Record`
for those built up in place.
"""

from __future__ import annotations

#: ``typing`` is for the checkers alone: importing it costs a commit hook's start about
#: 3 ms of CPU, which its answer for a file that names nothing legacy does without
#: (codemods/cli/plain_file.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
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


class Frozen(Record):
    """An immutable :class:`Record`, hashed by its attributes (a frozen dataclass's ways).

    A subclass names its attributes in ``__slots__`` and ``_fields`` and sets them in
    ``__init__`` with :meth:`_set`; :meth:`replace` copies it with some changed.

    Example:
        >>> class Span(Frozen):
        ...     __slots__ = _fields = ("floor", "top")
        ...
        ...     def __init__(self, floor: int, top: int | None = None) -> None:
        ...         self._set(floor=floor, top=top)
        >>> span = Span(1)
        >>> span.replace(top=3), hash(span) == hash(Span(1, None))
        (Span(floor=1, top=3), True)
        >>> span.floor = 2
        Traceback (most recent call last):
        ...
        AttributeError: cannot assign to field 'floor': a Span is frozen
    """

    __slots__ = ()

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (what ``dataclasses.replace`` does for a dataclass)."""
        return type(self)(**{**dict(zip(self._fields, self._values())), **changes})

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a {type(self).__name__} is frozen")

    def __reduce__(self) -> tuple[Any, ...]:
        # Slots are restored with setattr, which a frozen record refuses: rebuild it instead.
        return type(self), self._values()
