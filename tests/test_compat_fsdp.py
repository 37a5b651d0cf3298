"""compat.fsdp.FullyShardedDataParallel: argument translation and errors (no process group)."""

from __future__ import annotations

import pytest
import torch
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as TorchFSDP

from compat import FSDPDeprecationWarning
from compat.features import current
from compat.fsdp import FSDP, FullyShardedDataParallel, has_accelerator, translate_fsdp_arguments
from compat.policies import select_modules
from tests.models import Block, make_model


def test_the_compat_name_stands_for_torchs_class():
    assert FSDP is FullyShardedDataParallel
    assert issubclass(TorchFSDP, FSDP)
    assert FSDP.summon_full_params is TorchFSDP.summon_full_params
    assert FSDP.state_dict_type is TorchFSDP.state_dict_type
    assert not isinstance(torch.nn.Linear(2, 2), FSDP)


@pytest.mark.parametrize("offload", [True, False])
def test_cpu_offload_bool_becomes_a_cpu_offload_config(offload):
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP109\]"):
        arguments = translate_fsdp_arguments(make_model(), cpu_offload=offload)
    assert arguments["cpu_offload"] == CPUOffload(offload_params=offload)


def test_cpu_offload_config_passes_through_silently(recwarn):
    config = CPUOffload(offload_params=True)
    assert translate_fsdp_arguments(make_model(), cpu_offload=config)["cpu_offload"] is config
    assert not [w for w in recwarn if issubclass(w.category, FSDPDeprecationWarning)]


def test_policy_classes_become_a_policy():
    arguments = translate_fsdp_arguments(make_model(), auto_wrap_policy={Block})
    policy = arguments["auto_wrap_policy"]
    assert not isinstance(policy, set)
    assert select_modules(make_model(), policy) == ["blocks.0", "blocks.1", "blocks.2"]


def test_device_id_defaults_to_cpu_without_an_accelerator():
    arguments = translate_fsdp_arguments(make_model())
    if current().fsdp1_on_cpu and not has_accelerator():
        assert arguments["device_id"] == torch.device("cpu")
    else:
        assert arguments.get("device_id") is None
    explicit = translate_fsdp_arguments(make_model(), device_id=torch.device("cpu"))
    assert explicit["device_id"] == torch.device("cpu")


def test_positional_arguments_bind_like_torchs():
    config = CPUOffload(offload_params=False)
    # FSDP(module, process_group, sharding_strategy, cpu_offload, ...)
    arguments = translate_fsdp_arguments(make_model(), None, None, config)
    assert arguments["cpu_offload"] is config


def test_unknown_argument_is_torchs_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'flatten_parameters'"):
        FSDP(make_model(), flatten_parameters=True)


@pytest.mark.parametrize(
    ("value", "message"),
    [(Block(), "got an instance of Block"), (int, "expects nn.Module subclasses")],
)
def test_activation_checkpointing_type_errors(value, message):
    with pytest.raises(TypeError, match=message), pytest.warns(FSDPDeprecationWarning):
        FSDP(make_model(), activation_checkpointing=value)
