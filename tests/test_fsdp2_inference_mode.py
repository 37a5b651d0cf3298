"""FSDP401 names ``torch.inference_mode()`` in the file: an FSDP2 model may raise there.

FSDP1's model runs under inference mode; on torch 2.13 a ``fully_shard`` model on a
single rank raises at its first forward there (checked below on gloo). The conversion
is still written (it is unsafe, and two ranks run), and its finding says so (mochi's
pipelines run their sharded encoders only under inference mode).
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SETTINGS = Settings(
    select=("FSDP401",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch="2.6..")
)
SAYS = "the file runs code under `torch.inference_mode()` (line {line}), where an FSDP2"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (
            "import torch\n\n\ndef encode(model, x):\n    with torch.inference_mode():\n"
            "        return model(x)\n",
            5,
        ),
        (
            "from torch import inference_mode\n\n\n@inference_mode()\ndef encode(model, x):\n"
            "    return model(x)\n",
            4,
        ),
        (
            "import torch\n\n\ndef encode(model, x):\n    with torch.no_grad():\n"
            "        return model(x)\n",
            None,
        ),
        # another library's namesake
        (
            "from mylib import inference_mode\n\n\n@inference_mode()\ndef encode(model, x):\n"
            "    return model(x)\n",
            None,
        ),
    ],
)
def test_the_finding_names_inference_mode_in_the_file(source, line):
    wrap = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    outcome = run((wrap + source + "\n\nmodel = FSDP(model)\n").encode(), SETTINGS)
    (finding,) = outcome.findings
    assert finding.fixed
    if line is None:
        assert "inference_mode" not in finding.message
    else:
        assert SAYS.format(line=line + 1) in finding.message


def _forward_under_inference_mode(rank: int, world_size: int) -> dict[str, str]:
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard

    found = {}
    for name in ("fsdp1", "fsdp2"):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
        if name == "fsdp1":
            model = FullyShardedDataParallel(model, device_id=torch.device("cpu"))
        else:
            fully_shard(model[0])
            fully_shard(model)
        try:
            with torch.inference_mode():
                model(torch.randn(2, 8))
            found[name] = "ran"
        except RuntimeError as error:
            found[name] = str(error)
    return found


@pytest.mark.distributed
def test_on_torch_2_13_fsdp2_raises_under_inference_mode_on_one_rank():
    import torch

    from tests import distributed

    if not torch.__version__.startswith("2.13."):
        pytest.skip("the note's fact is torch 2.13's (checked on the release it names)")
    (found,) = distributed.run(_forward_under_inference_mode, world_size=1, timeout=120)
    assert found["fsdp1"] == "ran"
    assert "Inference tensors do not track version counter" in found["fsdp2"]
