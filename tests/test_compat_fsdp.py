"""compat.fsdp.FullyShardedDataParallel: argument translation and errors (no process group)."""

from __future__ import annotations

import pytest
import torch
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as TorchFSDP

from compat import FSDPDeprecationWarning
from compat.features import current
from compat.fsdp import (
    FSDP,
    FullyShardedDataParallel,
    has_accelerator,
    legacy_fsdp_call,
    translate_fsdp_arguments,
)
from compat.policies import select_modules
from tests.models import Block, make_model


def test_the_compat_name_stands_for_torchs_class():
    assert FSDP is FullyShardedDataParallel
    assert issubclass(TorchFSDP, FSDP)
    assert FSDP.summon_full_params is TorchFSDP.summon_full_params
    assert FSDP.optim_state_dict is TorchFSDP.optim_state_dict
    # The legacy state-dict API is compat's own: it warns (tests/test_compat_state_dict.py).
    assert FSDP.state_dict_type is not TorchFSDP.state_dict_type
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


def _with_rule(monkeypatch, **fields):
    """Make the registry hold one more rule, as a contributor's new entry would."""
    import codemods.registry
    from codemods.registry import ChangeKind, Example, FixSafety, Framework, Registry, Rule
    from codemods.registry.names import COMPAT_FSDP_CLASSES, TORCH_FSDP_CLASSES

    rule = Rule(
        **{
            "code": "FSDP199",
            "name": "ignored-parameters",
            "framework": Framework.TORCH,
            "kind": ChangeKind.KEYWORD_RENAME,
            "old": (*TORCH_FSDP_CLASSES, *COMPAT_FSDP_CLASSES),
            "new": TORCH_FSDP_CLASSES[0],
            "argument": "ignored_parameters",
            "new_argument": "ignored_states",
            "message": "`ignored_parameters` is now `ignored_states`",
            "why": "A rename for this test.",
            "example": Example("FSDP(m, ignored_parameters=p)\n", "FSDP(m, ignored_states=p)\n"),
            "fix": FixSafety.SAFE,
            **fields,
        }
    )
    registry = codemods.registry.REGISTRY
    monkeypatch.setattr(
        codemods.registry, "REGISTRY", Registry(registry.rules + (rule,), registry.capabilities)
    )


def test_a_keyword_rename_in_the_registry_is_translated(monkeypatch):
    model = make_model()
    ignored = [model.head.proj.weight]
    with pytest.raises(TypeError, match="unexpected keyword argument 'ignored_parameters'"):
        translate_fsdp_arguments(model, ignored_parameters=ignored)
    _with_rule(monkeypatch)
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP199\]") as record:
        arguments = translate_fsdp_arguments(model, ignored_parameters=ignored)
    assert arguments["ignored_states"] is ignored and "ignored_parameters" not in arguments
    assert {w.filename for w in record} == {__file__}
    with pytest.raises(TypeError, match="got both ignored_states= and its old spelling"):
        translate_fsdp_arguments(model, ignored_parameters=ignored, ignored_states=ignored)


def test_a_keyword_rename_of_another_callable_is_left_alone(monkeypatch):
    _with_rule(monkeypatch, old=("torch.distributed.fsdp.wrap.size_based_auto_wrap_policy",))
    with pytest.raises(TypeError, match="unexpected keyword argument 'ignored_parameters'"):
        translate_fsdp_arguments(make_model(), ignored_parameters=[])


def test_a_current_call_is_no_legacy_call(recwarn):
    config = CPUOffload(offload_params=False)
    device = torch.device("cpu")
    assert legacy_fsdp_call(make_model(), (), {"cpu_offload": config, "device_id": device}) is None
    assert legacy_fsdp_call(make_model(), (), {"cpu_offload": True, "device_id": device})
    assert legacy_fsdp_call(make_model(), (), {"auto_wrap_policy": {Block}, "device_id": device})
    _, classes = legacy_fsdp_call(make_model(), (), {"activation_checkpointing": [Block]})
    assert classes == {Block}
