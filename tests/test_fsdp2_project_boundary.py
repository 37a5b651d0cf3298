"""The project FSDP401 converts together is what a user means by one.

Files with no project root are each their own project unless they import each other; a
vendored copy of torch's modules inside a project is not its code; a check that already
answers FSDP2 models (``isinstance(m, (FSDP, FSDPModule))``, ``FSDP | FSDP2``) stands in
no way. Each in the shape it was met in (one stray script freezing a folder of scripts;
verl's ``third_party/torch`` copy and its FSDP1-or-FSDP2 checks), written by us.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from codemods.cli.project_fsdp1 import checks_in
from codemods.migrate import main as migrate
from tests.test_fsdp2_codemod import _migrate

FSDP1 = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
WRAPS = (
    FSDP1 + "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n\n"
    "def wrap_fsdp(model):\n"
    "    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
)
#: A file that stays FSDP1 (it reads FSDP1's flat parameters) and checks FSDP1's class.
STAYS = (
    FSDP1 + "\n\ndef wrap(model):\n    model = FSDP(model)\n    return model.params\n\n\n"
    "def is_sharded(model):\n    return isinstance(model, FSDP)\n"
)


def _findings(root: Path, *paths: str) -> dict[str, list[dict]]:
    report = root / "report.json"
    flags = ["--check", "--unsafe-fixes", "--extend-select", "FSDP4", "--target-torch", "2.6.."]
    migrate([*flags, "--report", str(report), *(str(root / p) for p in paths)])
    files = json.loads(report.read_text())["files"]
    return {
        Path(f["path"]).resolve().relative_to(root.resolve()).as_posix(): [
            x for x in f["findings"] if x["code"] == "FSDP401"
        ]
        for f in files
    }


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_scripts_with_no_project_root_are_each_their_own_project(tmp_path):
    _write(tmp_path, {"train.py": WRAPS, "old_experiment.py": STAYS})
    found = _findings(tmp_path, ".")
    (converted,) = found["train.py"]
    assert converted["fixed"] and not converted["withheld"]
    assert not any(f["fixed"] for f in found["old_experiment.py"])


@pytest.mark.parametrize(
    "link",
    ["from old_experiment import is_sharded\n", "import old_experiment\n"],
    ids=["from-import", "import"],
)
def test_scripts_that_import_each_other_are_one_project(tmp_path, link):
    _write(tmp_path, {"train.py": link + WRAPS, "old_experiment.py": STAYS})
    (kept,) = _findings(tmp_path, ".")["train.py"]
    assert not kept["fixed"]
    assert "old_experiment.py" in kept["withheld"] and "which stays FSDP1" in kept["withheld"]


def test_a_package_without_a_root_links_by_relative_imports(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/train.py": "from .checks import is_sharded\n" + WRAPS,
            "pkg/checks.py": STAYS,
            "elsewhere/train.py": WRAPS,
        },
    )
    found = _findings(tmp_path, "pkg", "elsewhere")
    (kept,) = found["pkg/train.py"]
    assert not kept["fixed"] and "pkg/checks.py" in kept["withheld"]
    (converted,) = found["elsewhere/train.py"]
    assert converted["fixed"] and not converted["withheld"]


@pytest.mark.parametrize(
    "copy", ["verl/third_party/torch/distributed/state_dict.py", "lib/torch/distributed/sd.py"]
)
def test_a_vendored_copy_of_torch_is_not_the_projects_code(tmp_path, copy):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    vendored = FSDP1 + "\n\ndef _state(module):\n    return isinstance(module, FSDP)\n"
    _write(tmp_path, {"verl/workers/shard.py": WRAPS, copy: vendored})
    (converted,) = _findings(tmp_path, ".")["verl/workers/shard.py"]
    assert converted["fixed"] and not converted["withheld"]


def test_the_projects_own_torch_folder_is_its_code(tmp_path):
    # A checkout of torch itself: its `torch/` is the project's code, and checks there count.
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    checks = FSDP1 + "\n\ndef is_sharded(module):\n    return isinstance(module, FSDP)\n"
    _write(tmp_path, {"torch/distributed/helpers.py": checks, "tools/shard.py": WRAPS})
    (kept,) = _findings(tmp_path, ".")["tools/shard.py"]
    assert not kept["fixed"] and "torch/distributed/helpers.py" in kept["withheld"]


FSDP2 = "from torch.distributed.fsdp import FSDPModule\n"
ANSWERS_FSDP2 = [
    FSDP2 + "ok = isinstance(model, (FSDP, FSDPModule))\n",
    "from torch.distributed.fsdp import FSDPModule as FSDP2\n"
    "ok = isinstance(model, FSDP | FSDP2)\n",
    FSDP2 + "ok = issubclass(kind, (DDP, FSDP, FSDPModule))\n",
]


@pytest.mark.parametrize("check", ANSWERS_FSDP2, ids=["tuple", "union", "issubclass"])
def test_a_check_that_answers_fsdp2_models_is_no_project_check(check):
    assert checks_in(ast.parse(FSDP1 + check)) == []


@pytest.mark.parametrize("check", ANSWERS_FSDP2[:2], ids=["tuple", "union"])
def test_a_check_that_answers_fsdp2_models_elsewhere_blocks_nothing(tmp_path, check):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    _write(tmp_path, {"lib.py": WRAPS, "helper.py": FSDP1 + check})
    (converted,) = _findings(tmp_path, ".")["lib.py"]
    assert converted["fixed"] and not converted["withheld"]


@pytest.mark.parametrize("check", ANSWERS_FSDP2[:2], ids=["tuple", "union"])
@pytest.mark.parametrize("torch_range", ["2.6..", "2.0.."], ids=["plain", "dual"])
def test_a_check_that_answers_fsdp2_models_in_the_file_is_left_as_written(check, torch_range):
    from codemods.releases import Releases

    body = "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
    new, (finding,) = _migrate(
        check.replace("model, ", "other, ") + body, releases=Releases.parse(torch=torch_range)
    )
    assert finding.fixed
    kept = check.splitlines()[-1].replace("model, ", "other, ")
    assert kept in new.splitlines()  # FSDP1 models and FSDP2 ones pass it as they are


DISPATCH = (
    FSDP1 + FSDP2 + "\n\ndef clip(model, norm):\n"
    "    if isinstance(model, FSDP):\n"
    "        return model.clip_grad_norm_(norm)\n"
    "    elif isinstance(model, FSDPModule):\n"
    "        return torch.nn.utils.clip_grad_norm_(model.parameters(), norm)\n"
)


def test_a_check_paired_with_fsdp2s_in_its_chain_is_no_project_check():
    assert checks_in(ast.parse(DISPATCH)) == []
    # a chain on another value, or with no FSDP2 branch, still counts
    other = DISPATCH.replace("isinstance(model, FSDPModule)", "isinstance(other, FSDPModule)")
    alone = DISPATCH.replace("isinstance(model, FSDPModule)", "hasattr(model, 'x')")
    assert (
        checks_in(ast.parse(other)) == checks_in(ast.parse(alone)) == [(6, "isinstance(..., FSDP)")]
    )


def test_a_project_whose_other_file_dispatches_on_fsdp2_converts(tmp_path):
    # verl's shape: an engine asks FSDP1 then FSDPModule; the workers wrap.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    _write(tmp_path, {"workers.py": WRAPS, "engine.py": DISPATCH})
    (converted,) = _findings(tmp_path, ".")["workers.py"]
    assert converted["fixed"] and not converted["withheld"]
