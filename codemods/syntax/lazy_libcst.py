"""libcst, loaded on first use: lint's ``ast`` path never pays for its import.

Every behaviour module holds both halves of its rule (the libcst one and the ``ast`` one)
and so names libcst at its top. Importing libcst costs as much as linting a long file on
``ast``; a file the ``ast`` detector decides needs none of it. ``cst`` here is libcst
itself, whose body runs the first time an attribute of it is read
(:class:`importlib.util.LazyLoader`); a module-level statement must not read one, or every
lint run loads libcst again (``tests/test_lazy_libcst.py`` checks).

Example:
    >>> from codemods.syntax.lazy_libcst import cst
    >>> cst.parse_expression("f(x)").func.value
    'f'
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["cst"]


def _lazy(name: str) -> ModuleType:
    """``name``, imported now if it was already, else set up to load when first read."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot find {name}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


cst = _lazy("libcst")
