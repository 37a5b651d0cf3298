"""``benchmarks/lint_stages.py`` times the stages of a real lint and prints each one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_stage_is_timed_on_a_tree_with_legacy_code(tmp_path: Path) -> None:
    # long enough for each stage to take a millisecond (the figures have three decimals)
    body = "".join(f"def step_{i}(model, x):\n    return model(x) + {i}\n\n" for i in range(600))
    (tmp_path / "train.py").write_text(
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
        f"policy = default_auto_wrap_policy\n{body}",
        encoding="utf-8",
    )
    (tmp_path / "plain.py").write_text("import torch\nx = torch.ones(2)\n", encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "lint_stages.py"),
            str(tmp_path),
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    spent = dict(re.findall(r"^  (.+?)\s+(\d+\.\d+) s", run.stdout, re.M))
    assert len(spent) == 8, run.stdout
    # the legacy file is parsed and goes through the detector; the plain one is not parsed
    for stage in ("ast.parse", "tree index", "detector: scopes", "detector: walk"):
        assert float(spent[stage]) > 0, stage
    assert float(spent["screening, whole"]) >= float(spent["detector: walk"])
