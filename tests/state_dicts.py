"""What the state-dict runs share: a trained FSDP1 model, plain copies of state dicts, comparison.

Every rank builds the same FSDP1 model (:func:`tests.models.make_model`, each ``Block``
its own unit, ``use_orig_params=False`` so the optimizer holds FSDP's flat parameters),
takes real Adam steps so the optimizer has state, and hands back state dicts as
:func:`plain` data (tensors cloned to the CPU, sharded tensors as their local shards
with offsets) for the test process to compare with :func:`assert_same`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn as nn

from tests import distributed
from tests.models import Block, batch, make_model

LR = 0.01


NATIVE_SHARDED_REASON = (
    "this torch's get_model_state_dict cannot take an FSDP1 sharded state dict on a rank "
    "that holds no shard of a parameter (it asks each ShardedTensor is_meta, which needs "
    "exactly one local shard; torch 2.9 no longer asks)"
)


def native_sharded_fsdp1() -> bool:
    """Whether torch's ``get_model_state_dict`` takes the sharded state dict of any FSDP1 model.

    Through torch 2.6 at least, ``_get_model_state_dict`` drops meta tensors by asking
    every value ``is_meta``; a ``ShardedTensor`` answers that only with exactly one local
    shard, and FSDP1 gives a rank whose flat parameter holds no element of a parameter
    none, so the call raises ``NotImplementedError`` (the test model has such ranks).
    Read from torch's source, which needs no process group: the check is the bug.
    """
    import inspect

    from torch.distributed.checkpoint import state_dict

    return "p.is_meta" not in inspect.getsource(state_dict._get_model_state_dict)


def native_loads_unrun_fsdp1() -> bool:
    """Whether torch's ``set_model_state_dict`` loads into an FSDP1 model never run yet.

    torch 2.2's insists on a root FSDP unit, which FSDP1 marks only at its lazy
    initialisation (the first forward or state_dict call), and raises "The model has
    FSDP modules but no FSDP root module exists" for a model just built. Read from
    torch's source, which needs no process group.
    """
    import inspect

    from torch.distributed.checkpoint import state_dict

    return "no FSDP root module exists" not in inspect.getsource(state_dict)


def fsdp_model(seed: int = 0) -> nn.Module:
    """The test model under torch's own FSDP1, on this rank's device."""
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    device = distributed.device_for(torch.distributed.get_rank())
    return FullyShardedDataParallel(
        make_model(seed), auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=device
    )


def optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=LR)


def step(model: nn.Module, optim: torch.optim.Optimizer, rank: int, index: int) -> None:
    """One real training step on this rank's batch ``index``."""
    device = next(model.parameters()).device
    x, y = (t.to(device) for t in batch(rank, index))
    nn.functional.mse_loss(model(x), y).backward()
    optim.step()
    optim.zero_grad()


def trained(seed: int = 0, steps: int = 2) -> tuple[nn.Module, torch.optim.Optimizer]:
    """A model and its Adam optimizer after ``steps`` steps (so there is optimizer state)."""
    rank = torch.distributed.get_rank()
    model = fsdp_model(seed)
    optim = optimizer(model)
    for index in range(steps):
        step(model, optim, rank, index)
    return model, optim


def plain(value: Any) -> Any:
    """``value`` with every tensor cloned to the CPU; a sharded tensor as its local shards.

    ``ShardedTensor`` (FSDP1's sharded state dicts) becomes ``{"shards": [(offsets,
    tensor), ...], "size": ...}`` and a ``DTensor`` its local tensor, so that ranks can
    send them back and the test compares what each rank holds.
    """
    kind = type(value).__name__
    if kind == "ShardedTensor":
        shards = [
            (list(s.metadata.shard_offsets), s.tensor.detach().cpu().clone())
            for s in value.local_shards()
        ]
        return {"shards": shards, "size": list(value.size())}
    if kind == "DTensor":
        return {"local": value.to_local().detach().cpu().clone(), "size": list(value.size())}
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(item) for item in value)
    return value


def full_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's whole parameters by clean name (gathered on every rank)."""
    from tests.models import state

    return state(model)


@contextmanager
def caught_codes() -> Iterator[set[str]]:
    """The compat rule codes warned inside the block."""
    from tests.equivalence import warning_codes

    codes: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield codes
    codes.update(warning_codes(caught))


def assert_same(expected: Any, actual: Any, where: str = "") -> int:
    """Assert two plain state dicts are equal, tensors exactly; return how many tensors.

    Raises:
        AssertionError: Naming the first key path where they differ.
    """
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: {type(actual).__name__}, not a tensor"
        assert expected.dtype == actual.dtype, f"{where}: {expected.dtype} != {actual.dtype}"
        assert expected.shape == actual.shape, f"{where}: {expected.shape} != {actual.shape}"
        assert torch.equal(expected, actual), f"{where}: values differ"
        return 1
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: {type(actual).__name__}, not a dict"
        assert sorted(map(str, expected)) == sorted(map(str, actual)), (
            f"{where}: keys {sorted(map(str, expected))} != {sorted(map(str, actual))}"
        )
        return sum(assert_same(expected[k], actual[k], f"{where}/{k}") for k in expected)
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)), f"{where}: {type(actual).__name__}"
        assert len(expected) == len(actual), f"{where}: {len(expected)} != {len(actual)} items"
        return sum(
            assert_same(e, a, f"{where}[{i}]") for i, (e, a) in enumerate(zip(expected, actual))
        )
    assert expected == actual, f"{where}: {expected!r} != {actual!r}"
    return 0


def tensor_count(value: Any) -> int:
    """How many tensors a plain state dict holds."""
    if isinstance(value, torch.Tensor):
        return 1
    if isinstance(value, dict):
        return sum(tensor_count(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(tensor_count(v) for v in value)
    return 0
