"""A check in a function no file of the project names holds no wrapper call.

torchtune's ``contains_fsdp`` (``isinstance(m, FSDP)`` over the modules) is exported
and called nowhere: on the whole repository it held every conversion, where the corpus
(which lacks the library file) converted the tests. A model reaches a check only by
being handed to its function; where the run holds every module the models' files
import from the project, a function that nothing names gets none. Fixtures are of our
own writing, in torchtune's shape.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fsdp2_project_reach import FSDP1, _findings, _project

#: A recipe whose call stays FSDP1 (it reads FSDP1's flat parameters), so the library
#: file (a companion) stays FSDP1 too.
RECIPE = (
    FSDP1 + "from lib import dist\n\n\n"
    "def build(model):\n    model = FSDP(model)\n    return model.params\n"
)
#: The library: a check in a function only ``__all__`` lists.
LIBRARY = (
    FSDP1 + "\n__all__ = ['contains_fsdp']\n\n\n"
    "def contains_fsdp(model):\n"
    "    return any(isinstance(m, FSDP) for m in model.modules())\n"
)
#: A test that wraps a model and imports the library for something else.
TEST = FSDP1 + "from lib import dist\n\n\ndef test_wrap(model):\n    model = FSDP(model)\n"


def _test_finding(root: Path, files: dict[str, str]) -> dict:
    base = {
        "recipes/train.py": RECIPE,
        "lib/__init__.py": "from lib.dist import contains_fsdp\n",
        "lib/dist.py": LIBRARY,
        "tests/test_wrap.py": TEST,
    }
    _project(root, {**base, **files})
    (found,) = _findings(root)["tests/test_wrap.py"]
    return found


def test_a_check_in_a_function_no_one_names_holds_nothing(tmp_path):
    found = _test_finding(tmp_path, {})
    assert found["fixed"] and not found["withheld"]


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (  # a call
            {"lib/use.py": "from lib.dist import contains_fsdp\n\ncontains_fsdp(object())\n"},
            "a call",
        ),
        (  # passed on as a callback
            {"lib/use.py": "from lib import dist\n\nhooks = [dist.contains_fsdp]\n"},
            "an attribute",
        ),
        (  # named in a string (a registry, `getattr`)
            {"lib/use.py": "TARGET = 'lib.dist.contains_fsdp'\n"},
            "a string",
        ),
        (  # a module of the project that the run lacks, imported where the models reach
            {"tests/test_wrap.py": TEST + "from lib.gone import helper\n"},
            "a module the run lacks",
        ),
    ],
    ids=["call", "callback", "string", "missing-module"],
)
def test_a_check_still_holds_where_its_function_may_be_called(tmp_path, extra, why):
    # `lib/use.py` is imported with the package: the test's models reach it.
    init = "from lib.dist import contains_fsdp\nfrom lib import use\n"
    found = _test_finding(tmp_path, {"lib/__init__.py": init, **extra})
    assert not found["fixed"], why
    assert "lib/dist.py" in found["withheld"]


def test_a_decorated_function_may_be_called_by_what_decorates_it(tmp_path):
    library = LIBRARY.replace("def contains_fsdp", "@register\ndef contains_fsdp")
    found = _test_finding(tmp_path, {"lib/dist.py": "register = list.append\n" + library})
    assert not found["fixed"] and "lib/dist.py" in found["withheld"]


def test_a_module_the_run_lacks_elsewhere_in_the_project_does_not_matter(tmp_path):
    # A stale script imports a module the project no longer has; no model reaches it.
    script = "from lib.removed_builders import old\n"
    found = _test_finding(tmp_path, {"scripts/compare.py": script})
    assert found["fixed"] and not found["withheld"]


# verl's shapes: checks its authors wrote for FSDP1 models beside FSDP2 ones ------------

#: The project's dispatch function, in its utilities (FSDP2's class re-exported there).
VERSIONS = (
    FSDP1 + "from torch.distributed.fsdp import FSDPModule\n\n\n"
    "def fsdp_version(model):\n"
    "    if isinstance(model, FSDP):\n        return 1\n"
    "    elif isinstance(model, FSDPModule):\n        return 2\n"
    "    return 0\n"
)


@pytest.mark.parametrize(
    "helper",
    [
        # FSDP1's code behind the project's dispatch function, imported from another file
        "from lib.versions import fsdp_version\n" + FSDP1 + "\n\ndef save(model, full):\n"
        "    if full and fsdp_version(model) == 1:\n"
        "        FSDP.set_state_dict_type(model, 'FULL')\n"
        "    return model.state_dict()\n",
        # FSDP2's class under the project's own name, asked beside FSDP1's
        "from lib.versions import FSDPModule as FSDP2\n" + FSDP1 + "\n\ndef units(model):\n"
        "    found = []\n"
        "    for child in model.children():\n"
        "        if isinstance(child, FSDP | FSDP2):\n"
        "            found.append(child)\n"
        "        if isinstance(child, FSDP):\n"
        "            child = child._fsdp_wrapped_module\n"
        "    return found\n",
    ],
    ids=["dispatch-imported", "fsdp2-asked-in-the-function"],
)
def test_checks_written_for_fsdp1_beside_fsdp2_hold_nothing(tmp_path, helper):
    use = "from lib.helper import *\n\nCALLS = [save_or_units]\n"
    name = "save" if "def save" in helper else "units"
    found = _test_finding(
        tmp_path,
        {
            "lib/versions.py": VERSIONS,
            "lib/helper.py": helper,
            "lib/use.py": use.replace("save_or_units", name),
            "tests/test_wrap.py": TEST + "from lib import helper\n",
        },
    )
    assert found["fixed"] and not found["withheld"]


def test_a_dispatch_that_lets_fsdp2_models_in_still_holds(tmp_path):
    # `> 0` lets FSDP2 models reach FSDP1's class call (verl's LoRA summoning).
    helper = (
        "from lib.versions import fsdp_version\n" + FSDP1 + "\n\ndef summon(model):\n"
        "    if fsdp_version(model) > 0:\n"
        "        return FSDP.summon_full_params(model)\n"
    )
    test = TEST + "from lib.helper import summon\n\n\ndef test_summon(model):\n"
    test += "    summon(model)\n"
    files = {"lib/versions.py": VERSIONS, "lib/helper.py": helper, "tests/test_wrap.py": test}
    found = _test_finding(tmp_path, files)
    assert not found["fixed"] and "lib/helper.py" in found["withheld"]


def test_a_function_named_only_where_the_models_do_not_go_holds_nothing(tmp_path):
    # The workers call `summon`; the test imports the utilities, not the workers.
    helper = (
        "from lib.versions import fsdp_version\n" + FSDP1 + "\n\ndef summon(model):\n"
        "    if fsdp_version(model) > 0:\n"
        "        return FSDP.summon_full_params(model)\n"
    )
    workers = "from lib.helper import summon\n\n\ndef sync(model):\n    return summon(model)\n"
    files = {
        "lib/versions.py": VERSIONS,
        "lib/helper.py": helper,
        "workers/sync.py": workers,
        "tests/test_wrap.py": TEST + "from lib import helper\n",
    }
    found = _test_finding(tmp_path, files)
    assert found["fixed"] and not found["withheld"]
    # The workers' own models do get there.
    workers_wrap = FSDP1 + "from workers.sync import sync\n\n\ndef run(model):\n"
    workers_wrap += "    model = FSDP(model)\n    return sync(model)\n"
    (tmp_path / "workers/run.py").write_text(workers_wrap)
    (kept,) = _findings(tmp_path)["workers/run.py"]
    assert not kept["fixed"] and "lib/helper.py" in kept["withheld"]


def test_a_vendored_module_the_project_imports_is_no_missing_module(tmp_path):
    # verl imports a vendored copy of torch's state-dict file: the run holds it.
    files = {
        "third_party/torch/checkpoint.py": "def load(model):\n    return model\n",
        "lib/dist.py": "from third_party.torch.checkpoint import load\n" + LIBRARY,
    }
    found = _test_finding(tmp_path, files)
    assert found["fixed"] and not found["withheld"]
