"""The feature flags match the installed torch: probed features agree with the registry's
release numbers, and the release-gated ones are proven by real process groups."""

from __future__ import annotations

import importlib
import inspect

import pytest
import torch
from packaging.version import Version

from codemods.registry import REGISTRY
from compat.features import current, parse_version, torch_version
from tests import distributed

FLAGS = current()


def _since(name: str) -> bool:
    return FLAGS.torch >= Version(REGISTRY.capability(name).since)


def test_torch_version_is_the_installed_one():
    assert torch_version() == FLAGS.torch
    assert str(FLAGS.torch) in torch.__version__


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.13.0+cpu", "2.13.0"),
        ("2.1.2+cu121", "2.1.2"),
        ("2.6.0a0+git12ab", "2.6.0"),
        ("1.13.1", "1.13.1"),
        ("2.7.0.dev20250101", "2.7.0"),
    ],
)
def test_parse_version_drops_local_and_pre_release_tags(text, expected):
    assert parse_version(text) == Version(expected)


def test_lightning_version_matches_the_installed_package():
    try:
        import lightning as lightning_pkg
    except ImportError:
        lightning_pkg = None
    if lightning_pkg is None:
        assert FLAGS.lightning is None or FLAGS.lightning
    else:
        assert FLAGS.lightning == parse_version(lightning_pkg.__version__)


@pytest.mark.parametrize(
    "flag",
    [
        "module_wrap_policy",
        "custom_policy",
        "ac_auto_wrap_policy",
        "checkpoint_no_reentrant_default",
        "selective_ac",
    ],
)
def test_probed_flag_agrees_with_the_registry_release(flag):
    # Selective AC lives in torch.utils.checkpoint; the others need torch.distributed.
    available = FLAGS.distributed or flag == "selective_ac"
    assert getattr(FLAGS, flag) == (available and _since(flag))


def test_probed_flags_agree_with_torch_itself():
    wrap = importlib.import_module("torch.distributed.fsdp.wrap")
    assert FLAGS.module_wrap_policy == hasattr(wrap, "ModuleWrapPolicy")
    assert FLAGS.custom_policy == hasattr(wrap, "CustomPolicy")
    params = inspect.signature(wrap.size_based_auto_wrap_policy).parameters
    assert FLAGS.policy_numel_kwarg in params
    import torch.utils.checkpoint as checkpoint

    assert FLAGS.selective_ac == hasattr(checkpoint, "create_selective_checkpoint_contexts")


def test_numel_kwarg_is_the_one_policies_accept():
    wrap = importlib.import_module("torch.distributed.fsdp.wrap")
    expected = "nonwrapped_numel" if _since("nonwrapped_numel") else "unwrapped_params"
    assert FLAGS.policy_numel_kwarg == expected
    kwargs = {FLAGS.policy_numel_kwarg: 10}
    assert wrap.size_based_auto_wrap_policy(
        torch.nn.Linear(2, 2), False, min_num_params=5, **kwargs
    )


def test_fsdp2_location_follows_the_releases():
    if _since("fsdp2_public"):
        expected = "torch.distributed.fsdp"
    elif _since("fsdp2"):
        expected = "torch.distributed._composable.fsdp"
    else:
        expected = None
    assert FLAGS.fsdp2_module == expected
    if expected:
        assert hasattr(importlib.import_module(expected), "fully_shard")


def test_release_gated_flags_follow_the_registry():
    assert FLAGS.fsdp1_on_cpu == (FLAGS.distributed and _since("fsdp1_on_cpu"))
    assert FLAGS.fsdp2_on_cpu == (FLAGS.fsdp2 and _since("fsdp2_on_cpu"))


def _fsdp1_train_step(rank: int, world_size: int) -> float:
    from torch.distributed.fsdp import FullyShardedDataParallel

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    sharded = FullyShardedDataParallel(model, device_id=torch.device("cpu"))
    loss = sharded(torch.ones(4, 8)).sum()
    loss.backward()
    return float(loss)


def _fsdp2_train_step(rank: int, world_size: int) -> float:
    fully_shard = importlib.import_module(current().fsdp2_module).fully_shard
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    fully_shard(model[0])
    fully_shard(model)
    loss = model(torch.ones(4, 8)).sum()
    loss.backward()
    return float(loss)


@pytest.mark.distributed
@pytest.mark.skipif(not FLAGS.fsdp1_on_cpu, reason="this torch runs FSDP1 only on CUDA")
def test_fsdp1_on_cpu_really_runs():
    losses = distributed.run(_fsdp1_train_step)
    assert losses[0] == losses[1]


@pytest.mark.distributed
@pytest.mark.skipif(not FLAGS.fsdp2_on_cpu, reason="this torch runs FSDP2 only on CUDA")
def test_fsdp2_on_cpu_really_runs():
    losses = distributed.run(_fsdp2_train_step)
    assert losses[0] == losses[1]


def test_a_probe_never_imports_a_module_only_a_finder_serves(monkeypatch):
    """Under the drop-in, old paths torch lacks are served stand-ins that warn their
    importer: compat's own probes must not import one (torch 2.2, FSDP107)."""
    import importlib.abc
    import importlib.util
    import sys
    import types

    from compat.features import _installed_module

    name = "torch.distributed._served_only_by_a_finder"

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            return importlib.util.spec_from_loader(fullname, self) if fullname == name else None

        def create_module(self, spec):
            return types.ModuleType(spec.name)

        def exec_module(self, module):
            pass

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ModuleNotFoundError):
        _installed_module(name)
    assert name not in sys.modules
    assert _installed_module("torch.distributed.fsdp") is sys.modules["torch.distributed.fsdp"]
