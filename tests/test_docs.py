"""The docs: a Sphinx site that builds without warnings, its examples, the rule reference."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from codemods.registry import REGISTRY
from codemods.registry.render import explain, main, render_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"
RULES_MD = DOCS / "rules.md"


def test_rules_md_is_current():
    assert RULES_MD.read_text(encoding="utf-8") == render_markdown(), (
        "docs/rules.md is stale: run python -m codemods.registry.render docs/rules.md"
    )


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_every_rule_has_its_section(rule):
    text = RULES_MD.read_text(encoding="utf-8")
    assert f"\n## {rule.code}\n" in text
    section = text.split(f"\n## {rule.code}\n", 1)[1].split("\n## ", 1)[0]
    assert rule.example.after.splitlines()[-1] in section
    for case in rule.cases:
        assert f"```python\n{case.before}```" in section
        assert f"```python\n{case.after}```" in section
    assert "### Not reported" in section
    for source in rule.untouched:
        assert f"```python\n{source}```" in section


def test_every_capability_is_listed():
    text = RULES_MD.read_text(encoding="utf-8")
    for cap in REGISTRY.capabilities:
        assert f"| `{cap.name}` |" in text


def test_explain_has_ruffs_sections():
    text = explain(REGISTRY["FSDP103"])
    headings = ("What it does", "Why is this bad?", "Example", "Use instead", "More cases")
    for heading in (*headings, "Not reported", "Fix safety"):
        assert f"## {heading}" in text


def test_check_mode_detects_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "rules.md"
    stale.write_text("old\n")
    assert main([str(stale), "--check"]) == 1
    assert "stale" in capsys.readouterr().out
    assert main([str(stale)]) == 0
    assert main([str(stale), "--check"]) == 0


#: Both builds in one interpreter: the doctest builder after the HTML one, reading the
#: pages it parsed. A second ``python -m sphinx`` imported Sphinx, torch and compat
#: again, about 3.5 s of its 5 s. Each build's messages end with a line of its own.
_BUILDS = """\
import sys
from sphinx.cmd.build import build_main

docs, doctrees, *builds = sys.argv[1:]
for builder, out in zip(builds[::2], builds[1::2]):
    code = build_main(["-W", "-q", "-b", builder, "-d", doctrees, docs, out])
    sys.stdout.flush()
    print(f"{END} {builder} {code}", file=sys.stderr, flush=True)
"""
END = "--- the sphinx build ended:"


def _sphinx(doctrees: Path, **outs: Path) -> dict[str, tuple[int | None, str]]:
    """Each builder's exit status and messages, the builds run in ``outs``'s order."""
    # The `docs` and `test` extras install both; a machine with only torch may lack them.
    pytest.importorskip("sphinx", reason="Sphinx is not installed")
    pytest.importorskip("myst_parser", reason="myst-parser is not installed")
    command = [sys.executable, "-c", f"END = {END!r}\n{_BUILDS}", str(DOCS), str(doctrees)]
    for builder, out in outs.items():
        command += [builder, str(out)]
    run = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900
    )
    results: dict[str, tuple[int | None, str]] = {}
    messages = run.stdout
    for builder in outs:
        before, found, messages = messages.partition(f"{END} {builder} ")
        if not found:  # the process ended first: what it said is this build's
            results[builder] = (None, f"exit status {run.returncode}\n{before}")
            break
        code, _, messages = messages.partition("\n")
        results[builder] = (int(code), before)
    return results


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, tuple[Path, tuple[int | None, str]]]:
    """The HTML site and the guides' doctests, built from the sources in one process."""
    base = tmp_path_factory.mktemp("sphinx")
    outs = {"html": base / "html", "doctest": base / "doctest"}
    done = _sphinx(base / "doctrees", **outs)
    return {builder: (out, done.get(builder, (None, "not run"))) for builder, out in outs.items()}


@pytest.fixture(scope="module")
def html(builds) -> Path:
    """The HTML site, built from the sources."""
    out, (code, messages) = builds["html"]
    assert code == 0, messages
    return out


@pytest.mark.slow
def test_sphinx_builds_with_warnings_as_errors(html):
    pages = ("index", "installation", "guide", "recipes", "rules", "api", "matrix")
    for page in (*pages, "contributing"):
        assert (html / f"{page}.html").exists(), page


@pytest.mark.slow
def test_every_rule_is_in_the_built_reference(html):
    text = (html / "rules.html").read_text(encoding="utf-8")
    for rule in REGISTRY:
        assert f'id="{rule.code.lower()}"' in text, rule.code


@pytest.mark.slow
def test_the_contributing_page_shows_the_test_entry(html):
    page = (html / "contributing.html").read_text(encoding="utf-8")
    text = unescape(re.sub(r"<[^>]+>", "", page))  # the code as shown, highlighting aside
    for word in ("fsdp-ignored-parameters", "kept in fp32", "class Fsdp198", "def ast_call"):
        assert word in text, word


@pytest.mark.slow
def test_the_api_reference_documents_compat(html):
    text = (html / "api.html").read_text(encoding="utf-8")
    for name in (
        "compat.fsdp.FullyShardedDataParallel",
        "compat.fairscale.enable_wrap",
        "compat.fsdp2.fully_shard_by_policy",
        "compat.features.current",
    ):
        assert f'id="{name}"' in text, name


@pytest.mark.slow
def test_the_guides_examples_run_as_doctests(builds):
    # Built after the HTML site, from its parsed pages (the same sources and
    # configuration): Sphinx reads none of them again, about half of this build's time.
    out, (code, messages) = builds["doctest"]
    assert code == 0, messages
    summary = (out / "output.txt").read_text(encoding="utf-8")
    assert " 0 failures in tests" in summary and "tests" in summary
