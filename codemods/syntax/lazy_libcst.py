"""libcst, loaded on first use: lint's ``ast`` path never pays for its import.

Every behaviour module holds both halves of its rule (the libcst one and the ``ast`` one)
and so names libcst at its top. Importing libcst costs as much as linting a long file on
``ast``; a file the ``ast`` detector decides needs none of it. ``cst`` here is libcst
itself, imported the first time an attribute of it is read; a module-level statement
must not read one, or every lint run loads libcst again (``tests/test_lazy_libcst.py``
checks).

Not :class:`importlib.util.LazyLoader`, which did this before: its stand-in sat in
``sys.modules`` as ``libcst``, and a later ``from libcst.metadata import ...``, which
ran libcst's body in the middle of importing ``libcst.metadata``, left that package
without some of its submodules' attributes (``libcst.metadata.scope_provider``: an
internal error in libcst's own unused-import pass, in a run where another file was
fixed first). Here libcst is imported as any import does, on first use.

Example:
    >>> from codemods.syntax.lazy_libcst import cst
    >>> cst.parse_expression("f(x)").func.value
    'f'
"""

from __future__ import annotations

import sys
from importlib import import_module

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["cst"]


class _OnFirstRead(type(sys)):  # type: ignore[misc]  # ModuleType, without ``types``
    """A module's stand-in that imports it when one of its attributes is first read.

    It then holds the module's names, so that later reads are a module's plain reads;
    a name the module gains later (a submodule imported since) is looked up again. The
    stand-in is never in ``sys.modules``: ``import libcst`` anywhere gets libcst itself.
    """

    def __getattr__(self, name: str) -> object:
        module = import_module(self.__name__)
        self.__dict__.update(vars(module))
        return getattr(module, name)


def _lazy(name: str) -> ModuleType:
    """``name`` itself where it is imported already, else its :class:`_OnFirstRead`."""
    return sys.modules.get(name) or _OnFirstRead(name)


cst = _lazy("libcst")
