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
    assert FSDP.fsdp_modules is TorchFSDP.fsdp_modules
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
            "name": "sync-module-state",
            "framework": Framework.TORCH,
            "kind": ChangeKind.KEYWORD_RENAME,
            "old": (*TORCH_FSDP_CLASSES, *COMPAT_FSDP_CLASSES),
            "new": TORCH_FSDP_CLASSES[0],
            # No torch takes the old spelling; every torch the matrix runs takes the new.
            "argument": "sync_module_state",
            "new_argument": "sync_module_states",
            "message": "`sync_module_state` is now `sync_module_states`",
            "why": "A rename for this test.",
            "example": Example(
                "FSDP(m, sync_module_state=True)\n", "FSDP(m, sync_module_states=True)\n"
            ),
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
    with pytest.raises(TypeError, match="unexpected keyword argument 'sync_module_state'"):
        translate_fsdp_arguments(model, sync_module_state=True)
    _with_rule(monkeypatch)
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP199\]") as record:
        arguments = translate_fsdp_arguments(model, sync_module_state=True)
    assert arguments["sync_module_states"] is True and "sync_module_state" not in arguments
    assert {w.filename for w in record} == {__file__}
    with pytest.raises(TypeError, match="got both sync_module_states= and its old spelling"):
        translate_fsdp_arguments(model, sync_module_state=True, sync_module_states=True)


def test_a_keyword_rename_of_another_callable_is_left_alone(monkeypatch):
    _with_rule(monkeypatch, old=("torch.distributed.fsdp.wrap.size_based_auto_wrap_policy",))
    with pytest.raises(TypeError, match="unexpected keyword argument 'sync_module_state'"):
        translate_fsdp_arguments(make_model(), sync_module_state=True)


def test_an_old_spelling_this_torch_still_takes_is_passed_as_is(monkeypatch, recwarn):
    """As torch 2.0 took ``ignored_parameters``, which 2.1 renamed: no rename, no warning."""
    _with_rule(monkeypatch, argument="sync_module_states", new_argument="sync_module_state")
    arguments = translate_fsdp_arguments(make_model(), sync_module_states=True)
    assert arguments["sync_module_states"] is True and "sync_module_state" not in arguments
    assert not [w for w in recwarn if issubclass(w.category, FSDPDeprecationWarning)]


def test_a_current_call_is_no_legacy_call(recwarn):
    config = CPUOffload(offload_params=False)
    device = torch.device("cpu")
    assert legacy_fsdp_call(make_model(), (), {"cpu_offload": config, "device_id": device}) is None
    assert legacy_fsdp_call(make_model(), (), {"cpu_offload": True, "device_id": device})
    assert legacy_fsdp_call(make_model(), (), {"auto_wrap_policy": {Block}, "device_id": device})
    _, classes = legacy_fsdp_call(make_model(), (), {"activation_checkpointing": [Block]})
    assert classes == {Block}
