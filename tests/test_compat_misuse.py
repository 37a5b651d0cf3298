"""compat under misuse: a clear error, never a silently wrong model.

(Wrong types, both spellings of one argument, and checkpointing applied twice are
tested beside the features they concern: test_policies, test_compat_strategies,
test_checkpointing.)
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from compat.deprecation import FSDPDeprecationWarning
from compat.features import current
from compat.fsdp import wrap as cw
from tests import distributed
from tests.models import Block, make_model


def test_a_policy_called_without_its_numel_argument():
    with pytest.warns(FSDPDeprecationWarning, match="transformer_layer_cls"):
        with pytest.raises(TypeError, match="missing the numel argument: nonwrapped_numel="):
            cw.transformer_auto_wrap_policy(nn.Linear(2, 2), False, transformer_layer_cls={Block})


def test_a_policy_called_with_an_extra_argument():
    with pytest.raises(TypeError, match="positional argument"):
        cw.lambda_auto_wrap_policy(nn.Linear(2, 2), False, 4, lambda m: True, "extra")


def test_a_lambda_policy_without_its_function():
    with pytest.warns(FSDPDeprecationWarning, match="lambda_fn"):
        with pytest.raises(TypeError, match="lambda_auto_wrap_policy needs lambda_fn="):
            cw.lambda_auto_wrap_policy(nn.Linear(2, 2), False, nonwrapped_numel=4)


def _wrap_twice(rank: int, world_size: int) -> str:
    import warnings

    from compat.fsdp import FSDP

    warnings.simplefilter("ignore")
    model = make_model()
    model.blocks[0] = FSDP(model.blocks[0])
    try:
        FSDP(model, auto_wrap_policy={Block})
    except ValueError as exc:
        return str(exc)
    return "no error"


@pytest.mark.distributed
@pytest.mark.skipif(not current().fsdp1_on_cpu, reason="this torch runs FSDP1 only on CUDA")
def test_auto_wrapping_a_model_that_already_has_fsdp_units_is_an_error():
    messages = distributed.run(_wrap_twice)
    assert all("already have FSDP applied" in m and "blocks.0" in m for m in messages)


@pytest.fixture
def single_rank():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.skipif(not current().fsdp2_on_cpu, reason="this torch runs FSDP2 only on CUDA")
def test_sharding_a_model_twice_with_fsdp2_names_the_units(single_rank):
    from compat.fsdp2 import fsdp2_unit_names, fully_shard_by_policy

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    fully_shard_by_policy(model, nn.Linear, use_orig_params=True)
    with pytest.raises(ValueError, match=r"already FSDP2 units: '\(the root\)', '0', '2'"):
        fully_shard_by_policy(model, nn.Linear, use_orig_params=True)
    assert fsdp2_unit_names(model) == ["", "0", "2"]
    assert torch.isfinite(model(torch.ones(2, 4))).all()  # the model still works
