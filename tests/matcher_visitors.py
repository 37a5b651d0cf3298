"""libcst's import visitors, the oracles of the import tests, built at a class's cost once.

Every ``MatcherDecoratableTransformer`` or ``MatcherDecoratableVisitor`` that libcst
builds (``AddImportsVisitor``, the ``GatherImportsVisitor`` inside it,
``RemoveImportsVisitor``, ``RemovedNodeVisitor``) looks at each of the several hundred
attributes of its class for methods decorated with ``@visit`` or ``@leave`` matchers:
about 15 ms an instance, most of ``tests/test_import_adding.py``'s time. The answer
depends on the class alone, and for these classes it is that there are none.
:func:`gathered_once` asks libcst once per class and, where a class has no such method,
answers the same empty mapping for its later instances; a class that has some is
asked every time, as libcst does. The visitors then visit and transform as they did.
"""

from __future__ import annotations

from typing import Any, Callable

from libcst.matchers import _visitors

#: The two functions of libcst that gather a new visitor's decorated methods.
GATHERERS = ("_gather_constructed_visit_funcs", "_gather_constructed_leave_funcs")


def gathered_once(gather: Callable[[Any], dict]) -> Callable[[Any], dict]:
    """``gather``, asked once for each class that turns out to have nothing to gather."""
    without: set[type] = set()

    def gathered(obj: Any) -> dict:
        if type(obj) in without:
            return {}
        found = gather(obj)
        if not found:
            without.add(type(obj))
        return found

    return gathered


#: What ``conftest.quick_matcher_visitors`` puts in libcst's place, for one test.
QUICK = {name: gathered_once(getattr(_visitors, name)) for name in GATHERERS}
