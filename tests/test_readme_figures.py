"""``benchmarks/readme_table.py``: the README's speed figures come from a run of goals.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def readme_table():
    return benchmark_module.load("readme_table")


def test_the_readme_has_the_markers_once_each_in_order(readme_table):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(readme_table.START) == text.count(readme_table.END) == 1
    assert text.index(readme_table.START) < text.index(readme_table.END)


def test_only_what_lies_between_the_markers_is_replaced(readme_table, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# t\n\nbefore\n{readme_table.START}\nold figures\n{readme_table.END}\nafter\n"
    )
    readme_table.write(readme, "what  wall\nlint  1.0", ["python", "benchmarks/goals.py"])
    text = readme.read_text()
    assert text.startswith(f"# t\n\nbefore\n{readme_table.START}\n`python benchmarks/goals.py` at ")
    assert "```text\nwhat  wall\nlint  1.0\n```\n" + readme_table.END + "\nafter\n" in text
    assert "old figures" not in text


@pytest.mark.parametrize(
    "text",
    ["no markers\n", "<!-- goals.py: end -->\n<!-- goals.py: start -->\n"],
)
def test_missing_or_swapped_markers_are_refused(readme_table, text):
    with pytest.raises(ValueError, match="README.md needs the lines"):
        readme_table.between_markers(text, "table")
