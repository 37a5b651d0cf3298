"""With the drop-in installed, current-API code does exactly what it does without it.

Every native builder of the equivalence suites (torch's own FSDP1 in the current API,
the migrated runnable fixtures) builds and trains on 2 real ranks twice, once plainly
and once with :func:`compat.install` in effect: the same FSDP units and checkpointed
modules, bit-identical parameters and losses, and not one deprecation warning.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from compat.features import current
from tests import distributed
from tests.equivalence import warning_codes
from tests.models import local_device, make_model, summary, train

pytestmark = pytest.mark.distributed

if not current().fsdp1_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)


def _builders() -> dict:
    from tests import test_compat_fsdp_equivalence, test_migrate_equivalence

    return {
        **{f"fsdp/{n}": c.native for n, c in test_compat_fsdp_equivalence.CASES.items()},
        **{f"migrate/{n}": c.native for n, c in test_migrate_equivalence.CASES.items()},
    }


def _train(build, rank: int) -> dict:
    device = local_device()  # the rank's GPU under NCCL
    model = build(make_model().to(device))
    return summary(model, train(model, [rank], device=device))


def _with_and_without(rank: int, world_size: int) -> dict:
    from torch.distributed.fsdp import FullyShardedDataParallel

    import compat

    results = {}
    for name, build in _builders().items():
        plain = _train(build, rank)
        compat.install()
        # The drop-in is really in place: torch's FSDP goes through its translation.
        assert getattr(FullyShardedDataParallel.__init__, "__compat_dropin__", False)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                installed = _train(build, rank)
        finally:
            compat.uninstall()
        results[name] = {"plain": plain, "installed": installed, "codes": warning_codes(caught)}
    return results


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    return distributed.run(_with_and_without, backend=distributed.backend_for_tests(), timeout=600)


@pytest.mark.parametrize("name", sorted(_builders()))
def test_current_code_is_unchanged_by_the_drop_in(runs, name):
    for rank_results in runs:
        plain, installed = rank_results[name]["plain"], rank_results[name]["installed"]
        assert installed["units"] == plain["units"]
        assert installed["checkpointed"] == plain["checkpointed"]
        assert installed["losses"] == plain["losses"]  # bit for bit
        assert installed["state"].keys() == plain["state"].keys()
        for key, value in plain["state"].items():
            assert torch.equal(installed["state"][key], value), key
        assert rank_results[name]["codes"] == set()
