"""A new keyword rename is one registry entry: lint, migrate and the docs pick it up.

The entry below is the one ``docs/contributing.md`` shows (it includes the text between
the markers). The test adds it to a copy of the registry in this process, points every
module that read the registry at the copy, forgets what was computed from the real one,
and runs the tools as a user would.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

import codemods
import codemods.registry
from codemods import lint, migrate
from codemods.engine.run import run
from codemods.registry import ChangeKind, Example, FixSafety, Framework, Registry, Rule
from codemods.registry.names import TORCH_FSDP_CLASSES
from codemods.registry.render import render_markdown
from codemods.rules import index as behaviours
from codemods.settings import Settings
from tests import test_rule_cases
from tests.distributed import NEEDS_FSDP1


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


NEW_RULE = (
    # registry-entry-start
    Rule(
        code="FSDP199",
        name="fsdp-ignored-parameters",
        framework=Framework.TORCH,
        kind=ChangeKind.KEYWORD_RENAME,
        old=TORCH_FSDP_CLASSES,
        new=TORCH_FSDP_CLASSES[0],
        argument="ignored_parameters",
        new_argument="ignored_states",
        message="FSDP's `ignored_parameters` is now `ignored_states`",
        why=(
            "torch 2.1 renamed the argument when it learned to take modules as well as "
            "parameters; `FullyShardedDataParallel(ignored_parameters=...)` fails with "
            "TypeError on every torch since."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, ignored_parameters=frozen)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, ignored_states=frozen)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.1",
        removed="2.1",
        references=("https://github.com/pytorch/pytorch/pull/102056",),
        cases=(
            Example(
                before=(
                    "import torch.distributed.fsdp as fsdp\n"
                    "model = fsdp.FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    ignored_parameters=[model.embedding.weight],  # kept in fp32\n"
                    ")\n"
                ),
                after=(
                    "import torch.distributed.fsdp as fsdp\n"
                    "model = fsdp.FullyShardedDataParallel(\n"
                    "    model,\n"
                    "    ignored_states=[model.embedding.weight],  # kept in fp32\n"
                    ")\n"
                ),
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, ignored_states=frozen)\n"
            ),
            (
                "from my_project.sharding import FullyShardedDataParallel\n"
                "model = FullyShardedDataParallel(model, ignored_parameters=frozen)\n"
            ),
        ),
    ),
    # registry-entry-end
)[0]


def _codemods_modules() -> list[ModuleType]:
    return [
        module
        for name, module in sorted(sys.modules.items())
        if module is not None and (name == "codemods" or name.startswith("codemods."))
    ]


def _forget_computed() -> None:
    """Clear every ``functools`` cache of codemods: some were filled from the registry."""
    for module in _codemods_modules():
        for value in list(vars(module).values()):
            cached = getattr(value, "cache_clear", None)
            if callable(cached) and getattr(value, "__module__", None) == module.__name__:
                cached()


@pytest.fixture
def registry_with(monkeypatch) -> Iterator[Callable[..., Registry]]:
    """Install a registry with extra rules wherever codemods holds the registry."""

    def install(*rules: Rule) -> Registry:
        # A module first imported while the copy is installed would keep it for good
        # (`from codemods.rules.index import INDEX` binds at import): import them all now.
        for module in pkgutil.walk_packages(codemods.__path__, "codemods."):
            importlib.import_module(module.name)
        real, real_index = codemods.registry.REGISTRY, behaviours.INDEX
        registry = Registry(rules=real.rules + rules, capabilities=real.capabilities)
        index = behaviours.Index(registry.rules)
        for module in _codemods_modules():
            for attribute, old, new in (("REGISTRY", real, registry), ("INDEX", real_index, index)):
                if getattr(module, attribute, None) is old:
                    monkeypatch.setattr(module, attribute, new)
        _forget_computed()
        return registry

    yield install
    monkeypatch.undo()
    _forget_computed()


def test_the_entry_is_new():
    assert NEW_RULE.code not in {rule.code for rule in codemods.registry.REGISTRY}, (
        f"{NEW_RULE.code} is taken now: give the example entry (and docs/contributing.md) "
        "another free code"
    )


def test_lint_reports_it(registry_with, tmp_path, capsys):
    registry_with(NEW_RULE)
    path = tmp_path / "train.py"
    path.write_text(NEW_RULE.example.before, encoding="utf-8")
    assert lint.main([str(path)]) == lint.EXIT_FINDINGS  # selected by default
    out = capsys.readouterr().out
    assert f"train.py:2:21: {NEW_RULE.code} [*] {NEW_RULE.message}" in out
    assert lint.main(["--explain", NEW_RULE.code]) == 0
    assert "## Why is this bad?\n" + NEW_RULE.why in capsys.readouterr().out


def test_migrate_rewrites_it(registry_with, tmp_path, capsys):
    registry_with(NEW_RULE)
    path = tmp_path / "train.py"
    path.write_text(NEW_RULE.example.before, encoding="utf-8")
    assert migrate.main([str(path)]) == migrate.EXIT_FINDINGS  # a file changed
    assert "1 changed, 1 fixes applied, 0 findings left" in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == NEW_RULE.example.after
    assert lint.main([str(path), "--quiet"]) == lint.EXIT_CLEAN


def test_its_cases_pass_the_generated_tests(registry_with):
    """What tests/test_rule_cases.py generates for each registry entry holds for this one."""
    registry_with(NEW_RULE)
    test_rule_cases.test_example_round_trips(NEW_RULE, NEW_RULE.example)
    for case in NEW_RULE.cases:
        test_rule_cases.test_case(NEW_RULE, case)
    for source in NEW_RULE.untouched:
        test_rule_cases.test_untouched(NEW_RULE, source)
    test_rule_cases.test_cases_are_complete_python(NEW_RULE)


def test_the_rule_reference_documents_it(registry_with):
    text = render_markdown(registry_with(NEW_RULE))
    assert f"| [{NEW_RULE.code}](#{NEW_RULE.code.lower()}) | {NEW_RULE.name} |" in text
    section = text.split(f"\n## {NEW_RULE.code}\n", 1)[1]
    assert f"```python\n{NEW_RULE.example.after}```" in section
    assert f"```python\n{NEW_RULE.cases[0].after}```" in section
    assert "### Not reported" in section


def test_the_real_registry_is_back():
    """After the tests above, nothing of the temporary rule is left in this process."""
    assert NEW_RULE.code not in {rule.code for rule in codemods.registry.REGISTRY}
    assert NEW_RULE.code not in render_markdown()
    indexed = [b for found in behaviours.INDEX.calls.values() for b in found]
    assert indexed and all(b.rule is not NEW_RULE for b in indexed)
    findings = run(NEW_RULE.example.before.encode(), Settings(select=("FSDP",))).findings
    assert NEW_RULE.code not in {f.code for f in findings}


@NEEDS_FSDP1
@pytest.mark.distributed
def test_compat_translates_the_new_keyword(registry_with):
    """compat's FullyShardedDataParallel takes ``ignored_parameters=`` and warns FSDP199.

    Registry keyword renames apply in compat's argument translation, so the temporary
    rule alone makes the old keyword work there (one gloo rank, in this process).
    """
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    from compat.deprecation import FSDPDeprecationWarning
    from compat.fsdp import FullyShardedDataParallel

    registry_with(NEW_RULE)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        frozen = list(model[0].parameters())
        with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP199\]"):
            sharded = FullyShardedDataParallel(model, ignored_parameters=frozen)
        flat = [p for p in sharded.parameters() if p.dim() == 1 and p.numel() > 4]
        assert all(p is not q for p in frozen for q in flat)
        assert {id(p) for p in frozen} <= {id(p) for p in sharded.parameters()}
        with pytest.raises(TypeError, match="ignored_states"):  # both spellings at once
            FullyShardedDataParallel(model, ignored_parameters=frozen, ignored_states=frozen)
    finally:
        dist.destroy_process_group()
