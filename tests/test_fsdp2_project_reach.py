"""A check for FSDP1's class holds only the wrapper calls whose models can reach it.

Within a project, a model travels along imports (``codemods.cli.project_reach``): two
recipes that import the same library do not see each other's models, so one recipe
that stays FSDP1 (it reads FSDP1's flat parameters behind ``isinstance(model, FSDP)``)
no longer holds the other; a check in a module that a third file imports together with
the builder does hold it; a test's checks hold only tests. Each in the shape it was met
in (torchtune's and Lumina's recipes, verl's test scripts), written by us; a package of
our own writing is migrated and trained both ways on 2 gloo ranks.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from codemods.migrate import main as migrate
from tests.test_fsdp2_across_files import _runs_on_cpu, _same_training, _train_copies

FSDP1 = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
WRAPS = (
    FSDP1 + "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n\n"
    "def build(model):\n"
    "    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
)
#: A file that stays FSDP1 (it reads FSDP1's flat parameters) and checks FSDP1's class.
STAYS = (
    FSDP1 + "\n\ndef flat(model):\n    if isinstance(model, FSDP):\n"
    "        return model.params\n    return []\n"
)
#: The same check, with FSDP1's internals beside it: it cannot follow FSDP2 models.
CHECKS = (
    FSDP1 + "from torch.distributed.fsdp._runtime_utils import _lazy_init\n\n\n"
    "def prepare(model):\n    _lazy_init(model, model)\n    return isinstance(model, FSDP)\n"
)


def _findings(root: Path, extra: tuple[str, ...] = ()) -> dict[str, list[dict]]:
    report = root / "report.json"
    flags = ["--check", "--unsafe-fixes", "--extend-select", "FSDP4", *extra]
    migrate([*flags, "--report", str(report), str(root)])
    files = json.loads(report.read_text())["files"]
    return {
        Path(f["path"]).resolve().relative_to(root.resolve()).as_posix(): [
            x for x in f["findings"] if x["code"] == "FSDP401"
        ]
        for f in files
    }


def _project(root: Path, files: dict[str, str], config: str = "") -> None:
    declared = '[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n'
    (root / "pyproject.toml").write_text(declared + config)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.parametrize(
    "library", ["from lib.data import batches\n", "import lib.data\n", "from lib import data\n"]
)
def test_a_recipe_that_stays_fsdp1_holds_no_other_recipe(tmp_path, library):
    data = "def batches():\n    return []\n"
    _project(
        tmp_path,
        {
            "recipes/finetune.py": library + WRAPS,
            "recipes/inspect.py": library
            + WRAPS.replace("def build", "def other")
            + STAYS[len(FSDP1) :],
            "lib/data.py": data,
        },
    )
    found = _findings(tmp_path)
    (converted,) = found["recipes/finetune.py"]
    assert converted["fixed"] and not converted["withheld"]
    (kept,) = found["recipes/inspect.py"]
    assert not kept["fixed"] and "model.params" in kept["withheld"]


@pytest.mark.parametrize(
    ("imported", "reached"),
    [
        # a module of a namespace package (no __init__.py), then a name from it
        ("from recipes.spin.actor import Actor", ["recipes/spin/actor.py"]),
        # a package the run does not hold: every file under the folder it names
        ("from lib.io import save", ["lib/io/a.py", "lib/io/b.py"]),
        ("import recipes.spin", ["recipes/spin/actor.py"]),
    ],
)
def test_an_import_reaches_the_longest_part_of_its_name_the_run_holds(imported, reached):
    from codemods.cli.project_reach import ImportGraph

    root = Path("/p")
    files = ["recipes/spin/actor.py", "recipes/dpo/trainer.py", "lib/io/a.py", "lib/io/b.py"]
    trees = {root / name: ast.parse("") for name in files}
    trees[root / "recipes/ppo/main.py"] = ast.parse(imported)
    graph = ImportGraph(trees, dict.fromkeys(trees, root))
    found = graph.imports[root / "recipes/ppo/main.py"]
    assert sorted(p.relative_to(root).as_posix() for p in found) == reached


def test_a_check_imported_beside_the_builder_holds_it(tmp_path):
    # `train.py` names no FSDP1 class, but it passes what `build` returns to `prepare`.
    train = "from builder import build\nfrom checks import prepare\n\nprepare(build(model))\n"
    _project(tmp_path, {"train.py": train, "builder.py": WRAPS, "checks.py": CHECKS})
    (kept,) = _findings(tmp_path)["builder.py"]
    assert not kept["fixed"]
    assert kept["withheld"].startswith("fix withheld: checks.py:7: `isinstance(..., FSDP)`")


def test_files_with_no_root_link_through_a_file_that_names_no_fsdp(tmp_path):
    train = "from builder import build\nfrom checks import prepare\n\nprepare(build(model))\n"
    for name, text in {"train.py": train, "builder.py": WRAPS, "checks.py": CHECKS}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "other.py").write_text(WRAPS)  # imported by no one: its own
    found = _findings(tmp_path, ("--target-torch", "2.6.."))
    assert not found["builder.py"][0]["fixed"] and "checks.py" in found["builder.py"][0]["withheld"]
    assert found["other.py"][0]["fixed"]


def test_a_library_check_holds_the_tests_that_import_the_library(tmp_path):
    test = "from pkg.checks import prepare\n" + WRAPS + "\n\ndef test_build(model):\n"
    test += "    prepare(build(model))\n"
    _project(tmp_path, {"pkg/checks.py": CHECKS, "tests/test_pkg.py": test})
    (kept,) = _findings(tmp_path)["tests/test_pkg.py"]
    assert not kept["fixed"] and "pkg/checks.py:7" in kept["withheld"]


def test_a_test_check_holds_the_tests_that_import_it(tmp_path):
    helper = CHECKS
    test = "from tests.helpers import prepare\n" + WRAPS
    _project(tmp_path, {"tests/helpers.py": helper, "tests/test_pkg.py": test, "pkg/lib.py": WRAPS})
    found = _findings(tmp_path)
    assert not found["tests/test_pkg.py"][0]["fixed"]
    (library,) = found["pkg/lib.py"]
    assert library["fixed"]  # no one imports both it and the helper


def test_a_conversion_that_stands_with_an_ignored_file_is_held(tmp_path):
    # The helper converts with the library's call (on the bridge) only when FSDP401 runs
    # there: a per-file ignore keeps it FSDP1, and so the library, written by no one.
    helper = FSDP1 + "\n\ndef is_sharded(model):\n    return isinstance(model, FSDP)\n"
    ignored = '[tool.fsdp-compat.per-file-ignores]\n"helper.py" = ["FSDP401"]\n'
    _project(tmp_path, {"lib.py": "import helper\n" + WRAPS, "helper.py": helper}, ignored)
    before = {name: (tmp_path / name).read_text() for name in ("lib.py", "helper.py")}
    (kept,) = _findings(tmp_path, ("--fsdp2-bridge",))["lib.py"]
    assert not kept["fixed"]
    assert "helper.py converts together with this file" in kept["withheld"]
    assert "FSDP401 is ignored there" in kept["withheld"]
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(tmp_path)])
    assert {name: (tmp_path / name).read_text() for name in before} == before


def test_a_group_whose_file_cannot_be_written_is_put_back(tmp_path, capsys):
    helper = FSDP1 + "\n\ndef is_sharded(model):\n    return isinstance(model, FSDP)\n"
    _project(tmp_path, {"lib.py": "import helper\n" + WRAPS, "helper.py": helper})
    before = {name: (tmp_path / name).read_text() for name in ("lib.py", "helper.py")}
    (tmp_path / "lib.py").chmod(0o444)  # the helper, first in order, is written before it
    try:
        code = migrate(
            ["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(tmp_path)]
        )
    finally:
        (tmp_path / "lib.py").chmod(0o644)
    assert code == 2
    assert {name: (tmp_path / name).read_text() for name in before} == before
    assert "put back unchanged: its FSDP401 conversion stands with" in capsys.readouterr().err


#: Two recipes of our own writing: ``train.py`` converts; ``inspect_flat.py`` reads
#: FSDP1's flat parameters behind ``isinstance(model, FSDP)`` and stays FSDP1.
RECIPES = Path(__file__).parent / "fixtures" / "fsdp2_recipes_project"


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("recipes")
    for name in ("legacy", "migrated"):
        shutil.copytree(RECIPES, root / name)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n')
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", str(root / "migrated")])
    return root


def test_the_recipe_converts_beside_the_one_that_stays(recipes):
    migrated, legacy = recipes / "migrated", recipes / "legacy"
    train = (migrated / "train.py").read_text()
    assert "fully_shard(model" in train or "fully_shard(make_model" in train
    assert "FullyShardedDataParallel" not in train and "FSDP1Api" not in train
    inspect = migrated / "inspect_flat.py"
    assert inspect.read_text() == (legacy / "inspect_flat.py").read_text()


def _run_both(rank: int, world_size: int, root: str, steps: int) -> dict[str, Any]:
    import importlib
    import sys

    results = _train_copies(rank, world_size, root, steps)
    sys.path.insert(0, root)
    for name in ("legacy", "migrated"):
        results[name]["flat"] = importlib.import_module(f"{name}.inspect_flat").main(rank)
    return results


@pytest.mark.distributed
def test_the_converted_recipe_trains_as_fsdp1_and_the_other_keeps_fsdp1(recipes):
    from tests import distributed

    _runs_on_cpu()
    results = distributed.run(_run_both, str(recipes), 3, world_size=2, timeout=300)
    _same_training(results)
    for result in results:  # the recipe left FSDP1 still reads FSDP1's flat parameters
        assert result["migrated"]["flat"] == result["legacy"]["flat"] != []


#: Helpers in the shape of a project that met FSDP2 (verl's offload helpers): FSDP2
#: models return before any FSDP1 code.
DISPATCHING = (
    FSDP1 + "from torch.distributed.fsdp import FSDPModule, StateDictType\n"
    "from torch.distributed.fsdp._runtime_utils import _lazy_init\n\n\n"
    "def fsdp_version(model):\n"
    "    if isinstance(model, FSDP):\n        return 1\n"
    "    elif isinstance(model, FSDPModule):\n        return 2\n"
    "    return 0\n\n\n"
    "def offload(model):\n"
    "    if fsdp_version(model) == 2:\n        return None\n"
    "    assert isinstance(model, FSDP)\n"
    "    _lazy_init(model, model)\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        return model.state_dict()\n"
)


def test_fsdp1_code_after_an_early_return_for_fsdp2_models_holds_nothing(tmp_path):
    # `legacy.py` stays FSDP1 and uses the helpers too: they keep FSDP1 code for it,
    # which converted models never reach.
    legacy = "from helpers import offload\n" + WRAPS + STAYS[len(FSDP1) :]
    train = "from helpers import offload\n" + WRAPS
    _project(tmp_path, {"helpers.py": DISPATCHING, "train.py": train, "legacy.py": legacy})
    found = _findings(tmp_path)
    (converted,) = found["train.py"]
    assert converted["fixed"] and not converted["withheld"]
    assert not found["legacy.py"][0]["fixed"]
