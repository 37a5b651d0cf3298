"""The registry's named tuples, made without ``typing``.

``typing`` costs a commit hook's start about 3 ms of CPU to import, and
``typing.NamedTuple`` compiles each field's annotation given as a string when the class
is made; the registry's entries are made at every start that reads a rule.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any


class _NamedTupleMeta(type):
    """Makes a ``collections.namedtuple`` class from a class body, as ``typing`` does.

    Its fields are the body's annotations, in order, and their values the defaults; the
    annotations stay strings (``from __future__ import annotations``): none is compiled.
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        if not bases:  # this module's NamedTuple itself
            return super().__new__(mcs, name, bases, namespace)
        fields = list(namespace.get("__annotations__", {}))
        defaults = [namespace[field] for field in fields if field in namespace]
        if any(field not in namespace for field in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        made = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
        for key, value in namespace.items():
            if key not in fields and key not in ("__module__", "__qualname__"):
                setattr(made, key, value)
        return made


class NamedTuple(metaclass=_NamedTupleMeta):
    """A base that makes its subclass a named tuple, as ``typing.NamedTuple`` does.

    Example:
        >>> class Pair(NamedTuple):
        ...     left: int
        ...     right: int = 0
        ...
        ...     def total(self) -> int:
        ...         return self.left + self.right
        >>> Pair(1), Pair(1, 2).total(), Pair(1)._replace(right=5), isinstance(Pair(1), tuple)
        (Pair(left=1, right=0), 3, Pair(left=1, right=5), True)
    """
