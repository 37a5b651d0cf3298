"""A rule with a fix of its own is its registry entry and its own module, nothing else.

The module is ``tests/rule_skeleton/fsdp198.py`` (``docs/contributing.md`` shows it as
the skeleton to start from); the test puts its folder on ``codemods.rules``' search path
(where a new module would be written), installs the entry below with the registry
fixture of ``tests/test_new_rule.py``, and runs the tools as a user would: lint decides
the file on ``ast`` (the module's ``ast_call``), migrate fixes it with libcst (its
``call``), ``--explain`` names both files, the rule reference documents it, and the
snapshot of its printed findings picks it up.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import codemods.registry
import codemods.rules
from codemods import lint, migrate
from codemods.astlint.lint import lint as lint_on_ast
from codemods.registry import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import TORCH_FSDP_CLASSES
from codemods.registry.render import render_markdown
from codemods.rules import index
from codemods.settings import Settings
from tests import finding_snapshots, test_rule_cases
from tests.test_new_rule import registry_with  # noqa: F401 - the fixture


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


SKELETON = Path(__file__).parent / "rule_skeleton"

NEW_RULE = (
    # registry-entry-start
    Rule(
        code="FSDP198",
        name="fsdp-default-limit-all-gathers",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=TORCH_FSDP_CLASSES,
        new=TORCH_FSDP_CLASSES[0],
        argument="limit_all_gathers",
        message="`limit_all_gathers=True` is FSDP's default: drop it",
        why=(
            "The argument repeats the default of every torch since 2.1, so it only adds "
            "noise; passing `False` is a choice and is left alone."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, limit_all_gathers=True)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
        cases=(
            Example(
                before=(
                    "import torch.distributed.fsdp as fsdp\n"
                    "model = fsdp.FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    limit_all_gathers=True,\n"
                    ")\n"
                ),
                after=(
                    "import torch.distributed.fsdp as fsdp\n"
                    "model = fsdp.FullyShardedDataParallel(\n"
                    "    model,\n"
                    ")\n"
                ),
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, limit_all_gathers=False)\n"
            ),
        ),
    ),
    # registry-entry-end
)[0]


@pytest.fixture
def with_rule(registry_with, monkeypatch) -> Iterator[Rule]:  # noqa: F811 - the fixture
    """The new rule's module on the rules' path, and its entry in the registry."""
    monkeypatch.setattr(codemods.rules, "__path__", [*codemods.rules.__path__, str(SKELETON)])
    codemods.rules.own_behaviours.cache_clear()
    index.behaviour_for.cache_clear()
    registry_with(NEW_RULE)
    yield NEW_RULE
    codemods.rules.own_behaviours.cache_clear()
    index.behaviour_for.cache_clear()


def test_its_own_module_is_its_behaviour(with_rule):
    behaviour = index.behaviour_for(with_rule)
    assert type(behaviour).__name__ == "Fsdp198"
    assert index.where_it_lives(with_rule)[-1].endswith("rule_skeleton/fsdp198.py")


def test_lint_decides_it_on_ast(with_rule, tmp_path, capsys):
    source = with_rule.example.before
    # No Undecided: the module's ast half answers without libcst.
    assert [f.code for f in lint_on_ast(source.encode(), Settings())] == ["FSDP198"]
    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    assert lint.main([str(path)]) == lint.EXIT_FINDINGS
    assert f"train.py:2:21: FSDP198 [*] {with_rule.message}" in capsys.readouterr().out
    assert lint.main(["--explain", "FSDP198"]) == 0
    explained = capsys.readouterr().out
    assert "## Where it lives\n" in explained and "rule_skeleton/fsdp198.py`" in explained


def test_migrate_fixes_it_with_its_call_hook(with_rule, tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(with_rule.example.before, encoding="utf-8")
    assert migrate.main([str(path)]) == migrate.EXIT_FINDINGS  # a file changed
    assert path.read_text(encoding="utf-8") == with_rule.example.after
    capsys.readouterr()
    assert lint.main([str(path), "--quiet"]) == lint.EXIT_CLEAN


def test_its_examples_pass_the_generated_tests(with_rule):
    test_rule_cases.test_example_round_trips(with_rule, with_rule.example)
    for case in with_rule.cases:
        test_rule_cases.test_case(with_rule, case)
    for source in with_rule.untouched:
        test_rule_cases.test_untouched(with_rule, source)


def test_the_docs_and_the_snapshots_pick_it_up(with_rule, tmp_path, monkeypatch):
    section = render_markdown(codemods.registry.REGISTRY).split("\n## FSDP198\n", 1)[1]
    assert f"```python\n{with_rule.example.after}```" in section
    with pytest.raises(AssertionError, match="FSDP198 has no snapshot"):
        finding_snapshots.check(with_rule, tmp_path)
    monkeypatch.setenv(finding_snapshots.UPDATE, "1")
    finding_snapshots.check(with_rule, tmp_path)
    written = (tmp_path / "FSDP198.txt").read_text(encoding="utf-8")
    assert f"example.py:2:21: FSDP198 [*] {with_rule.message}\n" in written
    assert "## untouched_1.py\n" in written and written.count("FSDP198 [*]") == 2


def test_the_contributing_guide_shows_the_module_and_the_entry():
    """The guide includes both files (the docs build, with -W, fails where one is missing)."""
    guide = (Path(__file__).parents[1] / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert "```{literalinclude} ../tests/rule_skeleton/fsdp198.py\n" in guide
    assert "```{literalinclude} ../tests/test_new_rule_module.py\n" in guide
