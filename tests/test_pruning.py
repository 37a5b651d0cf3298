"""A fixing run on a pruned module gives what the whole module gives.

:mod:`codemods.engine.pruning` hands libcst only the functions a fix can reach. Every
fixture, rule example and realistic module is migrated both ways (safe, and with the
unsafe fixes and every opt-in family) and must give the same findings and the same
bytes; the small sources are pruned with no minimum saving, so their functions are
replaced too. The shapes below are the ways a replaced body could change an answer.
"""

from __future__ import annotations

import pytest

from codemods.astlint.lint import found_on_ast
from codemods.engine import pruning
from codemods.engine.pruning import Pruned, survey
from codemods.engine.run import run
from codemods.settings import Settings
from tests import migrate_fixtures
from tests.realistic_tree import build_tree, repeated_models

SAFE = Settings(fix=True)
EVERYTHING = Settings(select=("FSDP",), fix=True, unsafe_fixes=True)
#: The realistic tree's size here (its shapes repeat beyond this).
TREE_FILES = 16


def _tree() -> list[bytes]:
    """The tree's modules, less the model modules whose FSDP shapes others carry.

    Each model module costs seconds here (two whole runs and a pruned one); the ones
    kept still carry every FSDP shape the tree's models have.
    """
    repeated = repeated_models(TREE_FILES)
    return [s for path, s in sorted(build_tree(TREE_FILES).items()) if path not in repeated]


@pytest.fixture
def prune_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prune a file however little it saves (the rule examples are a few lines)."""
    monkeypatch.setattr(pruning, "MIN_SAVED_LINES", 0)


def _same(source: bytes, settings: Settings) -> bool:
    """Assert both runs agree; whether the pruned one really replaced something.

    Where the detector does not decide the file, :func:`run` runs it whole and visits
    every statement: nothing to compare. Where it decides the file but no body goes,
    the visit still passes over the statements it saw nothing in.
    """
    found = survey(source, settings)
    if found is None:
        return False
    whole = run(source, settings, prune=False)
    pruned = run(source, settings)
    assert (pruned.findings, pruned.new_source) == (whole.findings, whole.new_source)
    return found.pruned is not None


def _rule_sources() -> list:
    from codemods.registry import REGISTRY

    params = []
    for rule in REGISTRY:
        for index, example in enumerate([rule.example, *rule.cases]):
            name = f"{rule.code}-{index}"
            source = example.before.encode()
            own = Settings(select=(rule.code,), fix=True, unsafe_fixes=True)
            params.append(pytest.param(source, own, id=name))
    return params


_UNRELATED = """

def _unrelated_helper(values):
    total = 0
    for value in values:
        total += value
    return total
"""


def _with_unrelated(source: bytes) -> bytes:
    """``source`` and a function nothing is seen in, so that there is a body to replace."""
    newline = b"\r\n" if b"\r\n" in source else b"\n"
    end = b"" if source.endswith(newline) or not source else newline
    return source + end + _UNRELATED.encode().replace(b"\n", newline)


@pytest.mark.parametrize(("source", "settings"), migrate_fixtures.sources(fix=True))
def test_fixtures(source: bytes, settings: Settings, prune_small: None):
    _same(source, settings)
    _same(_with_unrelated(source), settings)


@pytest.mark.parametrize(("source", "settings"), _rule_sources())
def test_rule_examples(source: bytes, settings: Settings, prune_small: None):
    _same(_with_unrelated(source), settings)


def test_most_sources_above_are_really_pruned(prune_small: None):
    """The comparisons above are not vacuous: most of those sources lose a body."""
    params = [*migrate_fixtures.sources(fix=True), *_rule_sources()]
    pruned = [_pruned(_with_unrelated(p.values[0]), p.values[1]) is not None for p in params]
    assert sum(pruned) >= len(params) * 3 // 4


@pytest.mark.slow
def test_realistic_tree():
    """Every module of the tree the same; most of those with a fix really pruned."""
    pruned = fixed = 0
    for source in _tree():
        if found_on_ast(source, SAFE) is None:  # a fix applies: libcst runs
            fixed += 1
            pruned += _same(source, SAFE)
    assert fixed >= 8
    assert pruned >= fixed * 3 // 4


@pytest.mark.slow
def test_realistic_tree_everything_selected():
    """With FSDP401 (no ``ast`` half) selected, its files run whole: the same anyway."""
    for source in _tree():
        _same(source, EVERYTHING)


_POLICY = """\
import functools
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={{Block}})


class Block:
    pass


def wrap(model):
    return FSDP(model, auto_wrap_policy=policy)


def elsewhere(model):
    steps = 3
    for _ in range(steps):
        model = model
    return policy{use}
"""

_CUSTOM = """\
def custom_policy(module, recurse, unwrapped_params: int, min_num_params: int = 10) -> bool:
    return unwrapped_params >= min_num_params


def test_called_by_keyword():
    layer = object()
    assert custom_policy(module=layer, recurse=False, unwrapped_params=20)
    assert not custom_policy(module=layer, recurse=False, unwrapped_params=1)
"""

_IMPORT_ONLY_A_BODY_USES = """\
from torch.distributed.fsdp.wrap import default_auto_wrap_policy, enable_wrap
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def build(model):
    return FSDP(model, auto_wrap_policy=default_auto_wrap_policy)


def inner(layer):
    first = layer
    second = first
    with enable_wrap(wrapper_cls=FSDP):
        return second
"""

_LONG_TRAINING_FUNCTION = """\
from pytorch_lightning.plugins import DDPFullyShardedPlugin
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import default_auto_wrap_policy


@rank_zero_only
def log(message):
    print(message)


def policy_of(module, recurse, unwrapped_params, min_num_params=10):
    bigger = unwrapped_params
    if recurse:
        return True
    return bigger >= min_num_params


def train(model, steps):
    total = 0
    for step in range(steps):
        total += step
        if total > 10:
            log("large")
    policy = default_auto_wrap_policy
    return model, policy, total


def shard(net):
    return FSDP(net, auto_wrap_policy=policy_of)
"""

_SHAPES = {
    "long-training-function": _LONG_TRAINING_FUNCTION,
    "policy-read-elsewhere": _POLICY.format(use=""),
    "policy-passed-elsewhere": _POLICY.format(use="(model, True, 1)"),
    "custom-policy-called-by-keyword": _CUSTOM,
    "import-a-pruned-body-uses": _IMPORT_ONLY_A_BODY_USES,
    "crlf": _POLICY.format(use="").replace("\n", "\r\n"),
    "global-declared": _IMPORT_ONLY_A_BODY_USES.replace(
        "    first = layer\n", "    global FSDP\n    first = layer\n"
    ),
    "string-annotation": _IMPORT_ONLY_A_BODY_USES.replace(
        "    first = layer\n", '    first: "FSDP" = layer\n'
    ),
    "decorated-and-async": _POLICY.format(use="").replace(
        "def elsewhere(model):\n", "@staticmethod\nasync def elsewhere(model):\n"
    ),
    "class-body": _POLICY.format(use="").replace(
        "class Block:\n    pass\n",
        "class Block:\n    size = 3\n\n    def forward(self, x):\n"
        "        y = x\n        return y\n",
    ),
}


@pytest.mark.parametrize("settings", [SAFE, EVERYTHING], ids=["safe", "everything"])
@pytest.mark.parametrize("source", list(_SHAPES.values()), ids=list(_SHAPES))
def test_shapes(source: str, settings: Settings, prune_small: None):
    _same(source.encode(), settings)


def test_a_body_that_reads_a_followed_name_is_kept(prune_small: None):
    """FSDP103 follows a module-level policy to its uses: none of them may be hidden."""
    source = _POLICY.format(use="").encode()
    pruned = _pruned(source, SAFE)
    assert pruned is None or b"return policy" in pruned.source
    kept = _IMPORT_ONLY_A_BODY_USES.encode()
    pruned = _pruned(kept, SAFE)
    assert pruned is not None and b"(enable_wrap, FSDP,);" in pruned.source  # the use stays a use
    assert pruned.source.count(b"\n") == kept.count(b"\n")  # every line where it was


@pytest.mark.parametrize(
    "source",
    [
        b"# -*- coding: latin-1 -*-\n" + _IMPORT_ONLY_A_BODY_USES.encode() + b"# \xe9\n",
        b"\xef\xbb\xbf" + _IMPORT_ONLY_A_BODY_USES.encode(),
        _IMPORT_ONLY_A_BODY_USES.encode() + b"# fsdp-compat: pruned body 0\n",
        _IMPORT_ONLY_A_BODY_USES.encode().replace(b"first = layer\n", b"first = layer\r"),
    ],
    ids=["latin-1", "bom", "mark-in-source", "lone-cr"],
)
def test_what_is_run_whole(source: bytes, prune_small: None):
    assert _pruned(source, SAFE) is None
    fit = source.replace(b"\r", b"\n").replace(b"\xef\xbb\xbf", b"").replace(b"\xe9", b"e")
    assert _pruned(fit.replace(b"# fsdp-compat: pruned body 0", b""), SAFE) is not None


def test_a_changed_placeholder_runs_the_file_whole(prune_small: None, monkeypatch):
    """The pass never touches a placeholder; if one did, the whole file is run."""
    source = _IMPORT_ONLY_A_BODY_USES.encode()
    expected = run(source, SAFE, prune=False)
    monkeypatch.setattr(Pruned, "restore", lambda self, new: None)
    assert run(source, SAFE) == expected


def test_the_visit_passes_over_what_the_detector_saw_nothing_in(monkeypatch):
    """Only the statements the ``ast`` detector saw something in are entered, and a
    statement with a rewrite registered in it (a renamed parameter's uses)."""
    import codemods.engine.run

    entered: list[str] = []

    class Spy(codemods.engine.run.Engine):
        def visit_Name(self, node):
            entered.append(node.value)
            return super().visit_Name(node)

    monkeypatch.setattr(codemods.engine.run, "Engine", Spy)
    source = _LONG_TRAINING_FUNCTION.encode()
    settings = Settings(fix=True, unsafe_fixes=True)
    whole = run(source, settings, prune=False)
    assert {"total", "step", "unwrapped_params", "bigger"} <= set(entered)
    entered.clear()
    skipping = run(source, settings)
    assert "total" not in entered and "step" not in entered  # the loop: passed over
    assert "unwrapped_params" in entered  # the parameter FSDP102 renames, and its uses
    assert "default_auto_wrap_policy" in entered
    assert skipping == whole
    assert b"nonwrapped_numel" in whole.new_source


def test_the_screening_pass_is_handed_to_the_pruning():
    """A file the screening leaves to libcst carries its detector pass to the pruning, which
    prunes on it as on a pass of its own; a file the screening settles carries none."""
    from codemods.astlint.lint import screen

    fixes = _LONG_TRAINING_FUNCTION.encode()
    screened = screen(fixes, SAFE)
    assert screened.findings is None  # a fix applies: libcst's
    assert screened.detection is not None and screened.detection.tree.body
    assert survey(fixes, SAFE, screened.detection) == survey(fixes, SAFE)
    settled = screen(b"import os\n\nprint(os.sep)\n", SAFE)
    assert settled.findings == [] and settled.detection is None
    linted = screen(fixes, Settings())  # nothing is fixed: lint's findings, no pass kept
    assert linted.findings and linted.detection is None


def _pruned(source: bytes, settings: Settings) -> Pruned | None:
    """The pruned module :func:`survey` gives, or None."""
    found = survey(source, settings)
    return None if found is None else found.pruned
