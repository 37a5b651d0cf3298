"""FSDP102 keeps a policy's parameter where another caller may pass the old keyword, and says so.

Both detectors (the ``ast`` lint and the libcst engine) give the same findings, with the
reason in the finding's text, at a release range where the fix itself would run.
"""

from __future__ import annotations

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SETTINGS = Settings(select=("FSDP102",), fix=True, releases=Releases.parse(torch="2.0"))

CASES = {
    # defined here, used elsewhere: a module that imports it may be FairScale's caller
    "unused-module-level": (
        "def size_policy(module, recurse, unwrapped_params):\n"
        "    return recurse or unwrapped_params > 10**6\n",
        "`size_policy` is not used in this file",
    ),
    # this file's own wrapper passes the old keyword to the policies it is given
    "own-caller": (
        "def size_policy(module, recurse, unwrapped_params):\n"
        "    return recurse or unwrapped_params > 10**6\n"
        "\n"
        "\n"
        "def wrap_all(model, policy=size_policy):\n"
        "    return policy(module=model, recurse=True, unwrapped_params=count(model))\n",
        "line 6 passes `unwrapped_params=` to a policy it is given",
    ),
}


@pytest.mark.parametrize(("source", "reason"), CASES.values(), ids=CASES)
def test_the_parameter_is_kept_and_the_finding_says_why(source, reason):
    found = lint(source.encode(), SETTINGS)
    assert [(f.line, f.fixable) for f in found] == [(1, False)]
    assert reason in found[0].no_fix
    outcome = run(source.encode(), SETTINGS)
    assert outcome.findings == found
    assert outcome.new_source is None  # nothing written


def test_a_nested_policy_nothing_else_can_reach_is_renamed():
    source = (
        "def build():\n"
        "    def policy(module, recurse, unwrapped_params):\n"
        "        return recurse or unwrapped_params > 10\n"
        "    return 1\n"
    )
    found = lint(source.encode(), SETTINGS)
    assert [(f.line, f.fixable) for f in found] == [(2, True)]
    assert b"nonwrapped_numel" in run(source.encode(), SETTINGS).new_source
