"""FSDP2's names that a module already binds through another import.

verl's workers import ``FSDPModule`` and ``MixedPrecisionPolicy`` from the project's own
``fsdp_utils`` (a re-export under a torch version gate, ``None`` on old releases).
FSDP401's code needs torch's: importing them again rebound the module's names (pyflakes
F811), and whichever import ran last decided what the old and the new code got. Now the
new code reuses a binding that is the same object (FSDP2's other home), and otherwise
imports torch's under a name of its own, which only the new code spells. Fixtures are
of our own writing, in the shapes met.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from codemods.engine.spellings import top_bindings
from codemods.migrate import main as migrate
from codemods.syntax.lazy_libcst import cst

FSDP1 = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
#: The project's own names for FSDP2's classes, gated on the torch release.
REEXPORT = (
    "import torch\n\n"
    "if hasattr(torch.distributed, 'fsdp') and torch.__version__ >= '2.6':\n"
    "    from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy\n"
    "else:\n"
    "    FSDPModule = MixedPrecisionPolicy = None\n"
)
#: A worker with an FSDP2 path of its own beside the FSDP1 call FSDP401 converts.
WORKER = (
    "import torch\n" + FSDP1 + "from torch.distributed.fsdp import MixedPrecision\n\n"
    "from pkg.names import FSDPModule, MixedPrecisionPolicy\n\n\n"
    "def build(model, fsdp2=False):\n"
    "    if fsdp2:\n"
    "        return MixedPrecisionPolicy(param_dtype=torch.bfloat16)\n"
    "    mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)\n"
    "    model = FSDP(model, mixed_precision=mp, use_orig_params=True{extra})\n"
    "    return model, isinstance(model, FSDPModule)\n"
)


def _migrate(root: Path, files: dict[str, str], torch: str = ">=2.6") -> dict[str, str]:
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "p"\ndependencies = ["torch{torch}"]\n'
    )
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    migrate(["--unsafe-fixes", "--select", "FSDP401", str(root)])
    return {name: (root / name).read_text() for name in files}


def _pyflakes(text: str) -> list[str]:
    from pyflakes.api import check
    from pyflakes.reporter import Reporter

    out = io.StringIO()
    check(text, "worker.py", Reporter(out, out))
    kinds = ("redefinition", "undefined name", "imported but unused")
    return [line for line in out.getvalue().splitlines() if any(k in line for k in kinds)]


def test_top_bindings_reads_gates_and_leaves_functions_out():
    source = (
        "from a import X\nimport b.c\ntry:\n    from d import Y as Z\nexcept ImportError:\n"
        "    Z = None\ndef f():\n    from e import W\nclass K: ...\n"
    )
    assert top_bindings(cst.parse_module(source)) == {
        "X": ["a"],
        "b": [None],
        "Z": [None, None],
        "f": [None],
        "K": [None],
    }


def test_a_name_the_project_binds_is_imported_apart_and_spelled_so_by_new_code(tmp_path):
    out = _migrate(tmp_path, {"pkg/names.py": REEXPORT, "pkg/worker.py": WORKER.format(extra="")})
    worker = out["pkg/worker.py"]
    assert "MixedPrecisionPolicy as MixedPrecisionPolicy_" in worker
    assert "mp = MixedPrecisionPolicy_(param_dtype=torch.bfloat16" in worker
    # The project's own code keeps the project's names.
    assert "return MixedPrecisionPolicy(param_dtype=torch.bfloat16)" in worker
    assert "from pkg.names import FSDPModule, MixedPrecisionPolicy" in worker
    assert "isinstance(model, FSDPModule)" in worker
    assert _pyflakes(worker) == []


def test_the_helpers_spell_the_name_apart_too(tmp_path):
    # `sync_module_states` brings FSDP401's helpers, which test `FSDPModule`.
    worker = WORKER.format(extra=", sync_module_states=True")
    out = _migrate(tmp_path, {"pkg/names.py": REEXPORT, "pkg/worker.py": worker})["pkg/worker.py"]
    assert "if not isinstance(child, FSDPModule_)" in out
    assert "FSDPModule as FSDPModule_" in out
    assert "return model, isinstance(model, FSDPModule)\n" in out
    assert _pyflakes(out) == []


@pytest.mark.parametrize(
    "home", ["torch.distributed._composable.fsdp", "torch.distributed.fsdp._fully_shard"]
)
def test_a_binding_from_fsdp2s_other_home_is_reused(tmp_path, home):
    worker = WORKER.format(extra="").replace(
        "from pkg.names import FSDPModule, MixedPrecisionPolicy\n",
        f"from {home} import FSDPModule, MixedPrecisionPolicy\n",
    )
    out = _migrate(tmp_path, {"pkg/worker.py": worker})["pkg/worker.py"]
    assert "MixedPrecisionPolicy_" not in out
    assert "mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16" in out
    assert "from torch.distributed.fsdp import fully_shard\n" in out
    assert _pyflakes(out) == []


def test_the_dual_stack_imports_the_name_apart(tmp_path):
    # A range that starts before FSDP2: FSDP2's names come from the `try` block.
    files = {"pkg/names.py": REEXPORT, "pkg/worker.py": WORKER.format(extra="")}
    out = _migrate(tmp_path, files, torch=">=2.0")["pkg/worker.py"]
    assert "MixedPrecisionPolicy as MixedPrecisionPolicy_" in out
    assert "MixedPrecisionPolicy_ = fully_shard = None" in out
    assert "MixedPrecisionPolicy_(" in out
    assert "return MixedPrecisionPolicy(param_dtype=torch.bfloat16)" in out
    assert _pyflakes(out) == []


#: The project's stand-ins where it has no FSDP2 (this run's torch has it: the project's
#: names are not torch's, so new code that took them would fail).
STANDINS = "FSDPModule = MixedPrecisionPolicy = None\n"


def _build_both(rank: int, world_size: int, root: str) -> dict[str, Any]:
    import importlib
    import sys

    import torch

    sys.path.insert(0, root)
    results: dict[str, Any] = {}
    for name in ("legacy", "migrated"):
        worker = importlib.import_module(f"{name}.pkg.worker")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        wrapped, _ = worker.build(model)
        torch.manual_seed(1 + rank)
        out = wrapped(torch.randn(3, 4))
        out.float().sum().backward()
        results[name] = {"out": out.detach().float().flatten().tolist(), "dtype": str(out.dtype)}
    return results


@pytest.mark.distributed
def test_the_new_code_runs_with_torchs_class_where_the_project_binds_another(tmp_path):
    from tests import distributed
    from tests.test_fsdp2_across_files import _runs_on_cpu

    _runs_on_cpu()
    worker = WORKER.format(extra=", device_id=torch.device('cpu')").replace(
        "from pkg.names import FSDPModule, MixedPrecisionPolicy\n",
        "from .names import FSDPModule, MixedPrecisionPolicy\n",
    )
    worker = worker.replace(
        "    return model, isinstance(model, FSDPModule)\n", "    return model, 0\n"
    )
    files = {"pkg/__init__.py": "", "pkg/names.py": STANDINS, "pkg/worker.py": worker}
    for name in ("legacy", "migrated"):
        for path, text in files.items():
            (tmp_path / name / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / path).write_text(text)
        (tmp_path / name / "__init__.py").write_text("")
    _migrate(tmp_path / "migrated", files)
    assert "MixedPrecisionPolicy_(" in (tmp_path / "migrated/pkg/worker.py").read_text()
    for result in distributed.run(_build_both, str(tmp_path), world_size=2, timeout=300):
        # bf16 parameters on both: the new code built torch's policy, not the stand-in.
        assert result["migrated"]["dtype"] == result["legacy"]["dtype"] == "torch.bfloat16"
        assert result["migrated"]["out"] == pytest.approx(result["legacy"]["out"], abs=1e-2)
