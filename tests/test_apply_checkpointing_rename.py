"""FSDP138: torch 1.12's ``apply_activation_checkpointing_wrapper``, renamed in 1.13.

The lint and the fix are the registry's (its cases run in ``test_rule_cases``); these
tests hold the range questions and the run-time side: torch 1.13 and later lack the old
name, and the drop-in serves it as the new one, which checkpoints the same submodules
and trains to the same gradients as the plain model.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn
from packaging.version import Version

import compat
from codemods.registry import REGISTRY
from codemods.releases import Releases
from compat.deprecation import FSDPDeprecationWarning
from compat.features import current
from tests.test_dropin_runner import run

HOME = "torch.distributed.algorithms._checkpoint.checkpoint_wrapper"
#: torch 1.13 renamed the helper (pytorch PR 85449) and kept no alias.
RENAMED = pytest.mark.skipif(
    current().torch < Version("1.13"), reason="torch 1.12 still has the old name"
)


@pytest.mark.parametrize(
    ("span", "reported", "fix_breaks"),
    [
        # the old name's only release: nothing to report (and the new name is not there)
        ("1.12", False, "no fix runs on torch 1.12: it needs torch 1.13"),
        ("1.12..", True, "no fix runs on torch 1.12..latest: it needs torch 1.13"),
        ("1.13..", True, ""),
        ("2.4..2.13", True, ""),
    ],
)
def test_the_rename_is_reported_where_the_range_reaches_1_13_and_fixed_from_there(
    span, reported, fix_breaks
):
    rule, releases = REGISTRY["FSDP138"], Releases.parse(torch=span)
    assert releases.reported(rule) is reported
    assert releases.breaks(rule) == fix_breaks


def test_every_torch_of_the_matrix_has_the_new_name_and_its_parameters():
    """The fix keeps every call: the new name takes the old one's three parameters."""
    import inspect

    home = pytest.importorskip(HOME)
    parameters = list(inspect.signature(home.apply_activation_checkpointing).parameters)
    assert parameters[:3] == ["model", "checkpoint_wrapper_fn", "check_fn"]
    assert hasattr(home, "apply_activation_checkpointing_wrapper") is (
        current().torch < Version("1.13")
    )


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 1))


def _gradients(model: nn.Module) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    model(torch.randn(3, 6, requires_grad=True)).sum().backward()
    return {
        name.replace("_checkpoint_wrapped_module.", ""): p.grad.clone()
        for name, p in model.named_parameters()
    }


@RENAMED
def test_the_drop_in_serves_the_old_name_as_the_new_one_with_its_warning():
    import importlib

    home = importlib.import_module(HOME)
    assert not hasattr(home, "apply_activation_checkpointing_wrapper")
    reference = _gradients(_model())
    compat.install()
    try:
        says = r"renamed `apply_activation_checkpointing`.*\[FSDP138\]"
        with pytest.warns(FSDPDeprecationWarning, match=says):
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
                apply_activation_checkpointing_wrapper,
            )
        assert apply_activation_checkpointing_wrapper is home.apply_activation_checkpointing
        model = _model()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's own reentrant advice on 2.1
            apply_activation_checkpointing_wrapper(
                model, check_fn=lambda m: isinstance(m, nn.Linear)
            )
        kinds = [type(m).__name__ for m in model]
        assert kinds == ["CheckpointWrapper", "Tanh"] * 2 + ["CheckpointWrapper"]
        gradients = _gradients(model)
        assert gradients.keys() == reference.keys()
        for name, grad in reference.items():
            torch.testing.assert_close(gradients[name], grad, msg=name)
    finally:
        compat.uninstall()
    assert not hasattr(home, "apply_activation_checkpointing_wrapper")


@RENAMED
@pytest.mark.slow
def test_a_legacy_script_runs_unmodified_under_python_m_compat(tmp_path):
    """The T5 tutorial's shape: the old helper with a non-reentrant ``partial``."""
    script = tmp_path / "legacy_ac.py"
    script.write_text(
        "from functools import partial\n"
        "import torch\n"
        "import torch.nn as nn\n"
        f"from {HOME} import (\n"
        "    CheckpointImpl,\n"
        "    apply_activation_checkpointing_wrapper,\n"
        "    checkpoint_wrapper,\n"
        ")\n"
        "layers = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        "wrapper = partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT)\n"
        "apply_activation_checkpointing_wrapper(\n"
        "    layers, checkpoint_wrapper_fn=wrapper, check_fn=lambda m: isinstance(m, nn.Linear)\n"
        ")\n"
        "layers(torch.randn(3, 4)).sum().backward()\n"
        "print(type(layers[2]).__name__, layers[2]._checkpoint_wrapped_module.weight.grad.shape)\n"
    )
    plain = run([str(script)], tmp_path)
    assert plain.returncode != 0 and "apply_activation_checkpointing_wrapper" in plain.stderr
    done = run(["-m", "compat", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "CheckpointWrapper torch.Size([2, 4])"
    assert "legacy_ac.py:4: " in done.stderr and "[FSDP138]" in done.stderr
