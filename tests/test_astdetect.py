"""The ``ast`` detector finds exactly what the libcst engine finds, where it decides.

Lint runs :func:`codemods.astlint.lint.lint` and falls back to the libcst engine
(:func:`codemods.engine.run.run`) where it raises ``Undecided``. Every source here is linted
both ways: the findings (codes, lines, columns, messages, fixability, unsafe markers)
must be the same, and the ``ast`` side must decide (almost) every one of them, or the
speed it exists for is lost. A rule added to the registry later is checked by the same
parametrization: its example, cases and untouched snippets are among the sources.
"""

from __future__ import annotations

from collections import Counter

import pytest

from codemods.astlint.hooks import hook
from codemods.astlint.lint import Undecided, lint
from codemods.batch.runner import process_source
from codemods.engine.run import run
from codemods.registry import REGISTRY
from codemods.releases import Releases
from codemods.rules.fsdp115 import Fsdp115
from codemods.rules.kinds.default_change import DefaultChange
from codemods.settings import Settings
from tests import migrate_fixtures
from tests.realistic_tree import build_tree, repeated_models

#: The realistic tree's size here (the benchmark's is 60; the shapes repeat beyond this).
TREE_FILES = 24


def _fixture_sources(fix: bool = False) -> list:
    return migrate_fixtures.sources(fix)


def _rule_sources() -> list:
    params = []
    for rule in REGISTRY:
        own = Settings(select=(rule.code,))
        for index, example in enumerate([rule.example, *rule.cases]):
            name = f"{rule.code}-{'example' if index == 0 else f'case-{index - 1}'}"
            source = example.before.encode()
            params.append(pytest.param(source, own, id=name))
            params.append(pytest.param(source, Settings(), id=f"{name}-all-rules"))
        for index, snippet in enumerate(rule.untouched):
            params.append(pytest.param(snippet.encode(), own, id=f"{rule.code}-untouched-{index}"))
    return params


def _tree_sources() -> list:
    """The tree's modules, less the model modules whose FSDP shapes others carry (seconds
    each, the same templates: ``repeated_models``)."""
    repeated = repeated_models(TREE_FILES)
    return [
        pytest.param(source, Settings(), id=path, marks=pytest.mark.slow)
        for path, source in sorted(build_tree(TREE_FILES).items())
        if path not in repeated
    ]


def _agree(source: bytes, settings: Settings) -> bool:
    """Assert both sides agree where the ``ast`` side decides; whether it did.

    A rule whose behaviour has no ``ast`` half yet (a rule module added without one)
    leaves its files to libcst: correct, only slower; such a source is an expected
    failure that names the rule, so the gap stays visible.
    """
    expected = run(source, settings).findings
    try:
        found = lint(source, settings)
    except Undecided as exc:
        if exc.rule is not None:
            pytest.xfail(f"{exc}: libcst decides files where {exc.rule} may apply")
        return False
    assert found == expected
    return True


@pytest.mark.parametrize(("source", "settings"), _fixture_sources())
def test_migrate_fixtures_agree(source: bytes, settings: Settings):
    assert _agree(source, settings), "the ast detector left a fixture to libcst"


@pytest.mark.parametrize(("source", "settings"), _rule_sources())
def test_rule_examples_agree(source: bytes, settings: Settings):
    assert _agree(source, settings), "the ast detector left a rule example to libcst"


@pytest.mark.parametrize(("source", "settings"), _tree_sources())
def test_realistic_tree_agrees(source: bytes, settings: Settings):
    assert _agree(source, settings), "the ast detector left a realistic file to libcst"


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        Settings(releases=Releases.parse(torch="2.0")),
        Settings(releases=Releases.parse(torch="2.2"), unsafe_fixes=True),
    ],
    ids=["torch-2.0", "torch-2.2-unsafe"],
)
def test_targets_agree(settings: Settings):
    # Twelve files of the tree: every model shape and the policy modules are among them.
    sources = [p.values[0] for p in _tree_sources()][:12]
    decided = Counter(_agree(source, settings) for source in sources)
    assert decided[True] == 12


_OLD = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy as p\n"


@pytest.mark.parametrize(
    ("source", "undecided"),
    [
        (_OLD + "p(m)\n", False),
        ("def f():\n    global FSDP\n    FSDP(m)\n", False),
        ("x = p\n" + _OLD + "y = p\n", False),  # read before the import: libcst orders
        (_OLD + "p = None\np\n", False),  # rebound: both meanings after the second
        ('import torch\nf = torch.distributed.fsdp.X(\n    sharding="a" "b")\n', False),
        ("def f():\n    " + _OLD + "    def g():\n        nonlocal p\n        p(m)\n", True),
        (_OLD + "class C:\n    def m(self):\n        p(m)\n        p = 1\n", True),
        # `torch.x` where `import torch.<a module with a rule>` binds torch too: each use
        # asks (the answer kept for the name's binder, asked again by the second use)
        (
            "import torch\nimport torch.distributed._composable.fsdp\nf = lambda: torch.ones(1)\n"
            "torch.zeros(1)\n",
            True,
        ),
        ("import torch\nimport torch.distributed.fsdp\ntorch.ones(1)\ntorch.zeros(1)\n", False),
    ],
    ids=[
        "plain",
        "global",
        "use-before-import",
        "rebound",
        "concatenated",
        "imported-nonlocal",
        "method-reads-before-binding",
        "dotted-module-with-a-rule",
        "dotted-module-without",
    ],
)
def test_what_goes_to_libcst(source: str, undecided: bool):
    try:
        _agree(source.encode(), Settings())
    except Undecided:
        pytest.fail("lint raised Undecided out of _agree")
    decided = True
    try:
        lint(source.encode(), Settings())
    except Undecided:
        decided = False
    assert decided is not undecided


def test_an_override_without_an_ast_half_goes_to_libcst():
    """A subclass that changes how a kind reports needs its own ``ast`` half."""

    class Quieter(DefaultChange):
        def fix(self, engine, original, updated, start):
            return updated  # reports nothing: the kind's ast half would be wrong

    rule = next(r for r in REGISTRY if r.kind.name == "DEFAULT_CHANGE")
    with pytest.raises(Undecided, match="does not answer for fix"):
        hook(Quieter(rule), "ast_call")
    assert hook(DefaultChange(rule), "ast_call") is not None


def test_a_block_hook_that_rewrites_goes_to_libcst():
    """A statement-list hook reports nothing in lint only where ``ast_block`` says so."""

    class Rewrites(Fsdp115):
        def block(self, engine, original, updated):
            return updated  # a new block hook: the parent's ast_block does not speak for it

    rule = REGISTRY["FSDP115"]
    with pytest.raises(Undecided, match="does not answer for block"):
        hook(Rewrites(rule), "ast_block")
    assert hook(Fsdp115(rule), "ast_block") is not None


@pytest.mark.parametrize(("source", "settings"), _fixture_sources(fix=True))
def test_migrate_gives_what_libcst_gives(source: bytes, settings: Settings):
    """A fixing run skips libcst where no fix applies: the same findings, no rewrite."""
    expected = run(source, settings)
    result = process_source("fixture.py", source, settings)
    assert (result.findings, result.new_source) == (expected.findings, expected.new_source)


def test_lint_runs_the_ast_side_and_falls_back():
    undecided = b"x = FSDP\nfrom fairscale.nn import FullyShardedDataParallel as FSDP\n"
    decided = b"from fairscale.nn import FullyShardedDataParallel as FSDP\nFSDP(m)\n"
    for source in (undecided, decided):
        result = process_source("m.py", source, Settings())
        assert result.findings == run(source, Settings()).findings
        assert result.findings and result.error is None


_WRAPPED = (
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
)


def test_an_opt_in_rule_without_an_ast_half_routes_only_runs_that_select_it():
    """FSDP401 (opt-in, libcst only) sends a file to libcst only where it is selected.

    A default run reports nothing of FSDP401, so its missing ``ast`` half must not cost
    every file with an FSDP1 wrapper call libcst's parse (it did: 16 of 48 files of the
    realistic tree).
    """
    source = _WRAPPED.encode()
    assert lint(source, Settings()) == run(source, Settings()).findings
    selected = Settings(select=("FSDP4",))
    with pytest.raises(Undecided, match="FSDP401"):
        lint(source, selected)
    assert any(f.code == "FSDP401" for f in run(source, selected).findings)


@pytest.mark.slow
def test_the_realistic_tree_is_decided_on_ast():
    """Every file of the tree the benchmarks time is decided without libcst."""
    for path, source in build_tree(60).items():
        try:
            lint(source, Settings())
        except Undecided as exc:
            pytest.fail(f"{path}: {exc}")
