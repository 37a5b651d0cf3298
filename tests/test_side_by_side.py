"""``benchmarks/side_by_side.py``: the trees it compares, and one short run of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def side_by_side():
    return benchmark_module.load("side_by_side")


def test_differing_files_are_named(side_by_side, tmp_path: Path) -> None:
    first, other = tmp_path / "a", tmp_path / "b"
    for tree in (first, other):
        (tree / "pkg").mkdir(parents=True)
        (tree / "same.py").write_text("x = 1\n")
        (tree / "pkg" / "mod.py").write_text("y = 2\n")
    assert side_by_side.differing(first, other) == []
    (other / "pkg" / "mod.py").write_text("y = 3\n")
    (other / "extra.py").write_text("")
    assert side_by_side.differing(first, other) == ["extra.py", "pkg/mod.py"]


def test_a_short_run_prints_each_checkout(side_by_side, tmp_path: Path, capsys) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "policy.py").write_text(
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
        "policy = default_auto_wrap_policy\n"
    )
    argv = [str(tree), f"one={ROOT}", f"two={ROOT}", "--repeat", "1", "--same-output"]
    assert side_by_side.main([*argv, "--", "--select", "FSDP101"]) == 0
    printed = capsys.readouterr().out
    assert "one" in printed and "two" in printed and "x the floor" in printed
    assert "output of two against one: the same" in printed
    assert "default_auto_wrap_policy" in (tree / "policy.py").read_text()  # copies only
