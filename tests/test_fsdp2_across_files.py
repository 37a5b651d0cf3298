"""FSDP401 across the files of one run: a project's files convert together, or none does.

Real projects build the model in one module and check it in another (torchtune's tests
count ``FSDP.fsdp_modules(wrap_fsdp(model))``; a checkpoint helper asks
``isinstance(model, FSDP)`` before FSDP1's class calls). A file that only checks
converts with the wrapper calls whose models reach it (imports link them) where all of
them convert and its checks can follow them onto the bridge; otherwise its checks stay
FSDP1 and so does every wrapper call whose models reach it, each finding naming the
file and why (``codemods.cli.project_fsdp1``); a test's checks hold only tests. A
class call the bridge's model answers puts the calls on the bridge instead of plain
FSDP2 code. A package of our own writing in the shape of real recipes is migrated and
trained both ways on 2 gloo ranks. The runs here ask for the bridge (``--fsdp2-bridge``,
opt-in) unless they say otherwise.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

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
#: The library, importing its helper (``helper.py``): its models reach the helper's checks.
LINKED = "import helper\n" + LIBRARY


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
    flags = [
        "--check",
        "--unsafe-fixes",
        "--extend-select",
        "FSDP4",
        "--fsdp2-bridge",
        "--report",
        str(report),
    ]
    migrate([*flags, *(str(root / p) for p in paths)])
    files = json.loads(report.read_text())["files"]
    return [x for f in files for x in f["findings"] if x["code"] == "FSDP401"]


def test_a_file_that_only_checks_converts_with_the_projects_calls(tmp_path):
    test = FSDP1 + "from lib import wrap_fsdp\n\n\ndef test_units(model):\n"
    test += "    assert len(FSDP.fsdp_modules(wrap_fsdp(model))) == 3\n"
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_lib.py": test})
    findings = _fsdp401(tmp_path, ".")
    assert len(findings) == 2 and all(f["fixed"] for f in findings)
    follows = "the project's FSDP1 models become FSDP2 with lib.py:7"
    assert sum(follows in f["message"] for f in findings) == 1
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(tmp_path)])
    assert "fully_shard_like_fsdp1(model" in (tmp_path / "lib.py").read_text()
    text = (tmp_path / "tests" / "test_lib.py").read_text()
    assert "if isinstance(submodule, FSDPModule)]" in text
    assert "FullyShardedDataParallel" not in text


@pytest.mark.parametrize(
    ("branch", "why"),
    [
        # an FSDP1 attribute the bridge's model does not keep
        (
            "    if isinstance(model, FSDP):\n        return model.sharding_strategy\n",
            "`model.sharding_strategy` at line 7 exists only on FSDP1 models",
        ),
        # FSDP1's internals
        (
            "    _lazy_init(model, model)\n    return isinstance(model, FSDP)\n",
            "`_lazy_init` at line 6 is FSDP1's internals",
        ),
    ],
    ids=["fsdp1-attribute", "fsdp1-internals"],
)
def test_a_check_that_cannot_follow_withholds_the_projects_conversion(tmp_path, branch, why):
    helper = FSDP1 + "from torch.distributed.fsdp._runtime_utils import _lazy_init\n\n\n"
    helper += "def f(model):\n"
    # (`HOOKS` names `f`: something may call it with the library's models)
    _project(tmp_path, {"lib.py": LINKED, "helper.py": helper + branch + "\n\nHOOKS = [f]\n"})
    (finding,) = _fsdp401(tmp_path, ".")
    assert not finding["fixed"]
    assert finding["withheld"].startswith("fix withheld: helper.py:")
    assert "in another file of this project, which stays FSDP1: " + why in finding["withheld"]


def test_a_files_own_reason_is_named_before_the_projects(tmp_path):
    # lib.py's own reason (a read behind its check) comes last in the survey, after
    # helper.py's check that stays FSDP1 because lib.py's calls stay: named first, then
    # the circle ("... which stays FSDP1: lib.py's FSDP1 wrapper calls stay").
    lib = (
        LINKED
        + "\n\ndef strategy(m):\n    if isinstance(m, FSDP):\n        return m.sharding_strategy\n"
    )
    helper = FSDP1 + "\n\ndef f(model):\n    return isinstance(model, FSDP)\n\n\nHOOKS = [f]\n"
    _project(tmp_path, {"lib.py": lib, "helper.py": helper})
    (finding,) = _fsdp401(tmp_path, ".")
    assert finding["withheld"] == (
        "fix withheld: `m.sharding_strategy` at line 13: exists only on FSDP1 models; "
        "helper.py:5: `isinstance(..., FSDP)` expects an FSDP1 model in another file of this "
        "project, which stays FSDP1: lib.py's FSDP1 wrapper calls stay"
    )


def test_a_wrapper_call_that_stays_keeps_the_projects_checks_fsdp1(tmp_path):
    # `other.py` stays FSDP1 (it reads FSDP1's flat parameters), so the check must keep
    # answering for its models: neither it nor `lib.py` converts.
    other = "import helper\n" + FSDP1
    other += "\n\ndef wrap(model):\n    model = FSDP(model)\n    return model.params\n"
    helper = FSDP1 + "\n\ndef is_sharded(model):\n    return isinstance(model, FSDP)\n"
    helper += "\n\nHOOKS = [is_sharded]\n"  # named: it may get the library's models
    _project(tmp_path, {"lib.py": LINKED, "other.py": other, "helper.py": helper})
    findings = _fsdp401(tmp_path, ".")
    assert len(findings) == 2 and not any(f["fixed"] for f in findings)
    # lib.py has no reason of its own: the project's is its first
    (library,) = [f for f in findings if f["withheld"].startswith("fix withheld: helper.py:")]
    assert "which stays FSDP1: other.py's FSDP1 wrapper calls stay" in library["withheld"]


def test_without_such_a_check_the_file_converts(tmp_path):
    # a file that does not name FSDP1's class
    other = "def test_units(model):\n    assert model is not None\n"
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_lib.py": other})
    (finding,) = _fsdp401(tmp_path, ".")
    assert finding["fixed"] and not finding["withheld"]
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(tmp_path)])
    assert "fully_shard(model" in (tmp_path / "lib.py").read_text()


def test_a_class_call_elsewhere_converts_with_the_project_onto_the_bridge(tmp_path):
    # torch's own FSDP1 class calls take no bridged model (compat patches nothing of
    # torch's): the file converts with the project's calls, its call becoming FSDP1Api's.
    other = FSDP1 + "import lib\n\n\ndef save(model):\n"
    other += "    with FSDP.state_dict_type(model, kind):\n        pass\n"
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_lib.py": other})
    findings = _fsdp401(tmp_path, ".")
    assert len(findings) == 2 and all(f["fixed"] for f in findings)
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(tmp_path)])
    assert "fully_shard_like_fsdp1(" in (tmp_path / "lib.py").read_text()
    saved = (tmp_path / "tests" / "test_lib.py").read_text()
    assert "with FSDP1Api.state_dict_type(model, kind):" in saved
    assert "FullyShardedDataParallel" not in saved


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


#: A tool that wraps too, but reads FSDP1's state of each unit: it stays FSDP1, and so
#: do its checks on what the library builds.
READS_UNIT_STATE = (
    "import lib\n" + LIBRARY + "\n\ndef test_units(model):\n"
    "    for unit in FSDP.fsdp_modules(wrap_fsdp(model)):\n"
    "        assert unit.sharding_strategy is not None\n"
    "\n\nTOOLS = [test_units]\n"
)
#: It calls FSDP1's internals: it stays, and so its class call, which would not take a
#: bridged model (compat patches nothing of torch's).
CALLS_INTERNALS = (
    "import lib\n" + FSDP1 + "from torch.distributed.fsdp._runtime_utils import _lazy_init\n"
    "def save(model):\n    _lazy_init(model, model)\n"
    "    with FSDP.state_dict_type(model, kind):\n        pass\n"
    "\n\nTOOLS = [save]\n"
)


@pytest.mark.parametrize(
    ("test", "kept"),
    [
        (READS_UNIT_STATE, "tools/units.py:12: `FSDP.fsdp_modules`"),
        (CALLS_INTERNALS, "tools/units.py:6: `FSDP.state_dict_type`"),
    ],
    ids=["checks", "class-call"],
)
def test_a_file_that_stays_fsdp1_keeps_its_uses_in_the_others_way(tmp_path, test, kept):
    _project(tmp_path, {"lib.py": LIBRARY, "tools/units.py": test})
    findings = _fsdp401(tmp_path, ".")
    assert findings and not any(f["fixed"] for f in findings)
    (library,) = [f for f in findings if "another file" in (f["withheld"] or "")]
    assert library["withheld"].startswith(f"fix withheld: {kept}")


@pytest.mark.parametrize("test", [READS_UNIT_STATE, CALLS_INTERNALS], ids=["checks", "class-call"])
def test_a_test_that_stays_fsdp1_holds_no_library_code(tmp_path, test):
    # The test waits for a hand port; the library's finding names what it keeps.
    _project(tmp_path, {"lib.py": LIBRARY, "tests/test_units.py": test})
    findings = _fsdp401(tmp_path, ".")
    (library,) = [f for f in findings if f["line"] == 7 and not f["withheld"]]
    assert library["fixed"]
    assert "tests/test_units.py:" in library["message"]


#: A package of our own writing in the shape of real recipes: ``train.py`` wraps the model,
#: ``checkpointing.py`` checks its class before FSDP1's class calls.
PACKAGE = Path(__file__).parent / "fixtures" / "fsdp2_project"
STEPS = 3


def _units(model: Any) -> list[str]:
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel

    from compat.checkpointing import clean_name

    kinds = (FSDPModule, FullyShardedDataParallel)
    return sorted(clean_name(n) for n, m in model.named_modules() if isinstance(m, kinds))


def _train_copies(rank: int, world_size: int, root: str, steps: int) -> dict[str, Any]:
    """Each copy's ``train.main``: its units, the lists of numbers it returns, its state."""
    import importlib
    import sys

    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sys.path.insert(0, root)
    results = {}
    for name in ("legacy", "migrated"):
        model, *runs = importlib.import_module(f"{name}.train").main(rank, steps)
        full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
        results[name] = {
            "units": _units(model),
            "runs": runs,
            "state": {k: v.detach().float().cpu().clone() for k, v in full.items()},
        }
    return results


def _same_training(results: list[dict[str, Any]]) -> None:
    """The migrated copy trained as the legacy one: units, every number, the state."""
    import torch

    for result in results:
        legacy, migrated_run = result["legacy"], result["migrated"]
        assert migrated_run["units"] == legacy["units"] and len(legacy["units"]) == 5
        assert len(migrated_run["runs"]) == len(legacy["runs"])
        for mine, theirs in zip(migrated_run["runs"], legacy["runs"]):
            assert mine == pytest.approx(theirs, rel=1e-5)
        assert legacy["state"].keys() == migrated_run["state"].keys()
        for key, value in legacy["state"].items():
            torch.testing.assert_close(migrated_run["state"][key], value, atol=1e-5, rtol=0)


def _runs_on_cpu() -> None:
    import torch

    from compat.fsdp2.availability import fsdp2_on_cpu

    if not fsdp2_on_cpu() and not torch.cuda.is_available():
        pytest.skip("the bridge's CPU runs need torch >= 2.7")


def _copies(root: Path, source: Path) -> Path:
    """``source`` as written (``legacy``) and migrated with FSDP4 (``migrated``), in ``root``."""
    for name in ("legacy", "migrated"):
        shutil.copytree(source, root / name)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=2.6"]\n')
    migrate(
        ["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(root / "migrated")]
    )
    return root


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    return _copies(tmp_path_factory.mktemp("packages"), PACKAGE)


@pytest.fixture(scope="module")
def package_runs(package) -> list[dict[str, Any]]:
    from tests import distributed

    _runs_on_cpu()
    return distributed.run(_train_copies, str(package), STEPS, world_size=2, timeout=300)


def test_the_package_is_converted_together(package):
    root = package
    train = (root / "migrated" / "train.py").read_text()
    checkpointing = (root / "migrated" / "checkpointing.py").read_text()
    assert "model = fully_shard_like_fsdp1(" in train
    assert "isinstance(model, FSDPModule)" in checkpointing
    assert "FSDP1Api.scatter_full_optim_state_dict(given, model)" in checkpointing
    assert "FullyShardedDataParallel" not in train + checkpointing


@pytest.mark.distributed
def test_the_converted_package_trains_and_resumes_as_fsdp1(package_runs):
    _same_training(package_runs)  # losses, then two steps, then the same two resumed
    for result in package_runs:
        _, drifted, resumed = result["migrated"]["runs"]
        assert resumed == pytest.approx(drifted, rel=1e-6)  # the scattered state resumes


def test_without_the_bridge_a_companion_keeps_the_project_fsdp1(tmp_path):
    # The companion's checks count on FSDP1's methods, which only the bridge's model
    # keeps: with the bridge off, the wrapper call stays for a human, and so the check.
    helper = FSDP1 + "\n\ndef is_sharded(model):\n    return isinstance(model, FSDP)\n"
    helper += "\n\nHOOKS = [is_sharded]\n"  # named: it may get the library's models
    _project(tmp_path, {"lib.py": LINKED, "helper.py": helper})
    report = tmp_path / "report.json"
    flags = ["--check", "--unsafe-fixes", "--extend-select", "FSDP4", "--no-fsdp2-bridge"]
    migrate([*flags, "--report", str(report), str(tmp_path)])
    files = json.loads(report.read_text())["files"]
    (finding,) = [x for f in files for x in f["findings"] if x["code"] == "FSDP401"]
    assert not finding["fixed"] and "helper.py:5: `isinstance(..., FSDP)`" in finding["withheld"]


def test_a_companion_with_only_an_isinstance_check_is_rewritten(tmp_path):
    # No FSDP1 call in it for the ``ast`` detector to hand to libcst: it runs whole.
    helper = FSDP1 + "\n\ndef clip(model):\n    if isinstance(model, FSDP):\n"
    helper += "        return model.clip_grad_norm_(1.0)\n    return None\n"
    _project(tmp_path, {"lib.py": LINKED, "helper.py": helper})
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", "--fsdp2-bridge", str(tmp_path)])
    text = (tmp_path / "helper.py").read_text()
    assert "    if isinstance(model, FSDPModule):\n" in text
    assert "fully_shard_like_fsdp1(" in (tmp_path / "lib.py").read_text()


#: A trainer of our own writing in the shape of projects that added FSDP2 beside FSDP1
#: (verl's): a strategy from the config, a version helper, helpers that return early
#: for FSDP2 models and pair their FSDP1 checks with FSDP2's.
DISPATCH = Path(__file__).parent / "fixtures" / "fsdp2_dispatch_project"


@pytest.fixture(scope="module")
def dispatch_package(tmp_path_factory) -> Path:
    return _copies(tmp_path_factory.mktemp("dispatch"), DISPATCH)


def test_a_project_that_knows_fsdp2_keeps_its_own_dispatch(dispatch_package):
    migrated, legacy = dispatch_package / "migrated", dispatch_package / "legacy"
    assert "model = fully_shard_like_fsdp1(\n" in (migrated / "train.py").read_text()
    # Its helpers answer FSDP2 models already: nothing in them changes.
    assert (migrated / "helpers.py").read_text() == (legacy / "helpers.py").read_text()


@pytest.mark.distributed
def test_the_bridged_model_takes_the_projects_fsdp2_path_as_fsdp1(dispatch_package):
    from tests import distributed

    _runs_on_cpu()
    _same_training(distributed.run(_train_copies, str(dispatch_package), STEPS + 1, world_size=2))


def test_a_companion_with_nothing_to_rewrite_still_says_why_it_stays(tmp_path):
    # Its one check is paired with FSDP2's (left as written), but FSDP1's internals
    # follow for every model: the project stays FSDP1, and the reason is named.
    helper = (
        FSDP1 + "from torch.distributed.fsdp import FSDPModule\n"
        "from torch.distributed.fsdp._runtime_utils import _lazy_init\n\n\n"
        "def prepare(model):\n"
        "    if isinstance(model, FSDP):\n        pass\n"
        "    elif isinstance(model, FSDPModule):\n        pass\n"
        "    _lazy_init(model, model)\n"
    )
    _project(tmp_path, {"lib.py": LINKED, "helper.py": helper})
    (finding,) = _fsdp401(tmp_path, ".")
    assert not finding["fixed"]
    assert "which stays FSDP1: `_lazy_init` at line 11 is FSDP1's internals" in finding["withheld"]
