"""The examples in the docstrings run, on the torch versions that have their features."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import codemods
import compat
from compat.features import current


def _modules(package) -> list[str]:
    return sorted(
        info.name for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")
    )


def _needs(name: str) -> str | None:
    """Why a module's examples cannot run here, or None."""
    if name.startswith("compat.strategies"):
        try:
            importlib.import_module("lightning")
        except ImportError:
            return "needs Lightning"
    dcp = "torch.distributed.checkpoint"
    if name == "compat.checkpoint" and importlib.util.find_spec(dcp) is None:
        return "needs torch.distributed.checkpoint (torch >= 2.0)"
    if name == "compat.fsdp2" and not current().fsdp2_on_cpu:
        return "its example runs FSDP2 on CPU (torch >= 2.7)"
    return None


MODULES = [name for package in (compat, codemods) for name in _modules(package)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    reason = _needs(name)
    if reason:
        pytest.skip(reason)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_apis_of_issue_4_have_examples():
    from compat import checkpointing, fsdp2

    for function in (checkpointing, fsdp2.fully_shard_by_policy):
        assert ">>>" in (function.__doc__ or "")
