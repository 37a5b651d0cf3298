"""FSDP133 at run time: ``checkpoint_wrapper(module, offload_to_cpu=...)`` on torch >= 2.0.

torch 2.0 removed the keyword; since then the wrapper builds and hands it to the
checkpoint call: torch 2.0 ignores it (nothing is offloaded), 2.1 raises ValueError at
the first forward and 2.2 on TypeError. compat's ``checkpoint_wrapper`` (and torch's,
under the drop-in) serves it as torch's ``offload_wrapper``: these tests train through
that mapping and hold the gradients against the plain module's. On torch 1.13, which
takes the keyword, compat's is torch's own.
"""

from __future__ import annotations

import copy
import functools
import warnings

import pytest
import torch
import torch.nn as nn
from packaging.version import Version

import compat
from compat.checkpointing import checkpoint_wrapper
from compat.deprecation import FSDPDeprecationWarning
from compat.features import current
from tests.test_dropin_runner import run

#: The tests of the mapping: torch before 2.0 takes the keyword itself.
NEEDS_KEYWORD_REMOVED = pytest.mark.skipif(
    current().torch < Version("2.0"), reason="torch before 2.0 still takes offload_to_cpu itself"
)


def _home():
    from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as home

    return home


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(self.fc2(torch.relu(self.fc1(x))))


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(Block(), Block(), nn.Linear(8, 1))


def _gradients(model: nn.Module) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    # An input that needs grad: torch 2.0 and 2.1 checkpoint reentrantly by default,
    # which gives the parameters no gradient otherwise.
    model(torch.randn(4, 8, requires_grad=True)).sum().backward()
    clean = {
        name.replace("_checkpoint_wrapped_module.", ""): p for name, p in model.named_parameters()
    }
    return {name: p.grad.clone() for name, p in clean.items()}


def _fsdp133(caught, code: str = "FSDP133") -> list[str]:
    return [str(w.message) for w in caught if str(w.message).endswith(f"[{code}]")]


@NEEDS_KEYWORD_REMOVED
def test_torch_itself_fails_at_the_first_forward_or_offloads_nothing():
    wrapped = _home().checkpoint_wrapper(Block(), offload_to_cpu=True)
    if current().torch < Version("2.1"):
        # torch 2.0 drops the keyword in its reentrant checkpoint: activations stay
        # where they are (the outer hook sees the checkpoint's saved input).
        seen = []
        with torch.autograd.graph.saved_tensors_hooks(seen.append, lambda t: t):
            wrapped(torch.randn(2, 8, requires_grad=True)).sum()
        assert seen
        return
    # torch.utils.checkpoint refuses it on 2.1 (ValueError), the module's forward from 2.2
    with pytest.raises((TypeError, ValueError), match="offload_to_cpu"):
        wrapped(torch.randn(2, 8))


@pytest.mark.skipif(current().torch >= Version("2.0"), reason="torch 2.0 removed the keyword")
def test_on_torch_that_takes_the_keyword_the_call_is_torchs_own():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = checkpoint_wrapper(Block(), offload_to_cpu=True)
    assert type(wrapped) is _home().CheckpointWrapper and wrapped.offload_to_cpu
    assert _fsdp133(caught) == []


@NEEDS_KEYWORD_REMOVED
@pytest.mark.parametrize(
    ("offload", "wrapper", "code", "says"),
    [
        (True, "OffloadWrapper", "FSDP133", "nothing is recomputed"),
        # a literal False has a rule of its own, whose fix (drop it) runs on every torch
        (False, "CheckpointWrapper", "FSDP139", "drop it, `False` was the default"),
        (None, "CheckpointWrapper", "FSDP133", "the keyword is dropped"),
    ],
)
def test_the_keyword_is_served_and_trains_as_the_plain_module(offload, wrapper, code, says):
    reference = _gradients(_model())
    model = _model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model[0] = checkpoint_wrapper(model[0], offload_to_cpu=offload)
    assert type(model[0]) is getattr(_home(), wrapper)
    (message,) = _fsdp133(caught, code)
    assert says in message
    if offload is False:  # nothing offloads: the advice is to drop the keyword only
        assert "offload_wrapper" not in message
    gradients = _gradients(model)
    assert gradients.keys() == reference.keys()
    for name, grad in reference.items():
        torch.testing.assert_close(gradients[name], grad, msg=name)


@NEEDS_KEYWORD_REMOVED
def test_offloaded_activations_go_through_torchs_cpu_hooks():
    """An outer saved-tensor hook sees none of the block's activations: torch's inner
    ``save_on_cpu`` hooks take them (a plain block shows the outer hook six)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        offloaded = checkpoint_wrapper(Block(), offload_to_cpu=True)
    seen = {}
    for name, module in (("plain", Block()), ("offloaded", offloaded)):
        seen[name] = []
        with torch.autograd.graph.saved_tensors_hooks(seen[name].append, lambda t: t):
            module(torch.randn(2, 8, requires_grad=True)).sum()
    assert seen["plain"] and seen["offloaded"] == []


def test_a_call_without_the_keyword_is_torchs_own_and_silent():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = checkpoint_wrapper(Block())
    assert isinstance(wrapped, _home().CheckpointWrapper)
    # torch's own warnings (2.1 asks for NO_REENTRANT) are torch's; compat adds none
    assert not [w for w in caught if issubclass(w.category, FSDPDeprecationWarning)]


@NEEDS_KEYWORD_REMOVED
def test_a_partial_through_apply_activation_checkpointing():
    """The shape users copied: ``partial(checkpoint_wrapper, offload_to_cpu=True, ...)``."""
    home = _home()
    reference = _gradients(_model())
    model = _model()
    wrapper_fn = functools.partial(
        checkpoint_wrapper, offload_to_cpu=True, checkpoint_impl=home.CheckpointImpl.REENTRANT
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        home.apply_activation_checkpointing(
            model, checkpoint_wrapper_fn=wrapper_fn, check_fn=lambda m: isinstance(m, Block)
        )
    assert [type(m).__name__ for m in model] == ["OffloadWrapper", "OffloadWrapper", "Linear"]
    for name, grad in _gradients(model).items():
        torch.testing.assert_close(grad, reference[name], msg=name)


@NEEDS_KEYWORD_REMOVED
def test_the_drop_in_serves_torchs_own_checkpoint_wrapper():
    home = _home()
    original = home.checkpoint_wrapper
    compat.install()
    try:
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            checkpoint_wrapper as patched,
        )

        assert patched is not original and patched.__wrapped__ is original
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            wrapped = patched(copy.deepcopy(Block()), offload_to_cpu=True)
            plain = patched(Block())
        assert isinstance(wrapped, home.OffloadWrapper)
        assert isinstance(plain, home.CheckpointWrapper)
        assert len(_fsdp133(caught)) == 1
        assert any(r.codes == ("FSDP133", "FSDP139") for r in compat.installed())
        # compat's own function reaches torch's, not the patch, while it is installed
        assert isinstance(checkpoint_wrapper(Block()), home.CheckpointWrapper)
    finally:
        compat.uninstall()
    assert home.checkpoint_wrapper is original


@NEEDS_KEYWORD_REMOVED
@pytest.mark.slow
def test_a_legacy_script_runs_unmodified_under_python_m_compat(tmp_path):
    script = tmp_path / "legacy_offload.py"
    script.write_text(
        "import functools\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
        "    CheckpointImpl,\n"
        "    apply_activation_checkpointing,\n"
        "    checkpoint_wrapper,\n"
        ")\n"
        "model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))\n"
        "offload = functools.partial(\n"
        "    checkpoint_wrapper, offload_to_cpu=True, checkpoint_impl=CheckpointImpl.REENTRANT\n"
        ")\n"
        "apply_activation_checkpointing(\n"
        "    model, checkpoint_wrapper_fn=offload, check_fn=lambda m: isinstance(m, nn.Linear)\n"
        ")\n"
        "model(torch.randn(3, 4)).sum().backward()\n"
        "print(type(model[0]).__name__, model[0]._checkpoint_wrapped_module.weight.grad.shape)\n"
    )
    done = run(["-m", "compat", str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OffloadWrapper torch.Size([4, 4])"
    # the warning names the user's line that reached torch's call of the partial
    assert "legacy_offload.py:13: " in done.stderr and "[FSDP133]" in done.stderr
