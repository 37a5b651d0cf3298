"""compat.checkpointing: every policy form, idempotence, gradients, and measured memory."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten  # tree_leaves is newer than torch 1.13

import compat.fsdp.wrap as cw
from compat.checkpointing import apply_activation_checkpointing, checkpointed_names, every_nth
from compat.features import current

WIDTH, BATCH, DEPTH = 64, 32, 4
ACTIVATION_BYTES = WIDTH * BATCH * 4  # one float32 activation


class Block(nn.Module):
    """x -> fc1 -> gelu -> fc2 -> tanh -> + x.

    Without checkpointing backward keeps four activations per block: the input (for
    fc1's weight grad), fc1's output (gelu's input), gelu's output (fc2's input) and
    tanh's output. Checkpointed, it keeps only its input; with op-level SAC saving the
    matmuls, its input and the two matmul outputs.
    """

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.fc2 = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(self.fc2(nn.functional.gelu(self.fc1(x))))


class Tower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(DEPTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def tower() -> Tower:
    torch.manual_seed(0)
    return Tower()


def _is_block(module):
    return isinstance(module, Block)


ALL = [f"blocks.{i}" for i in range(DEPTH)]
FORMS = {
    "class": (Block, ALL),
    "class-set": ({Block}, ALL),
    "class-list": ([Block], ALL),
    "module-wrap-policy": (cw.ModuleWrapPolicy({Block}), ALL),
    "custom-policy": (cw.CustomPolicy(_is_block), ALL),
    "module-predicate": (_is_block, ALL),
    "name-predicate": (
        lambda name, module: name in ("blocks.0", "blocks.3"),
        ["blocks.0", "blocks.3"],
    ),
    # A Linear has 4,160 parameters and a Block 8,320: 5,000 picks the Blocks.
    "wrap-policy-callable": (
        cw.size_based_auto_wrap_policy(min_nonwrapped_numel=5000),
        ALL,
    ),
    "every-2nd": (every_nth(2, Block), ["blocks.1", "blocks.3"]),
    "every-3rd": (every_nth(3, Block), ["blocks.2"]),
    "every-1st": (every_nth(1, Block), ALL),
}
if not current().custom_policy:
    del FORMS["custom-policy"]


@pytest.mark.parametrize("form", FORMS)
def test_policy_forms_select_and_return_names(form):
    policy, expected = FORMS[form]
    model = tower()
    assert apply_activation_checkpointing(model, policy) == expected
    assert checkpointed_names(model) == expected


def test_applying_twice_does_not_wrap_twice():
    model = tower()
    assert apply_activation_checkpointing(model, every_nth(2, Block)) == ["blocks.1", "blocks.3"]
    assert apply_activation_checkpointing(model, Block) == ["blocks.0", "blocks.2"]
    assert apply_activation_checkpointing(model, Block) == []
    wrappers = [n for n, m in model.named_modules() if type(m).__name__ == "CheckpointWrapper"]
    assert len(wrappers) == DEPTH


def test_a_wrap_policy_callable_with_two_positional_parameters_is_not_a_name_predicate():
    def policy(module, recurse, **kwargs):
        return recurse or isinstance(module, Block)

    assert apply_activation_checkpointing(tower(), policy) == ALL


def test_non_reentrant_on_every_torch():
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl

    model = tower()
    apply_activation_checkpointing(model, Block)
    assert {m.checkpoint_impl for m in model.blocks} == {CheckpointImpl.NO_REENTRANT}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: every_nth(0, Block), ValueError, "positive integer"),
        (lambda: every_nth(True, Block), ValueError, "positive integer"),
        (lambda: every_nth(2), TypeError, "empty collection"),
        (lambda: every_nth(2, Block()), TypeError, "got an instance of Block"),
        (lambda: apply_activation_checkpointing(tower(), 42), TypeError, "policy expects"),
        (lambda: apply_activation_checkpointing(tower(), Block()), TypeError, "instance of Block"),
    ],
)
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.skipif(not current().selective_ac, reason="op-level SAC needs torch >= 2.5")
def test_empty_ops_to_save_is_refused():
    with pytest.raises(ValueError, match="ops_to_save is empty"):
        apply_activation_checkpointing(tower(), Block, ops_to_save=[])


@pytest.mark.skipif(current().selective_ac, reason="this torch has op-level SAC")
def test_ops_to_save_needs_torch_2_5():
    with pytest.raises(NotImplementedError, match=r"torch >= 2.5"):
        apply_activation_checkpointing(tower(), Block, ops_to_save=[torch.ops.aten.mm.default])


# Measured activation memory -------------------------------------------------------------

SAVED_OPS = [torch.ops.aten.addmm.default, torch.ops.aten.mm.default]


def _storage(tensor: torch.Tensor):
    # Tensor.untyped_storage() arrived in torch 2.0.
    return tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()


class _OutputBytes(TorchDispatchMode):
    """Bytes of the outputs of ``ops`` computed inside checkpointed regions' forward.

    Op-level SAC keeps exactly these in its own cache, which saved-tensor hooks do not
    see (they do see the inputs non-reentrant checkpointing saves).
    """

    def __init__(self, ops) -> None:
        super().__init__()
        self.ops, self.bytes = set(ops), 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in self.ops:
            self.bytes += sum(
                _storage(t).nbytes() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)
            )
        return out


def _measure(model: nn.Module, sac_ops=None) -> tuple[int, dict[str, torch.Tensor]]:
    """Activation bytes kept for backward, and the parameter gradients.

    Counted by storage, so nothing counts twice: what autograd saves (saved-tensor
    hooks), the inputs each checkpointed region keeps for its recompute (torch >= 2.1
    saves them through autograd, older torch holds them directly), and SAC's cache.
    """
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper

    params = {_storage(p).data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = _storage(tensor)
        if storage.data_ptr() not in params:  # weights are not activations
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    def keep_input(module, args):
        pack(args[0])

    for module in model.modules():
        if isinstance(module, CheckpointWrapper):
            module.register_forward_pre_hook(keep_input)

    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(1))
    counter = _OutputBytes(sac_ops or [])
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        if sac_ops:
            with counter:
                loss = model(x).pow(2).sum()
        else:
            loss = model(x).pow(2).sum()
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    # The loss's pow saves the tower's output: one activation outside every block.
    return sum(saved.values()) + counter.bytes - ACTIVATION_BYTES, grads


def _clean(grads):
    return {name.replace("_checkpoint_wrapped_module.", ""): g for name, g in grads.items()}


MODES = {
    # mode: (policy, ops_to_save, activations kept per block on average)
    "full": (Block, None, 1),
    "every-2nd": (every_nth(2, Block), None, (4 + 1) / 2),
    "sac-matmuls": (Block, SAVED_OPS, 3),
}


@pytest.mark.parametrize("mode", MODES)
def test_activation_memory_is_the_expected_fraction(mode):
    policy, ops, per_block = MODES[mode]
    if ops and not current().selective_ac:
        pytest.skip("op-level SAC needs torch >= 2.5")
    baseline, baseline_grads = _measure(tower())
    assert baseline == DEPTH * 4 * ACTIVATION_BYTES  # four activations per block, as derived
    model = tower()
    apply_activation_checkpointing(model, policy, ops_to_save=ops)
    used, grads = _measure(model, sac_ops=ops)
    assert used / baseline == pytest.approx(per_block / 4)
    for name, grad in _clean(grads).items():
        torch.testing.assert_close(grad, baseline_grads[name], atol=1e-6, rtol=0)
