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
    found = _test_finding(tmp_path, extra)
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
