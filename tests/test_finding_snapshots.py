"""Every rule's examples print the findings its snapshot holds (see tests/finding_snapshots.py)."""

from __future__ import annotations

import pytest

from codemods.registry import REGISTRY, Rule
from tests.finding_snapshots import SNAPSHOTS, check, printed


@pytest.mark.parametrize("rule", list(REGISTRY), ids=lambda rule: rule.code)
def test_printed_findings_match_the_snapshot(rule: Rule):
    check(rule)


def test_no_snapshot_is_left_over():
    assert {path.stem for path in SNAPSHOTS.glob("*.txt")} == {rule.code for rule in REGISTRY}


def test_a_snapshot_shows_lines_as_lint_prints_them():
    text = printed(REGISTRY["FSDP101"])
    assert "\n## example.py\nexample.py:" in text
    assert ": FSDP101 [*] " in text  # path:line:col: CODE [*] message
