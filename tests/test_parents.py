""":func:`codemods.parents.parent_map` gives libcst's ``ParentNodeProvider`` map exactly.

The engine asks for parents through it instead of the provider (ten times quicker), so
the two must agree on every node of every fixture, rule example and realistic module.
"""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider

from codemods.parents import parent_map
from codemods.registry import REGISTRY
from tests import migrate_fixtures
from tests.realistic_tree import build_tree


def _sources() -> list:
    params = [pytest.param(p.values[0], id=p.id) for p in migrate_fixtures.sources(fix=True)]
    for rule in REGISTRY:
        for index, example in enumerate([rule.example, *rule.cases]):
            for side, text in (("before", example.before), ("after", example.after)):
                params.append(pytest.param(text.encode(), id=f"{rule.code}-{index}-{side}"))
    tree = build_tree(files=12)
    params += [pytest.param(source, id=str(path)) for path, source in sorted(tree.items())]
    return params


def _assert_same_parents(source: bytes | str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider)
    got = parent_map(module)
    assert got.keys() == expected.keys()
    assert all(got[node] is parent for node, parent in expected.items())


@pytest.mark.parametrize("source", _sources())
def test_parent_map_is_libcsts(source: bytes) -> None:
    _assert_same_parents(source)


@pytest.mark.parametrize(
    "code",
    [
        "@decorator\nclass A(Base, metaclass=M):\n    x: int = 1\n",
        "async def f(*a, b=1, **k):\n    async with x as (y, z):\n        await g(y if z else 0)\n",
        "match p:\n    case [1, *rest] | {'k': v} if v:\n        pass\n",
        "x = f'{a!r:>{width}}' + b'' + (lambda q=1: q)(2)\n",
        "for i in range(3):\n    pass\nelse:\n    del x[1:2, ...]\n",
        "try:\n    pass\nexcept* (A, B) as e:\n    raise\nfinally:\n    global g\n",
    ],
)
def test_parent_map_on_every_kind_of_statement(code: str) -> None:
    _assert_same_parents(code)
