"""FSDP1's ``device_id`` in the plain FSDP2 code (``codemods/rules/fsdp401/device.py``).

FSDP1 put each unit on ``device_id``; ``fully_shard`` shards on the current device. A
file that sets no device itself gets FSDP1's device set as the current one before
``fully_shard`` (``set_device_like_fsdp1``, resolved as FSDP1 resolved ``device_id``),
named in the finding; a file that sets one, or a ``device_id`` that is the current
device already, loses the argument with a note, as before. Without it, a script that
passed ``device_id=rank`` and never set its device sharded every rank on the first GPU
(a public pre-training script of that shape).
"""

from __future__ import annotations

import pytest
import torch

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.rules.fsdp401 import device
from codemods.rules.fsdp401.helpers import SOURCES
from codemods.settings import Settings

HEAD = "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
SETTINGS = Settings(
    fix=True, unsafe_fixes=True, select=("FSDP4",), releases=Releases.parse(torch="2.6..")
)


def _migrate(body: str):
    outcome = run((HEAD + body).encode(), SETTINGS)
    (finding,) = outcome.findings
    assert finding.fixed, finding.withheld
    return outcome.new_source.decode(), finding.message


def test_a_file_that_sets_no_device_gets_fsdp1s_as_the_current_one():
    new, message = _migrate("def main(model, rank):\n    return FSDP(model, device_id=rank)\n")
    assert "\ndef set_device_like_fsdp1(device):\n" in new
    assert new.endswith("    set_device_like_fsdp1(rank)\n    return fully_shard(model)\n")
    assert device.SET.format(device="rank") in message


def test_a_file_that_sets_its_device_keeps_it():
    body = (
        "def main(model, rank):\n    torch.cuda.set_device(rank)\n"
        "    return FSDP(model, device_id=rank)\n"
    )
    new, message = _migrate(body)
    assert "set_device_like_fsdp1" not in new and new.count("set_device(") == 1
    assert device.DROPPED in message


@pytest.mark.parametrize(
    "value",
    ["torch.cuda.current_device()", "torch.xpu.current_device()", "'cuda'", "torch.device('cpu')"],
)
def test_the_current_device_is_dropped(value):
    new, message = _migrate(f"def main(model):\n    return FSDP(model, device_id={value})\n")
    assert "set_device_like_fsdp1" not in new and "device_id" not in new
    assert device.DROPPED in message


def test_a_computed_device_is_evaluated_once_before_fsdp1s_steps():
    body = (
        "def main(model):\n"
        "    return FSDP(model, device_id=get_device(), sync_module_states=True)\n"
    )
    new, _ = _migrate(body)
    assert new.count("get_device()") == 1
    assert "    unit_device = get_device()\n    set_device_like_fsdp1(unit_device)\n" in new


@pytest.mark.parametrize("value", ["cpu", "cuda", "cuda:0"])
def test_the_helper_sets_only_a_device_with_an_index(value):
    """As FSDP1 resolved ``device_id``: the CPU, or no index, meant the current device."""
    namespace: dict = {"torch": torch}
    exec(SOURCES["device"].format(one="    ", device="set_device_like_fsdp1"), namespace)
    set_device_like_fsdp1 = namespace["set_device_like_fsdp1"]
    if value != "cuda:0":
        set_device_like_fsdp1(value)  # nothing to set: no CUDA call (it runs without one)
    elif torch.cuda.is_available():
        set_device_like_fsdp1(value)
        assert torch.cuda.current_device() == 0
    else:  # the call reaches CUDA's own, which refuses on a build or machine without CUDA
        with pytest.raises((RuntimeError, AssertionError, AttributeError)):
            set_device_like_fsdp1(value)
