"""The bridge opt-in and honest (issue 42, item 3), against FSDP1 on two gloo ranks.

Manual nesting and container units train as FSDP1 does; ``LOCAL_STATE_DICT`` gathers
no parameter; a bridged model answers FSDP2's questions as FSDP2 and FSDP1's as FSDP1,
inside a parent module too, and has no ``module`` to unwrap forever; nothing of torch's
is patched; what differs from FSDP1 (the optimizer's parameters, bf16 accumulation) is
warned. One port-checker spawn (``tests/bridge_ports.py``) and one spawn of direct checks.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
import torch.nn as nn

from compat.fsdp2.availability import fsdp2_on_cpu
from tests import distributed

if not fsdp2_on_cpu():
    pytest.skip("the bridge's CPU runs need torch >= 2.7", allow_module_level=True)

from compat.portcheck import PortCase, check_ports  # noqa: E402

B, P = "tests.bridge_ports:", "tests.portcheck_ports:"


def _case(before: str, after: str, **options: Any) -> PortCase:
    return PortCase(before, after, P + "batch", **options)


CASES = {
    "nested": _case(B + "fsdp1_nested", B + "bridge_nested"),
    "nested-bf16": _case(B + "fsdp1_bf16_nested", B + "bridge_bf16_nested"),
    "every-module": _case(B + "fsdp1_every_module", B + "bridge_every_module"),
    "container-with-parameters": _case(B + "fsdp1_blocks", B + "bridge_lists_only"),
    "container-fsdp1-itself": _case(B + "fsdp1_lists_only", B + "bridge_lists_only"),
    "bf16": _case(P + "fsdp1_bf16", B + "bridge_bf16"),
    "bf16-accumulation": _case(P + "fsdp1_bf16", B + "bridge_bf16", accumulate=2),
    "grouped": _case(P + "fsdp1_grouped", B + "bridge_grouped"),
}


@pytest.fixture(scope="module")
def reports():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check_ports(CASES, world_size=2, timeout=600)


def _same_numbers(report: Any) -> None:
    assert len(report.step_rows) == 3, report.render()
    for row in report.step_rows:
        assert row.loss_after == pytest.approx(row.loss_before, abs=1e-5), report.render()
        assert row.weight_diff is not None and row.weight_diff <= 1e-5, report.render()


@pytest.mark.distributed
@pytest.mark.parametrize("name", ["nested", "nested-bf16", "bf16"])
def test_the_bridge_trains_as_fsdp1(reports, name):
    report = reports[name]
    report.assert_passed()
    assert report.before.units == report.after.units
    _same_numbers(report)


@pytest.mark.distributed
def test_manual_nesting_keeps_fsdp1s_units(reports):
    assert reports["nested"].after.units == ["", "layers.0", "layers.1"]


@pytest.mark.distributed
@pytest.mark.parametrize("name", ["every-module", "container-with-parameters"])
def test_a_policy_that_picks_a_container_trains_as_fsdp1(reports, name):
    report = reports[name]
    _same_numbers(report)
    assert "layers" not in report.after.units  # FSDP2 has no unit of a container


@pytest.mark.distributed
def test_where_fsdp1s_container_unit_holds_parameters_fsdp1_fails_and_the_bridge_trains(
    reports,
):
    # FSDP1 warns that it "will not all-gather parameters for containers that do not
    # implement forward", and its first forward fails on 2 ranks; the bridge's group
    # unit gathers them when a module of the container runs (the numbers are those of
    # FSDP1 with each block a unit: "container-with-parameters").
    report = reports["container-fsdp1-itself"]
    assert report.before.error is not None and "setStorage" in report.before.error
    assert report.after.error is None and len(report.step_rows) == 3


@pytest.mark.distributed
def test_bf16_accumulation_differs_as_the_docs_say(reports):
    report = reports["bf16-accumulation"]
    assert not report.passed
    assert any(f.cause == "accumulation-dtype" for f in report.findings), report.render()
    for row in report.step_rows:  # slightly: bf16 against fp32 accumulation
        assert row.loss_after == pytest.approx(row.loss_before, abs=1e-3)


@pytest.mark.distributed
def test_per_module_groups_on_the_original_parameters_are_the_named_difference(reports):
    report = reports["grouped"]
    assert any(f.cause == "optimizer-groups" for f in report.findings), report.render()


class Holder(nn.Module):
    """A parent of the wrapped model, as a trainer's wrapper module is."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net


def _plain(state: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in state.items():
        if hasattr(value, "local_shards"):
            shards = value.local_shards()
            value = shards[0].tensor if shards else torch.empty(0)
        out[key] = (type(value).__name__, value.detach().clone().cpu())
    return out


def _direct(rank: int, world_size: int) -> dict[str, Any]:
    from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    from torch.distributed.tensor.debug import CommDebugMode

    from compat.fsdp2 import FSDP1Api, fully_shard_like_fsdp1
    from compat.fsdp2.differences import BridgeDifferenceWarning
    from tests import bridge_ports, fsdp2_aware_code, fsdp2_converted_code
    from tests.portcheck_ports import Block, Net, _bf16_fsdp1

    out: dict[str, Any] = {}
    policy = ModuleWrapPolicy({Block})
    fsdp1_class = dict(vars(FullyShardedDataParallel))
    torch.manual_seed(0)
    cpu = torch.device("cpu")
    fsdp1 = FullyShardedDataParallel(Net(), auto_wrap_policy=policy, device_id=cpu)
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridged = fully_shard_like_fsdp1(Net(), auto_wrap_policy=policy)
    out["warned"] = [str(w.message)[:40] for w in caught if w.category is BridgeDifferenceWarning]
    out["class-untouched"] = all(
        vars(FullyShardedDataParallel).get(k) is v for k, v in fsdp1_class.items()
    ) and set(vars(FullyShardedDataParallel)) == set(fsdp1_class)
    # One identity: FSDP1 code gets FSDP1's answers, FSDP2-aware code FSDP2's.
    out["fsdp1-code"] = _plain(bridged.state_dict())
    out["fsdp1-reference"] = _plain(fsdp1.state_dict())
    out["aware"] = {type(v).__name__ for v in fsdp2_aware_code.save(bridged).values()}
    out["converted"] = _plain(fsdp2_converted_code.save(bridged))
    out["parent"] = _plain(Holder(bridged).state_dict())
    out["parent-reference"] = _plain(Holder(fsdp1).state_dict())
    out["has-module"] = hasattr(bridged, "module")
    unwrapped = bridged
    for _ in range(3):  # a recursive unwrap ends at once
        unwrapped = getattr(unwrapped, "module", unwrapped)
    out["unwrapped-is-model"] = unwrapped is bridged
    # LOCAL_STATE_DICT from the shards each rank holds: no gather, as FSDP1.
    with FullyShardedDataParallel.state_dict_type(fsdp1, StateDictType.LOCAL_STATE_DICT):
        with CommDebugMode() as comm:
            out["local-reference"] = _plain(fsdp1.state_dict())
        out["local-reference-comms"] = {str(k): v for k, v in comm.get_comm_counts().items()}
        written = fsdp1.state_dict()
    with FSDP1Api.state_dict_type(bridged, StateDictType.LOCAL_STATE_DICT):
        with CommDebugMode() as comm:
            out["local"] = _plain(bridged.state_dict())
        out["local-comms"] = {str(k): v for k, v in comm.get_comm_counts().items()}
        torch.manual_seed(5)
        other = fully_shard_like_fsdp1(Net(), auto_wrap_policy=policy, use_orig_params=True)
        with FSDP1Api.state_dict_type(other, StateDictType.LOCAL_STATE_DICT):
            with CommDebugMode() as comm:
                other.load_state_dict(written)
        out["load-comms"] = {str(k): v for k, v in comm.get_comm_counts().items()}
    out["loaded"] = _plain(other.state_dict())
    # The same of FSDP1's manual nesting, with flat parameters aligned (use_orig_params).
    for side, api in (("fsdp1", FullyShardedDataParallel), ("bridge", FSDP1Api)):
        torch.manual_seed(0)
        model, _ = bridge_ports._nested(side, use_orig_params=True)
        with api.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
            out[f"nested-local-{side}"] = _plain(model.state_dict())
    # An auto_wrap_policy around units wrapped by hand: FSDP1 refuses, so does the bridge.
    model = Net()
    model.layers[0] = fully_shard_like_fsdp1(model.layers[0], use_orig_params=True)
    try:
        fully_shard_like_fsdp1(model, auto_wrap_policy=policy, use_orig_params=True)
    except ValueError as error:
        out["policy-around-units"] = str(error)
    # bf16 with no_sync: said once, at the first no_sync.
    mixed = fully_shard_like_fsdp1(
        Net(), auto_wrap_policy=policy, mixed_precision=_bf16_fsdp1(), use_orig_params=True
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with mixed.no_sync():
                pass
    out["no-sync-warned"] = [str(w.message)[:60] for w in caught]
    # A parent loads a full state dict into it, as into FSDP1's model.
    changed = {k: v + 0.5 for k, v in Holder(fsdp1).state_dict().items()}
    for side in (fsdp1, bridged):
        Holder(side).load_state_dict(changed)
    out["parent-loaded"] = _plain(Holder(bridged).state_dict())
    out["parent-loaded-reference"] = _plain(Holder(fsdp1).state_dict())
    return out


@pytest.fixture(scope="module")
def direct() -> list[dict[str, Any]]:
    return distributed.run(_direct, world_size=2, timeout=300)


def _equal(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert mine.keys() == theirs.keys()
    for key, (kind, value) in theirs.items():
        assert mine[key][0] == kind, key
        torch.testing.assert_close(mine[key][1], value, msg=key)


@pytest.mark.distributed
def test_fsdp1_code_gets_fsdp1s_state_dict_and_fsdp2_aware_code_fsdp2s(direct):
    for result in direct:
        _equal(result["fsdp1-code"], result["fsdp1-reference"])
        _equal(result["converted"], result["fsdp1-reference"])
        assert result["aware"] == {"DTensor"}


@pytest.mark.distributed
def test_a_parent_modules_state_dict_and_its_load_are_fsdp1s(direct):
    for result in direct:
        _equal(result["parent"], result["parent-reference"])
        _equal(result["parent-loaded"], result["parent-loaded-reference"])
        assert all(key.startswith("net.") for key in result["parent"])


@pytest.mark.distributed
def test_a_bridged_model_has_no_module_to_unwrap_forever(direct):
    for result in direct:
        assert result["has-module"] is False and result["unwrapped-is-model"]


@pytest.mark.distributed
def test_nothing_of_torchs_fsdp1_class_is_patched(direct):
    assert all(result["class-untouched"] for result in direct)


@pytest.mark.distributed
def test_local_state_dict_gathers_nothing_and_is_fsdp1s(direct):
    # FSDP1's own ShardedTensors gather their metadata (``allgather_`` of objects, as
    # ``init_from_local_shards`` does); no parameter is gathered (``all_gather_into_tensor``,
    # what ``full_tensor()`` does): each rank's rows go where FSDP1 keeps them.
    for result in direct:
        _equal(result["local"], result["local-reference"])
        reference = result["local-reference-comms"]
        assert result["local-comms"].get("c10d.allgather_") == reference.get("c10d.allgather_")
        for comms in (result["local-comms"], result["load-comms"]):
            assert not [op for op in comms if "all_gather_into_tensor" in op], comms
            assert [op for op in comms if "alltoall" in op], comms
        assert "c10d.allgather_" not in result["load-comms"]
        _equal(result["loaded"], result["fsdp1-reference"])
        _equal(result["nested-local-bridge"], result["nested-local-fsdp1"])


@pytest.mark.distributed
def test_what_differs_from_fsdp1_is_warned(direct):
    for result in direct:
        assert result["warned"] == ["use_orig_params=False: FSDP1 gives the o"]
        assert len(result["no-sync-warned"]) == 1
        assert result["no-sync-warned"][0].startswith("no_sync() with mixed precision")


@pytest.mark.distributed
def test_a_policy_around_units_wrapped_by_hand_is_refused_as_fsdp1_does(direct):
    for result in direct:
        assert "FSDP1 refuses auto wrapping" in result["policy-around-units"]


def _namespace(*names: str) -> dict[str, Any]:
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel, fully_shard

    import compat.fsdp2
    from tests import fsdp2_versions

    known = {
        "FSDP": FullyShardedDataParallel,
        "FSDPModule": FSDPModule,
        "fully_shard": fully_shard,
        "fsdp_version": fsdp2_versions.fsdp_version,
        "bridge": compat.fsdp2.fully_shard_like_fsdp1,
        "FSDP1Api": compat.fsdp2.FSDP1Api,
    }
    return {"__name__": "user_code", **{name: known[name] for name in names}}


@pytest.mark.parametrize(
    ("names", "both"),
    [
        (("FSDP", "FSDPModule"), True),
        (("FSDP", "fully_shard"), True),
        (("FSDP", "fsdp_version"), True),  # FSDP2 known through a helper it imports
        (("FSDPModule",), False),  # FSDP2 only, as the files converted beside a bridge
        (("FSDP",), False),  # FSDP1 code
        (("FSDP", "FSDPModule", "bridge"), False),  # the bridged program itself
        (("FSDP", "FSDPModule", "FSDP1Api"), False),
        ((), False),
    ],
)
def test_which_code_gets_fsdp2s_answers(names, both):
    from compat.fsdp2.identity import knows_both

    assert knows_both(_namespace(*names)) is both
