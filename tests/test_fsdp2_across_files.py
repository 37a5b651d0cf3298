"""FSDP401 across the files of one run: a check for FSDP1's class elsewhere keeps the project FSDP1.

Real projects build the model in one module and check it in another (torchtune's tests
count ``FSDP.fsdp_modules(wrap_fsdp(model))``; a library asks ``isinstance(module,
FullyShardedDataParallel)``). The rewrite decides file by file, so such a check stays
FSDP1 while the file that builds the model converts: the project's conversion is
withheld, naming the check (``codemods.cli.project_fsdp1``). A class call the bridge's
model answers (``FSDP.state_dict_type(model, ...)`` in a checkpoint helper) puts the
calls on the bridge instead of plain FSDP2 code.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from codemods.cli.project_fsdp1 import checks_in
from codemods.migrate import main as migrate

FSDP1 = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
LIBRARY = (
    FSDP1 + "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n\n"
    "def wrap_fsdp(model):\n"
    "    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
)


@pytest.mark.parametrize(
    ("use", "found"),
    [
        ("assert len(FSDP.fsdp_modules(model)) == 3", [(2, "FSDP.fsdp_modules")]),
        ("assert isinstance(model, FSDP)", [(2, "isinstance(..., FSDP)")]),
        ("assert issubclass(kind, (DDP, FSDP))", [(2, "issubclass(..., FSDP)")]),
        ("FSDP.clip_grad_norm_(model, 1.0)", [(2, "FSDP.clip_grad_norm_")]),
        # what the bridge's model answers, and names that are not FSDP1's class
        ("with FSDP.state_dict_type(model, kind):\n    pass", []),
        ("state = FSDP.optim_state_dict(model, optim)", []),
        ("assert isinstance(model, FSDPModule)", []),
        ("FSDP = object\nassert isinstance(model, Other)", []),
    ],
)
def test_the_checks_only_an_fsdp1_model_satisfies(use, found):
    assert checks_in(ast.parse(FSDP1 + use + "\n")) == found


def test_the_spellings_of_the_class_are_followed():
    source = (
        "import torch.distributed.fsdp as fsdp\n"
        "import torch\n"
        "a = isinstance(m, fsdp.FullyShardedDataParallel)\n"
        "b = isinstance(m, torch.distributed.fsdp.FullyShardedDataParallel)\n"
    )
    assert [line for line, _ in checks_in(ast.parse(source))] == [3, 4]


def _project(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n')
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _fsdp401(root: Path, *paths: str) -> list[dict]:
    report = root / "report.json"
    flags = ["--check", "--unsafe-fixes", "--extend-select", "FSDP4", "--report", str(report)]
    migrate([*flags, *(str(root / p) for p in paths)])
    files = json.loads(report.read_text())["files"]
    return [x for f in files for x in f["findings"] if x["code"] == "FSDP401"]


def test_a_check_in_another_file_of_the_project_withholds_the_conversion(tmp_path):
    test = FSDP1 + "from lib import wrap_fsdp\n\n\ndef test_units(model):\n"
    test += "    assert len(FSDP.fsdp_modules(wrap_fsdp(model))) == 3\n"
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_lib.py": test})
    (finding,) = _fsdp401(tmp_path, ".")
    assert not finding["fixed"]
    assert finding["withheld"].startswith("fix withheld: tests/test_lib.py:6: `FSDP.fsdp_modules`")
    assert "another file of this project" in finding["withheld"]


@pytest.mark.parametrize(
    ("other", "form"),
    [
        # a class call the bridge's model answers (a plain FSDP2 model does not)
        (
            FSDP1 + "def save(model):\n    with FSDP.state_dict_type(model, kind):\n        pass\n",
            "fully_shard_like_fsdp1(",
        ),
        # a file that does not name FSDP1's class
        ("def test_units(model):\n    assert model is not None\n", "fully_shard(model"),
    ],
    ids=["routed-call", "no-check"],
)
def test_without_such_a_check_the_file_converts(tmp_path, other, form):
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_lib.py": other})
    (finding,) = _fsdp401(tmp_path, ".")
    assert finding["fixed"] and not finding["withheld"]
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", str(tmp_path)])
    assert form in (tmp_path / "lib.py").read_text()


def test_a_check_in_another_project_stands_in_no_way(tmp_path):
    test = FSDP1 + "def test_units(model):\n    assert isinstance(model, FSDP)\n"
    _project(tmp_path / "one", {"lib.py": LIBRARY})
    _project(tmp_path / "two", {"test_other.py": test})
    (finding,) = _fsdp401(tmp_path, "one", "two")
    assert finding["fixed"]


def test_files_that_convert_together_keep_no_check_in_each_others_way(tmp_path):
    # Each wraps and checks: both convert, their checks rewritten with them.
    check = "\n\ndef is_sharded(model):\n    return isinstance(model, FSDP)\n"
    _project(tmp_path, {"lib.py": LIBRARY + check, "other.py": LIBRARY + check})
    findings = _fsdp401(tmp_path, ".")
    assert len(findings) == 2 and all(f["fixed"] for f in findings)


def test_a_file_that_stays_fsdp1_keeps_its_checks_in_the_others_way(tmp_path):
    # The test wraps too, but reads FSDP1's state of each unit: it stays FSDP1, and so
    # do its checks on what the library builds.
    test = LIBRARY + "\n\ndef test_units(model):\n"
    test += "    for unit in FSDP.fsdp_modules(wrap_fsdp(model)):\n"
    test += "        assert unit.sharding_strategy is not None\n"
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_lib.py": test})
    findings = _fsdp401(tmp_path, ".")
    assert findings and not any(f["fixed"] for f in findings)
    (library,) = [f for f in findings if "another file" in (f["withheld"] or "")]
    assert library["withheld"].startswith("fix withheld: tests/test_lib.py:11: `FSDP.fsdp_modules`")
