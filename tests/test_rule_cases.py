"""Each rule's own cases are its tests (Fixit style), generated from the registry.

Every rule carries its ``example`` and extra ``cases`` (before/after pairs: the fix
must produce ``after`` exactly; ``after == before`` means reported and left for a
human) and ``untouched`` snippets that look like the old spelling but must give no
finding. Each runs alone (``--select CODE``, unsafe fixes allowed), so
``pytest -k FSDP208`` finds every case of that rule. Fix availability has one source:
a rule not marked manual must turn its example into its ``after``, a manual rule must
fix nothing.
"""

from __future__ import annotations

import ast

import libcst
import pytest

from codemods.engine.run import Outcome, run
from codemods.registry import REGISTRY, Example, FixSafety, Rule
from codemods.settings import Settings

#: Cases that state the right behaviour where the engine or the registry falls short,
#: by test id: each is a bug to fix (the mark is strict, so a fix shows as XPASS).
KNOWN_BUGS: dict[str, str] = {}


def _settings(rule: Rule) -> Settings:
    return Settings(fix=True, unsafe_fixes=True, select=(rule.code,))


def _param(rule: Rule, kind: str, index: int | None, item: object):
    test_id = rule.code + f"-{kind}" + ("" if index is None else f"-{index}")
    reason = KNOWN_BUGS.get(test_id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(rule, item, id=test_id, marks=marks)


def _params(kind: str) -> list:
    """The ``kind`` items (``example``, ``case`` or ``untouched``) of every rule."""
    params = []
    for rule in REGISTRY:
        if kind == "example":
            params.append(_param(rule, kind, None, rule.example))
            continue
        items = rule.cases if kind == "case" else rule.untouched
        params.extend(_param(rule, kind, index, item) for index, item in enumerate(items))
    return params


def _only_this_rule(outcome: Outcome, rule: Rule) -> None:
    assert outcome.findings, f"{rule.code} finds nothing"
    assert {f.code for f in outcome.findings} == {rule.code}


def _fixed_once(rule: Rule, outcome: Outcome) -> None:
    """A second run changes nothing and finds only what the first left unfixed."""
    again = run(outcome.new_source, _settings(rule))
    assert again.new_source is None, "a second run changes the file again"
    assert len(again.findings) == sum(not f.fixed for f in outcome.findings)


@pytest.mark.parametrize(("rule", "example"), _params("example"))
def test_example_round_trips(rule: Rule, example: Example):
    """A rule not marked manual reproduces its example's ``after``; a manual one fixes nothing."""
    outcome = run(example.before.encode(), _settings(rule))
    _only_this_rule(outcome, rule)
    if rule.fix is FixSafety.MANUAL:
        assert outcome.new_source is None
        assert not any(f.fixable for f in outcome.findings)
        return
    assert outcome.new_source is not None, f"{rule.code} has no fix for its own example"
    assert outcome.new_source.decode() == example.after
    assert all(f.fixed for f in outcome.findings)
    _fixed_once(rule, outcome)


@pytest.mark.parametrize(("rule", "case"), _params("case"))
def test_case(rule: Rule, case: Example):
    """Each extra case is reported and rewritten to exactly its ``after`` (or left)."""
    outcome = run(case.before.encode(), _settings(rule))
    _only_this_rule(outcome, rule)
    if case.after == case.before:  # reported, left for a human
        assert outcome.new_source is None
        assert not any(f.fixed for f in outcome.findings)
        return
    assert outcome.new_source is not None, "nothing was fixed"
    assert outcome.new_source.decode() == case.after
    _fixed_once(rule, outcome)


@pytest.mark.parametrize(("rule", "source"), _params("untouched"))
def test_untouched(rule: Rule, source: str):
    """Code that only looks like the old spelling gives no finding and no change."""
    outcome = run(source.encode(), _settings(rule))
    assert outcome.findings == []
    assert outcome.new_source is None
    assert run(source.encode(), Settings(select=(rule.code,))).findings == []


def test_every_rule_has_an_untouched_case():
    assert [rule.code for rule in REGISTRY if not rule.untouched] == []


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_cases_are_complete_python(rule: Rule):
    snippets = [s for case in rule.cases for s in (case.before, case.after)]
    for source in (*snippets, *rule.untouched):
        assert source.strip() and source.endswith("\n"), source
        ast.parse(source)
        libcst.parse_module(source)
    if rule.fix is FixSafety.MANUAL:  # nothing to fix: every case is left for a human
        assert all(case.after == case.before for case in rule.cases)
    before = [rule.example.before, *(case.before for case in rule.cases), *rule.untouched]
    assert len(set(before)) == len(before), "a case repeats another"


def test_known_bugs_name_generated_cases():
    ids = {p.id for kind in ("example", "case", "untouched") for p in _params(kind)}
    assert set(KNOWN_BUGS) <= ids
