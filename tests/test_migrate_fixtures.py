"""Fixture tests for every rewrite (``tests/fixtures/migrate``).

Each fixture's test id names the rule codes its input triggers, so ``pytest -k FSDP208``
finds the scenarios of a rule as well as its own cases (``tests/test_rule_cases.py``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst
import pytest

import codemods
from codemods.engine.run import run
from codemods.registry import REGISTRY
from codemods.settings import Settings
from tests import migrate_fixtures
from tests.kept import fingerprint, installed, kept
from tests.migrate_fixtures import FIXTURES, NAMES, fixture_id

FIX = Settings(fix=True)
FIX_UNSAFE = Settings(fix=True, unsafe_fixes=True)


def _ids() -> list[str]:
    """Each fixture's test id (:func:`fixture_id`: a lint of its input, in each worker's
    collection), kept between runs (``tests/kept.py``) while neither the codemods, the
    fixtures nor the installed libcst, torch or Lightning (the default targets) change."""
    engine = sorted(Path(codemods.__file__).parent.rglob("*.py"))
    fixtures = sorted(p for p in migrate_fixtures.ROOT.rglob("*") if p.is_file())
    releases = installed("libcst", "torch", "lightning", "pytorch-lightning")
    key = fingerprint([*engine, *fixtures], releases, *NAMES)
    return kept("fixture-ids", key, lambda: [fixture_id(FIXTURES[name]) for name in NAMES])


IDS = _ids()


def migrate(source: str, settings: Settings = FIX) -> str:
    outcome = run(textwrap.dedent(source).encode(), settings)
    return (outcome.new_source or textwrap.dedent(source).encode()).decode()


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_fixture(name):
    """Each fixture rewrites to its output (or not at all), once, leaving what it says."""
    fixture = FIXTURES[name]
    outcome = run(fixture.source.encode(), fixture.settings)
    got = outcome.new_source.decode() if outcome.new_source is not None else None
    assert got == fixture.expected
    if got is not None:
        libcst.parse_module(got)
        assert run(got.encode(), fixture.settings).new_source is None, "a second run changes"
    left = tuple(sorted(f.code for f in outcome.findings if not f.fixed))
    assert left == fixture.left
    assert all(f.fixable for f in outcome.findings if f.fixed)


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_fixture_lint_marks_what_migrate_fixes(name):
    """Lint (no fixes) finds the same places and marks fixable exactly what migrate fixed."""
    fixture = FIXTURES[name]
    settings = fixture.settings
    migrated = run(fixture.source.encode(), settings).findings
    linted = run(
        fixture.source.encode(),
        Settings(select=settings.select, fsdp2_bridge=settings.fsdp2_bridge),
    ).findings
    assert [(f.line, f.col, f.code) for f in linted] == [(f.line, f.col, f.code) for f in migrated]
    fixable = [
        f.fixable
        and ((REGISTRY[f.code].fix.value == "safe" and not f.unsafe) or settings.unsafe_fixes)
        for f in linted
    ]
    # A fix the verifier withholds is fixable to lint (which does not rewrite) but not fixed.
    assert fixable == [f.fixed or f.withheld is not None for f in migrated]
    assert all(f.withheld.startswith("fix withheld: ") for f in migrated if f.withheld)


def test_a_fix_that_would_break_the_file_is_withheld_and_says_why():
    fixture = FIXTURES["lazy-torch-import-is-withheld-by-the-verifier"]
    outcome = run(fixture.source.encode(), fixture.settings)
    assert outcome.new_source is None
    assert {f.withheld for f in outcome.findings} == {
        "fix withheld: `torch` imported unconditionally at 8:1; the old module imports it "
        "only inside a block (line 10)"
    }


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "reexport-of-an-old-name-is-not-renamed",
            "`DDPFullyShardedNativeStrategy` is listed in `__all__`: renaming its import "
            "would take the name from the modules that import it from here",
        ),
        (
            "new-name-bound-otherwise-is-not-renamed",
            "its new name would also name something else in this file",
        ),
    ],
)
def test_a_rename_the_planners_hold_is_not_fixable_to_lint_either(name, reason):
    """Both planners hold it, so lint shows no ``[*]`` and migrate withholds nothing."""
    fixture = FIXTURES[name]
    for settings in (fixture.settings, Settings(select=fixture.settings.select)):
        outcome = run(fixture.source.encode(), settings)
        assert outcome.new_source is None
        assert [(f.code, f.fixable, f.withheld, f.no_fix) for f in outcome.findings] == [
            ("FSDP203", False, None, reason)
        ]


def test_unsafe_fix_applies_with_opt_in():
    got = migrate(FIXTURES["unsafe-fix-needs-opt-in"].source, FIX_UNSAFE)
    assert 'Trainer(strategy="fsdp")' in got


def test_lint_mode_reports_and_changes_nothing():
    before = FIXTURES["strategy-and-precision-keep-quotes"].source
    outcome = run(before.encode(), Settings())
    assert outcome.new_source is None
    assert [(f.code, f.line, f.fixable, f.fixed) for f in outcome.findings] == [
        ("FSDP204", 3, True, False),
        ("FSDP206", 4, True, False),
    ]


@pytest.mark.parametrize(
    ("select", "ignore", "codes"),
    [
        ((), (), {"FSDP204", "FSDP206"}),
        (("FSDP204",), (), {"FSDP204"}),
        ((), ("FSDP206",), {"FSDP204"}),
        (("FSDP2",), ("FSDP204",), {"FSDP206"}),
    ],
)
def test_select_and_ignore(select, ignore, codes):
    before = FIXTURES["strategy-and-precision-keep-quotes"].source
    findings = run(before.encode(), Settings(select=select, ignore=ignore)).findings
    assert {f.code for f in findings} == codes


def test_opt_in_rule_only_when_selected():
    source = b"from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nm = FSDP(m)\n"
    assert run(source, Settings()).findings == []
    assert {f.code for f in run(source, Settings(select=("FSDP4",))).findings} == {"FSDP401"}
