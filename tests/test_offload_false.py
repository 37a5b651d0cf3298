"""FSDP139 beside FSDP133: ``checkpoint_wrapper(offload_to_cpu=False)`` is dropped on any range.

torch 2.0 removed the keyword. ``True`` has a new form, ``offload_wrapper`` (torch 2.0,
FSDP133), so its fix is withheld where the range starts lower; ``False`` was the default,
and the call without it runs on every torch: lint, migrate and ``compat`` say "drop it"
and the fix is made whatever the range (the tutorial shape pytorch/workshops and t5_11
copied, ``partial(checkpoint_wrapper, offload_to_cpu=False, checkpoint_impl=...)``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codemods import lint
from tests.test_declared_target import project, run_migrate

HOME = "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
SOURCE = f"""\
from functools import partial

from {HOME} import CheckpointImpl, checkpoint_wrapper

no_offload = partial(
    checkpoint_wrapper,
    offload_to_cpu=False,
    checkpoint_impl=CheckpointImpl.NO_REENTRANT,
)
offload = partial(checkpoint_wrapper, offload_to_cpu=True)
"""
DROPPED = SOURCE.replace("    offload_to_cpu=False,\n", "")


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("declared", ["torch>=1.12\n", "torch>=1.13\n", "torch>=2.4\n", ""])
def test_false_is_dropped_on_every_range_and_true_keeps_its_gate(here, capsys, declared):
    project(here, {"requirements.txt": declared, "ac.py": SOURCE})
    code, out = run_migrate(capsys, "ac.py")
    assert code == 1 and Path("ac.py").read_text() == DROPPED
    (true_form,) = [line for line in out.splitlines() if " FSDP133 " in line]
    assert true_form.startswith("ac.py:10:39: FSDP133 ")
    if declared == "torch>=2.4\n":
        assert true_form.endswith("[fix with --unsafe-fixes]")
    else:  # 1.12 and 1.13 have no offload_wrapper (a file declaring nothing evidences 1.11)
        assert "it needs torch 2.0]" in true_form
    assert " FSDP139 " not in out  # fixed, so not left


def test_a_pin_below_2_0_takes_the_keyword_and_is_left_alone(here, capsys):
    project(here, {"requirements.txt": "torch==1.13.1\n", "ac.py": SOURCE})
    code, out = run_migrate(capsys, "ac.py")
    assert code == 0 and Path("ac.py").read_text() == SOURCE
    assert "FSDP13" not in out


def test_lint_says_drop_it_and_marks_the_fix_where_migrate_makes_it(here, capsys):
    project(here, {"requirements.txt": "torch>=1.12\n", "ac.py": SOURCE})
    assert lint.main(["ac.py"]) == 1
    lines = capsys.readouterr().out.splitlines()
    (false_form,) = [line for line in lines if " FSDP139 " in line]
    assert false_form.startswith("ac.py:7:5: FSDP139 [*] ")
    assert "drop it, `False` was the default" in false_form
    assert "offload_wrapper" not in false_form and "needs torch" not in false_form
    (true_form,) = [line for line in lines if " FSDP133 " in line]
    assert "[*]" not in true_form and "use `offload_wrapper(module)`" in true_form
    assert true_form.endswith("[no fix runs on torch 1.12..latest: it needs torch 2.0]")


@pytest.mark.parametrize(
    ("value", "code"),
    [("False", "FSDP139"), ("True", "FSDP133"), ("flag", "FSDP133"), ("0", "FSDP133")],
)
def test_only_a_literal_false_is_fsdp139(here, capsys, value, code):
    call = f"b = checkpoint_wrapper(b, offload_to_cpu={value})\n"
    source = f"from {HOME} import checkpoint_wrapper\n{call}"
    project(here, {"ac.py": source})
    assert lint.main(["--target-torch", "2.4", "ac.py"]) == 1
    codes = {word for word in capsys.readouterr().out.split() if word.startswith("FSDP1")}
    assert codes == {code}
