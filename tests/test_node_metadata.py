"""The engine's own parents, positions and expression contexts are libcst's exactly.

The engine asks for parents through :func:`codemods.syntax.cst_tree.parent_map` instead of
``ParentNodeProvider``, for positions through
:class:`codemods.engine.metadata.positions.Positions` instead of ``PositionProvider``, and
gives libcst's scopes the contexts of
:func:`codemods.engine.metadata.contexts.expression_contexts` instead of
``ExpressionContextProvider``'s and resolves them without the resolver's second walk, with a
quicker ``on_leave`` (:func:`codemods.engine.metadata.scopes.prime`), all for speed
(benchmarks/README.md), so each pair must agree on
every node of every fixture, rule example and realistic module, and of one module for
each kind of statement and line break.
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import pytest
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from codemods.engine.metadata.contexts import expression_contexts
from codemods.engine.metadata.positions import Positions
from codemods.engine.metadata.scopes import _QUICK, prime
from codemods.registry import REGISTRY
from codemods.syntax.cst_tree import parent_map
from tests import migrate_fixtures
from tests.realistic_tree import build_tree


def _sources() -> list:
    """The sources every comparison below reads (built once: the tree takes a while)."""
    return list(_SOURCES)


def _build_sources() -> list:
    params = [pytest.param(p.values[0], id=p.id) for p in migrate_fixtures.sources(fix=True)]
    for rule in REGISTRY:
        for index, example in enumerate([rule.example, *rule.cases]):
            for side, text in (("before", example.before), ("after", example.after)):
                params.append(pytest.param(text.encode(), id=f"{rule.code}-{index}-{side}"))
    tree = build_tree(files=12)
    slow = pytest.mark.slow  # modules of up to 1,600 lines: seconds each
    # The model files are one template's variations, the same syntax: the smallest of
    # them stands for all (each costs seconds in all five comparisons).
    models = sorted(
        (p for p in tree if "/models/" in str(p) and not str(p).endswith("__init__.py")),
        key=lambda p: len(tree[p]),
    )
    kept = [p for p in sorted(tree) if p not in models[1:]]
    params += [pytest.param(tree[path], id=str(path), marks=slow) for path in kept]
    # One case per text: many rule examples' texts are another example's too.
    seen: set[bytes] = set()
    unique = []
    for param in params:
        if param.values[0] not in seen:
            seen.add(param.values[0])
            unique.append(param)
    return unique


_SOURCES = tuple(_build_sources())


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


def _scope_facts(wrapper: MetadataWrapper) -> list:
    """Every node's scope and every scope's assignments and accesses, in tree order.

    Scopes and nodes are numbered by their first appearance in a walk of the module, so
    the facts of two wrappers of one module compare equal where their scopes do.
    """
    scopes = wrapper.resolve(ScopeProvider)
    nodes: dict[cst.CSTNode, int] = {}
    stack = [wrapper.module]
    while stack:
        node = stack.pop()
        nodes[node] = len(nodes)
        stack.extend(reversed(node.children))
    numbers: dict[object, int] = {}
    per_node = []
    for node in nodes:
        scope = scopes.get(node)
        if scope is not None:
            numbers.setdefault(scope, len(numbers))
        per_node.append((type(scope).__name__, numbers.get(scope)))

    def where(node: cst.CSTNode | None) -> str:
        if not node:
            return ""
        number = nodes.get(node)
        # A node the visitor parsed itself (a string annotation) is not in the module:
        # its code, generated only then (generating it for every node cost a quarter of
        # this function's time).
        return str(number) if number is not None else cst.Module([]).code_for_node(node)

    def assigned(a: Any) -> tuple[str, str, str]:
        return a.name, type(a).__name__, where(getattr(a, "node", None))  # builtins: none

    per_scope = []
    for scope in numbers:
        assignments = sorted(assigned(a) for a in scope.assignments)
        accesses = sorted(
            (where(a.node), sorted(assigned(r) for r in a.referents)) for a in scope.accesses
        )
        per_scope.append((type(scope).__name__, assignments, accesses))
    return [per_node, per_scope]


@pytest.mark.parametrize("source", _sources())
def test_primed_scopes_are_libcsts(source: bytes) -> None:
    """The scopes :func:`prime` resolves are the ones libcst's resolver gives."""
    module = cst.parse_module(source)
    primed = MetadataWrapper(module, unsafe_skip_copy=True)
    prime(primed)
    assert ExpressionContextProvider in primed._metadata  # given, not computed
    assert ScopeProvider in primed._metadata
    assert _QUICK is not None  # the installed libcst is laid out as prime expects
    plain = MetadataWrapper(module, unsafe_skip_copy=True)
    assert _scope_facts(primed) == _scope_facts(plain)


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
    test_primed_scopes_are_libcsts(code.replace("\n", newline).encode())


@pytest.mark.slow
def test_prime_where_libcsts_visitor_is_laid_out_otherwise(monkeypatch) -> None:
    """Without the quicker visitor, prime runs the provider's own: the same scopes."""
    import codemods.engine.metadata.scopes as primed_scopes

    monkeypatch.setattr(primed_scopes, "_QUICK", None)
    source = max(build_tree(files=12).values(), key=len)
    module = cst.parse_module(source)
    primed = MetadataWrapper(module, unsafe_skip_copy=True)
    prime(primed)
    assert ScopeProvider in primed._metadata
    assert _scope_facts(primed) == _scope_facts(MetadataWrapper(module, unsafe_skip_copy=True))


def _assert_code_for_is_libcsts(source: bytes | str) -> None:
    module = cst.parse_module(source)
    positions = Positions(module)
    body = list(module.body)
    added = cst.parse_statement("import added_here" + module.default_newline)
    variants = [
        module.with_changes(body=body),  # every statement passed over
        module.with_changes(body=[s if i % 2 else s.deep_clone() for i, s in enumerate(body)]),
        module.with_changes(body=[added, *body[1:]]),
        module.with_changes(body=[*body, added], header=()),
        module.with_changes(body=[]),
        module.with_changes(body=body, has_trailing_newline=False),
    ]
    for new in variants:
        assert positions.code_for(new) == new.code


@pytest.mark.parametrize("source", _sources())
def test_code_for_a_transformed_module_is_libcsts(source: bytes) -> None:
    """Positions.code_for gives the code libcst generates for a module made of this one."""
    _assert_code_for_is_libcsts(source)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize(
    "code", ["# head\n\nx = 1\n\n# foot\n", "x = 1", "\n\n", "", "if a:\n    b\n# end"]
)
def test_code_for_at_the_edges(code: str, newline: str) -> None:
    _assert_code_for_is_libcsts(code.replace("\n", newline))
