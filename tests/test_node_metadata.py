"""The engine's own parents, positions and expression contexts are libcst's exactly.

The engine asks for parents through :func:`codemods.parents.parent_map` instead of
``ParentNodeProvider`` (ten times quicker), for positions through
:class:`codemods.positions.Positions` instead of ``PositionProvider`` (five times), and
gives libcst's scopes the contexts of :func:`codemods.contexts.expression_contexts`
instead of ``ExpressionContextProvider``'s (seven times), so each pair must agree on
every node of every fixture, rule example and realistic module, and of one module for
each kind of statement and line break.
"""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from codemods.contexts import expression_contexts, prime
from codemods.parents import parent_map
from codemods.positions import Positions
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


def _assert_same_positions(source: bytes | str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = Positions(module)
    assert len(expected) > 1
    assert [got[node] for node in expected] == list(expected.values())


def _assert_same_contexts(source: bytes | str) -> None:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(ExpressionContextProvider)
    assert expression_contexts(module) == dict(expected)


@pytest.mark.parametrize("source", _sources())
def test_expression_contexts_are_libcsts(source: bytes) -> None:
    _assert_same_contexts(source)


def test_primed_scopes_are_libcsts() -> None:
    """Scopes built on the primed contexts resolve every name as libcst's own do."""
    source = max(build_tree(files=12).values(), key=len)
    primed = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    prime(primed)
    plain = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    assert ExpressionContextProvider in primed._metadata  # given, not computed
    names = []
    for wrapper in (primed, plain):
        scopes = wrapper.resolve(ScopeProvider)
        names.append(
            [
                (node.value, sorted(q.name for q in scope.get_qualified_names_for(node)))
                for node, scope in scopes.items()
                if isinstance(node, cst.Name) and scope is not None
            ]
        )
    assert names[0] == names[1] and len(names[0]) > 100


@pytest.mark.parametrize("source", _sources())
def test_parent_map_is_libcsts(source: bytes) -> None:
    _assert_same_parents(source)


@pytest.mark.parametrize("source", _sources())
def test_positions_are_libcsts(source: bytes) -> None:
    _assert_same_positions(source)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize(
    "code",
    [
        "@decorator\nclass A(Base, metaclass=M):\n    x: int = 1\n",
        "async def f(*a, b=1, **k):\n    async with x as (y, z):\n        await g(y if z else 0)\n",
        "match p:\n    case [1, *rest] | {'k': v} if v:\n        pass\n",
        "x = f'{a!r:>{width}}' + b'' + (lambda q=1: q)(2)\n",
        "for i in range(3):\n    pass\nelse:\n    del x[1:2, ...]\n",
        "try:\n    pass\nexcept* (A, B) as e:\n    raise\nfinally:\n    global g\n",
        '"""Doc."""\n# comment\n\n\nif a:  # trailing\n    b = (\n        1,\n    )\n\n# end\n',
        "x = 1",
        "[y for x in z if x for y in x]\n(a := 1)\nb += 2\nc: int = 3\n",
        "with open(p) as (f, g), q as r:\n    [*s] = t\n    u[v], w.x = 1, 2\n",
        "import a.b as c\nfrom d import e as f\nh = lambda i, *j, k=l, **m: n\n",
        "@dec(arg)\nclass C(B, metaclass=M, **kw):\n    def g(self, x: T = D) -> R:\n"
        "        return {k: v for k, v in x}\n",
    ],
)
def test_every_kind_of_statement(code: str, newline: str) -> None:
    _assert_same_parents(code.replace("\n", newline))
    _assert_same_positions(code.replace("\n", newline))
    _assert_same_contexts(code.replace("\n", newline))
