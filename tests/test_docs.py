"""The rule reference in the docs is generated from the registry and kept current."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods.registry import REGISTRY
from codemods.registry.render import explain, main, render_markdown

RULES_MD = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_rules_md_is_current():
    assert RULES_MD.read_text(encoding="utf-8") == render_markdown(), (
        "docs/rules.md is stale: run python -m codemods.registry.render docs/rules.md"
    )


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_every_rule_has_its_section(rule):
    text = RULES_MD.read_text(encoding="utf-8")
    assert f"\n## {rule.code}\n" in text
    assert rule.example.after.splitlines()[-1] in text


def test_every_capability_is_listed():
    text = RULES_MD.read_text(encoding="utf-8")
    for cap in REGISTRY.capabilities:
        assert f"| `{cap.name}` |" in text


def test_explain_has_ruffs_sections():
    text = explain(REGISTRY["FSDP103"])
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
        assert f"## {heading}" in text


def test_check_mode_detects_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "rules.md"
    stale.write_text("old\n")
    assert main([str(stale), "--check"]) == 1
    assert "stale" in capsys.readouterr().out
    assert main([str(stale)]) == 0
    assert main([str(stale), "--check"]) == 0
