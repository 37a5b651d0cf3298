"""compat's legacy state-dict API in one process: wiring, warnings, errors, DCP without ranks.

The multi-rank proof is tests/test_state_dict_runs.py; here are the parts that need no
process group: what ``compat.fsdp.FSDP`` answers for the legacy names, the clear errors,
``compat.checkpoint``'s old and new functions on plain tensors (``no_dist``), and the
comparison helper those runs rely on (it must fail on every kind of difference).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import textwrap
import warnings

import pytest
import torch
import torch.nn as nn

from compat.deprecation import FSDPDeprecationWarning, warn_deprecated
from compat.features import current, dcp_save_load
from tests.state_dicts import assert_same

needs_fsdp = pytest.mark.skipif(not current().distributed, reason="needs torch.distributed")
needs_dcp = pytest.mark.skipif(
    not current().distributed or importlib.util.find_spec("torch.distributed.checkpoint") is None,
    reason="needs torch.distributed.checkpoint (torch >= 2.0)",
)

LEGACY = (
    "state_dict_type",
    "set_state_dict_type",
    "full_optim_state_dict",
    "sharded_optim_state_dict",
    "shard_full_optim_state_dict",
    "flatten_sharded_optim_state_dict",
    "scatter_full_optim_state_dict",
    "rekey_optim_state_dict",
)


def _codes(caught) -> list[str]:
    return [
        str(w.message).rsplit("[", 1)[-1].rstrip("]")
        for w in caught
        if issubclass(w.category, FSDPDeprecationWarning)
    ]


@needs_fsdp
@pytest.mark.parametrize("name", LEGACY)
def test_compat_fsdp_answers_the_legacy_names_with_its_own(name):
    import compat.fsdp.state_dict as state_dict
    from compat.fsdp import FSDP, TorchFSDP

    assert getattr(FSDP, name) is getattr(state_dict, name)
    # torch's untouched (torch 1.13 has no set_state_dict_type at all: still none)
    assert getattr(TorchFSDP, name, None) is not getattr(state_dict, name)


@needs_fsdp
def test_other_class_attributes_stay_torchs():
    from compat.fsdp import FSDP, TorchFSDP

    assert FSDP.summon_full_params is TorchFSDP.summon_full_params
    if hasattr(TorchFSDP, "optim_state_dict"):
        assert FSDP.optim_state_dict is TorchFSDP.optim_state_dict
    else:  # torch 1.13: compat's class adds none of its own
        with pytest.raises(AttributeError, match="optim_state_dict"):
            FSDP.optim_state_dict  # noqa: B018


@needs_fsdp
def test_optim_input_without_optim_needs_torchs_own_method():
    from compat.fsdp.state_dict import _optim_arguments

    with pytest.raises(TypeError, match="pass the optimizer as optim="):
        _optim_arguments(None, [nn.Parameter(torch.ones(1))], "no_such_method_in_torch")


@needs_fsdp
def test_optim_input_is_dropped_with_fsdp117_when_optim_is_given():
    from compat.fsdp.state_dict import _optim_arguments

    optim = torch.optim.SGD([nn.Parameter(torch.ones(1))], lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arguments = _optim_arguments(optim, optim.param_groups[0]["params"], "x")
    assert arguments == {"optim": optim}
    assert _codes(caught) == ["FSDP117"]


@needs_fsdp
def test_fallback_refuses_local_state_dict_at_once():
    import compat.fsdp.fallbacks as fallbacks
    from compat.fsdp.fallbacks import StateDictType

    module = nn.Linear(2, 2)
    with pytest.raises(NotImplementedError, match="LOCAL_STATE_DICT"):
        fallbacks.set_state_dict_type(module, StateDictType.LOCAL_STATE_DICT)
    assert "state_dict" not in vars(module)  # nothing left half-set
    assert module not in fallbacks._settings


def test_warn_deprecated_needs_a_registry_rule():
    with pytest.raises(KeyError):
        warn_deprecated("FSDP999")


def _load_gathers_keys_whatever_no_dist() -> bool:
    """Whether torch's ``load`` gathers the keys from every rank even with ``no_dist=True``.

    torch 2.2's does (its first ``load``), so it fails without a process group; later
    ones gather only under a test of ``no_dist``. Read from its source: the call to
    ``_all_gather_keys`` outside any ``if`` that tests ``no_dist``.
    """
    from torch.distributed.checkpoint import state_dict_loader

    tree = ast.parse(textwrap.dedent(inspect.getsource(state_dict_loader.load)))
    guarded = {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and "no_dist" in ast.dump(branch.test)
        for node in ast.walk(branch)
    }
    return any(
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "_all_gather_keys"
        and id(node) not in guarded
        for node in ast.walk(tree)
    )


@needs_dcp
@pytest.mark.parametrize("way", ["torch", "on-save-load"])
def test_old_checkpoint_functions_round_trip_without_ranks(tmp_path, way):
    import compat.checkpoint as cc

    if way == "on-save-load" and not dcp_save_load():
        pytest.skip("torch.distributed.checkpoint.save needs torch >= 2.2")
    if way == "on-save-load" and _load_gathers_keys_whatever_no_dist():
        # compat uses the stand-in only where torch has no load_state_dict: not here.
        pytest.skip("this torch's load() gathers keys from every rank even with no_dist=True")

    save, load = (
        (cc.save_state_dict, cc.load_state_dict)
        if way == "torch"
        else (cc.save_state_dict_with_save, cc.load_state_dict_with_load)
    )
    saved = {"w": torch.randn(3, 2), "step": torch.tensor(7)}
    target = {"w": torch.zeros(3, 2), "step": torch.tensor(0)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save(saved, cc.FileSystemWriter(str(tmp_path)), no_dist=True)
        load(target, cc.FileSystemReader(str(tmp_path)), no_dist=True)
    assert assert_same(saved, target) == 2
    if way == "torch":
        assert set(_codes(caught)) == {"FSDP120", "FSDP121"}


@needs_dcp
def test_new_checkpoint_functions_round_trip_on_the_old_ones(tmp_path):
    import compat.checkpoint as cc

    saved = {"w": torch.randn(4)}
    target = {"w": torch.zeros(4)}
    cc.save_with_save_state_dict(saved, checkpoint_id=str(tmp_path))
    cc.load_with_load_state_dict(target, checkpoint_id=str(tmp_path))
    assert assert_same(saved, target) == 1
    with pytest.raises(ValueError, match="checkpoint_id"):
        cc.save_with_save_state_dict(saved)


@needs_dcp
def test_compat_checkpoint_reexports_torchs_module():
    import torch.distributed.checkpoint as dcp

    import compat.checkpoint as cc

    assert cc.FileSystemWriter is dcp.FileSystemWriter
    assert cc.DefaultSavePlanner is dcp.DefaultSavePlanner
    assert cc.save in (getattr(dcp, "save", None), cc.save_with_save_state_dict)
    assert cc.load in (getattr(dcp, "load", None), cc.load_with_load_state_dict)
    with pytest.raises(AttributeError, match="no_such_name"):
        cc.no_such_name  # noqa: B018


def test_dropin_mirrors_distributed_checkpoint_with_compat_checkpoint():
    from compat.dropin.plan import mirror_of

    assert mirror_of("torch.distributed.checkpoint.save_state_dict") == "compat.checkpoint"
    assert mirror_of("torch.distributed.checkpoint.state_dict.get_state_dict") == (
        "compat.checkpoint"
    )


@pytest.mark.parametrize(
    "actual",
    [
        {"a": torch.tensor([1.0, 2.5])},  # a value
        {"a": torch.tensor([1, 2])},  # the dtype
        {"a": torch.tensor([[1.0, 2.0]])},  # the shape
        {"b": torch.tensor([1.0, 2.0])},  # a key
        {"a": [1.0, 2.0]},  # not a tensor
    ],
)
def test_comparison_fails_on_every_kind_of_difference(actual):
    with pytest.raises(AssertionError):
        assert_same({"a": torch.tensor([1.0, 2.0])}, actual)


def test_comparison_counts_the_tensors_it_compared():
    state = {"state": {"w": {"m": torch.ones(2), "step": torch.tensor(1.0)}}, "groups": [{"lr": 1}]}
    assert assert_same(state, {**state}) == 2
