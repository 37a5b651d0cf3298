"""The equivalence suite's machinery: run legacy and native builders, compare the results.

A test module defines ``CASES = {name: Case(...)}`` with module-level builders
(``model -> wrapped model``), then calls :func:`run_all` once (one spawn for all its
cases) and asserts each case with :func:`assert_equivalent` and
:func:`assert_matches_reference`. Everything runs on the rank's device (its GPU under
NCCL): the models, the batches and the unsharded reference, which rank 0 trains too.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
import torch

from tests import distributed
from tests.models import local_device, make_model, reference_summary, summary, train

Builder = Callable[[torch.nn.Module], torch.nn.Module]


@dataclass(frozen=True)
class Case:
    """One mapping under test.

    Attributes:
        legacy: Builds the model the legacy way, through compat.
        native: Builds it with the current native API.
        codes: Rule codes the legacy build must warn with (and no others).
        reference: Prepares the unsharded reference model (e.g. checkpointing).
        legacy_trains: ``legacy(rank)`` trains by itself (a Lightning Trainer or Fabric
            loop) and returns its :func:`tests.models.summary`.
    """

    legacy: Builder
    native: Builder
    codes: frozenset[str] = field(default_factory=frozenset)
    reference: Builder | None = None
    legacy_trains: bool = False


def native_fsdp(model: torch.nn.Module, **kwargs: Any) -> torch.nn.Module:
    """torch's own FSDP1 on this rank's device, as current native code would write it."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    device = distributed.device_for(torch.distributed.get_rank())
    return FullyShardedDataParallel(model, device_id=device, **kwargs)


def checkpoint_reference(*classes: type) -> Builder:
    """A reference builder that checkpoints ``classes``, as the legacy run does."""

    def build(model: torch.nn.Module) -> torch.nn.Module:
        from compat.checkpointing import checkpoint_modules

        checkpoint_modules(model, list(classes))
        return model

    return build


def warning_codes(caught: list[warnings.WarningMessage]) -> set[str]:
    """Rule codes of the FSDPDeprecationWarnings among ``caught``."""
    from compat import FSDPDeprecationWarning

    return {
        str(w.message).rsplit("[", 1)[-1].rstrip("]")
        for w in caught
        if issubclass(w.category, FSDPDeprecationWarning)
    }


def _run_side(build: Builder, rank: int, trains: bool = False) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if trains:
            result = build(rank)
        else:
            device = local_device()
            model = build(make_model().to(device))
            result = summary(model, train(model, [rank], device=device))
    result["codes"] = warning_codes(caught)
    return result


def _run_cases(rank: int, world_size: int, module_name: str, names: list[str]) -> dict[str, Any]:
    from compat.deprecation import reset_warned_sites

    cases = importlib.import_module(module_name).CASES
    results = {}
    for name in names:
        reset_warned_sites()
        case = cases[name]
        results[name] = {
            "legacy": _run_side(case.legacy, rank, case.legacy_trains),
            "native": _run_side(case.native, rank),
        }
        if rank == 0:
            reference = case.reference or (lambda model: model)
            results[name]["reference"] = reference_summary(reference, world_size, local_device())
    return results


def run_all(module_name: str, cases: dict[str, Case], timeout: float = 400) -> list[dict[str, Any]]:
    """Run every case of ``module_name`` on 2 real ranks; return each rank's results.

    NCCL where the machine has two GPUs, else gloo on the CPU (tests/distributed.py).
    """
    return distributed.run(_run_cases, module_name, list(cases), world_size=2, timeout=timeout)


def assert_equivalent(runs: list[dict[str, Any]], name: str, case: Case) -> None:
    """Legacy and native built the same sharded model and trained to the same numbers."""
    for rank_result in runs:
        legacy, native = rank_result[name]["legacy"], rank_result[name]["native"]
        assert legacy["units"] == native["units"] and len(native["units"]) > 1
        assert legacy["checkpointed"] == native["checkpointed"]
        assert legacy["state"].keys() == native["state"].keys()
        for key, value in native["state"].items():
            torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)
        assert legacy["losses"] == pytest.approx(native["losses"], abs=1e-6)
        assert legacy["codes"] == set(case.codes)
        assert native["codes"] == set()


def assert_matches_reference(runs: list[dict[str, Any]], name: str, case: Case) -> None:
    """The legacy sharded run equals an unsharded run over all ranks' data."""
    reference = runs[0][name]["reference"]
    legacy = runs[0][name]["legacy"]
    assert legacy["checkpointed"] == reference["checkpointed"]
    for key, value in reference["state"].items():
        torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)


def equivalence_tests(module_name: str, cases: dict[str, Case], timeout: float = 400) -> tuple:
    """The fixture and the two parametrized tests every equivalence module runs.

    Use as ``runs, test_legacy_equals_native, test_legacy_equals_reference =
    equivalence_tests(__name__, CASES)`` so pytest collects them from that module.
    """
    from compat.features import current

    @pytest.fixture(scope="module")
    def runs() -> list[dict[str, Any]]:
        if not current().fsdp1_on_cpu and not torch.cuda.is_available():
            pytest.skip("this torch runs FSDP1 only on CUDA")
        return run_all(module_name, cases, timeout)

    @pytest.mark.distributed
    @pytest.mark.parametrize("name", list(cases))
    def test_legacy_equals_native(runs, name):
        assert_equivalent(runs, name, cases[name])

    @pytest.mark.distributed
    @pytest.mark.parametrize("name", list(cases))
    def test_legacy_equals_reference(runs, name):
        assert_matches_reference(runs, name, cases[name])

    return runs, test_legacy_equals_native, test_legacy_equals_reference
