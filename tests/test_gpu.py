"""The GPU leg: NCCL process groups, one rank per GPU, FSDP on CUDA.

The suites that spawn ranks through ``distributed.backend_for_tests`` pick NCCL where
CUDA is present; this test makes sure that is what happens there, and runs a legacy
spelling that needs a GPU (FSDP1's CPU offload pins memory). Skipped, by the ``gpu``
marker, where there is no CUDA. ``.ci/gpu.sh`` runs the GPU leg on a lent machine: the
focused suites and the FSDP2 training scripts run there with one NCCL rank per GPU; the
older equivalence suites still build their models and batches on the CPU and expect two
ranks, so on a one-GPU machine they fail (seen on an H100, torch 2.11).
"""

from __future__ import annotations

import pytest
import torch

from tests import distributed
from tests.models import Block, make_model, summary, train

pytestmark = [pytest.mark.gpu, pytest.mark.distributed]


def _legacy_and_native(rank: int, world_size: int) -> dict:
    import warnings

    import torch.distributed as dist
    from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    from compat.fsdp import FSDP

    device = distributed.device_for(rank)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = FSDP(make_model(), auto_wrap_policy={Block}, cpu_offload=True, device_id=device)
    native = FullyShardedDataParallel(
        make_model(),
        auto_wrap_policy=ModuleWrapPolicy({Block}),
        cpu_offload=CPUOffload(offload_params=True),
        device_id=device,
    )
    return {
        "backend": dist.get_backend(),
        "world_size": world_size,
        "device": str(device),
        "legacy": summary(legacy, train(legacy, [rank], device=device)),
        "native": summary(native, train(native, [rank], device=device)),
    }


def test_nccl_one_rank_per_gpu_and_legacy_offload_equals_native():
    backend = distributed.backend_for_tests()
    runs = distributed.run(_legacy_and_native, backend=backend, timeout=400)
    assert len(runs) == torch.cuda.device_count()
    for rank, result in enumerate(runs):
        assert result["backend"] == "nccl" and result["device"] == f"cuda:{rank}"
        legacy, native = result["legacy"], result["native"]
        assert legacy["units"] == native["units"] and len(native["units"]) > 1
        for key, value in native["state"].items():
            torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)
        assert legacy["losses"] == pytest.approx(native["losses"], abs=1e-6)
