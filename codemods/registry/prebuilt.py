"""The shipped registry's rules as one module of plain data, read instead of the topics.

Building :data:`codemods.registry.REGISTRY` imports the twenty topic modules and makes
each entry, about 4 ms of a commit hook's first call (issue 44); importing one module
of constants costs under 1 ms (its cached bytecode is one ``marshal`` load).
``python -m codemods.registry.prebuilt`` writes :data:`TABLE` from the topic modules:
each rule's fields, in :class:`~codemods.registry.model.Rule`'s order, the enumerations
as their values and the examples as pairs, with the size of every source file of the
registry. :func:`shipped` reads it while those sizes hold, so an edited entry is built
from its module until the table is written again (the suite fails until then).

Example:
    >>> from codemods.registry import REGISTRY
    >>> rows = [row(rule) for rule in REGISTRY.rules]
    >>> tuple(from_row(r) for r in rows) == REGISTRY.rules
    True
"""

from __future__ import annotations

import os

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import ModuleType

FOLDER = os.path.dirname(os.path.abspath(__file__))
#: The module this one writes (not hand-edited: ruff leaves it alone).
TABLE = os.path.join(FOLDER, "prebuilt_rules.py")
#: How each field that is not plain data is made from its value in a row.
_MADE = {
    "framework": Framework,
    "kind": ChangeKind,
    "fix": FixSafety,
    "example": Example._make,
    "cases": lambda cases: tuple(map(Example._make, cases)),
}
_HEADER = '''\
"""The shipped registry's rules as plain data (:mod:`codemods.registry.prebuilt`).

Written by ``python -m codemods.registry.prebuilt``; do not edit.
"""

'''


def row(rule: Rule) -> tuple:
    """``rule``'s fields as plain data: the enumerations' values, examples as pairs."""
    return tuple(_plain(value) for value in rule)


def from_row(values: Iterable) -> Rule:
    """The rule :func:`row` gave ``values`` for."""
    made = (
        _MADE[name](value) if name in _MADE else value for name, value in zip(Rule._fields, values)
    )
    return Rule._make(made)


def sources(folder: str = FOLDER) -> dict[str, int]:
    """The size in bytes of each source file of the registry but the table, by name."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".py") and n != "prebuilt_rules.py")
    return {name: os.path.getsize(os.path.join(folder, name)) for name in names}


def text(rules: Iterable[Rule], sizes: dict[str, int]) -> str:
    """The source of :data:`TABLE` for ``rules``, read while the files keep ``sizes``."""
    lines = [_HEADER, f"FIELDS = {Rule._fields!r}\n", f"SIZES = {sizes!r}\n", "ROWS = (\n"]
    lines += [f"    {row(rule)!r},\n" for rule in rules]
    return "".join([*lines, ")\n"])


def shipped(folder: str = FOLDER, table: ModuleType | None = None) -> tuple[Rule, ...] | None:
    """The rules of :data:`TABLE`; None where it is missing or older than a source file.

    ``table`` is the imported table (default: :data:`TABLE`'s module), and ``folder``
    holds the source files it names.
    """
    if table is None:
        try:
            from codemods.registry import prebuilt_rules as table
        except ImportError:
            return None
    if table.FIELDS != Rule._fields:
        return None
    for name, size in table.SIZES.items():
        try:
            if os.stat(os.path.join(folder, name)).st_size != size:
                return None
        except OSError:  # sources not shipped (bytecode alone): nothing to compare
            return None
    return tuple(map(from_row, table.ROWS))


def _plain(value: object) -> object:
    if isinstance(value, (Framework, ChangeKind, FixSafety)):
        return value.value
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return value


if __name__ == "__main__":
    from codemods.registry import built

    with open(TABLE, "w", encoding="utf-8") as file:
        file.write(text(built(), sources()))
