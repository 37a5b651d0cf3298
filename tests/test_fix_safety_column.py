"""The rule reference's fix column says what the engine does with each rule's own cases.

A rule whose fix is safe may still make some forms unsafe (applied only with
``--unsafe-fixes``); the registry names those forms (``Rule.unsafe_forms``) and the
docs' table and "Fix safety" section say so, rather than calling every form safe.
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.registry import REGISTRY, FixSafety, Rule
from codemods.registry.render import explain, fix_column
from codemods.settings import Settings


def _unsafe_somewhere(rule: Rule) -> bool:
    """Whether one of the rule's own examples gives a finding whose fix is unsafe there."""
    settings = Settings(select=(rule.code,))
    for case in (rule.example, *rule.cases):
        findings = run(case.before.encode(), settings).findings
        if any(f.code == rule.code and f.unsafe for f in findings):
            return True
    return False


SAFE = [rule for rule in REGISTRY if rule.fix is FixSafety.SAFE]


@pytest.mark.parametrize("rule", SAFE, ids=lambda rule: rule.code)
def test_a_safe_rule_names_the_forms_it_fixes_unsafely(rule: Rule):
    assert bool(rule.unsafe_forms) == _unsafe_somewhere(rule)


def test_only_safe_rules_name_unsafe_forms():
    assert all(rule.fix is FixSafety.SAFE for rule in REGISTRY if rule.unsafe_forms)


def test_fsdp115_offload_form_is_unsafe_in_the_docs():
    rule = REGISTRY["FSDP115"]
    assert fix_column(rule) == "safe; unsafe for some forms"
    assert "It is unsafe for saving with `offload_to_cpu=True, rank0_only=True`" in explain(rule)
    # its example is that form: lint marks it unsafe, and a safe run leaves it
    (finding,) = run(rule.example.before.encode(), Settings(select=("FSDP115",))).findings
    assert finding.fixable and finding.unsafe
    assert run(rule.example.before.encode(), Settings(fix=True)).new_source is None
