"""FSDP401's plain forms of FSDP1's run-time decisions and steps, as text.

The runs that prove them equal to FSDP1 are in tests/test_fsdp2_real_scripts.py and
tests/test_fsdp2_runs.py; these pin the code written, and where it is not written.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from codemods.engine.run import run
from codemods.settings import Settings

HEAD = (
    "import contextlib\n"
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from model import Net\n\n"
)
SETTINGS = Settings(fix=True, unsafe_fixes=True, select=("FSDP4",))


def _migrate(body: str) -> tuple[str | None, list]:
    outcome = run((HEAD + textwrap.dedent(body)).encode(), SETTINGS)
    new = None if outcome.new_source is None else outcome.new_source.decode()
    return new, outcome.findings


def test_two_calls_share_one_copy_of_each_helper():
    new, findings = _migrate(
        "def a(m, p):\n    return FSDP(m, auto_wrap_policy=p, sync_module_states=True)\n\n\n"
        "def b(m, p):\n    return FSDP(m, auto_wrap_policy=p, sync_module_states=True)\n"
    )
    assert all(f.fixed for f in findings) and len(findings) == 2
    for helper in ("shard_like_fsdp1", "fsdp1_unit_modules", "broadcast_like_fsdp1"):
        assert new.count(f"def {helper}(") == 1
    assert new.index("def shard_like_fsdp1(") < new.index("def a(")


def test_a_group_becomes_its_mesh_and_the_broadcast_goes_over_it():
    new, (finding,) = _migrate(
        "rank = 0\nmodel = FSDP(model, process_group=pg, sync_module_states=flag, device_id=rank)\n"
    )
    assert finding.fixed and "`process_group` becomes a 1-D mesh" in finding.message
    assert "mesh = DeviceMesh.from_group(pg, torch.device(rank).type)\n" in new
    assert "    if flag:\n        broadcast_like_fsdp1(unit, rank, mesh)\n" in new
    assert new.endswith("prepare_unit(model)\nmodel = fully_shard(model, mesh=mesh)\n")


def test_a_nested_prepare_function_has_one_clean_blank_line_around_it():
    """PEP 8 (pycodestyle E306) inside a function, and no trailing whitespace."""
    new, (finding,) = _migrate(
        "def setup(model):\n"
        "    model = model.cuda()\n"
        "    model = FSDP(model, sync_module_states=True, device_id=torch.cuda.current_device())\n"
        "    return model\n"
    )
    assert finding.fixed
    assert (
        "    unit_device = torch.cuda.current_device()\n\n"
        "    def prepare_unit(unit):  # FSDP1's steps before it wrapped a unit\n"
        "        broadcast_like_fsdp1(unit, unit_device)\n\n"
        "    prepare_unit(model)\n"
    ) in new
    assert not [line for line in new.splitlines() if line != line.rstrip()]


def test_sync_module_states_with_a_device_mesh_broadcasts_over_each_dimension():
    """FSDP1's hybrid sync goes across the replicas, then within each shard group."""
    new, (finding,) = _migrate(
        "m = mesh_of(config)\nmodel = FSDP(model, device_mesh=m, sync_module_states=True)\n"
    )
    assert finding.fixed and "    broadcast_like_fsdp1(unit, None, m)\n" in new
    assert "[mesh.get_group(dim) for dim in range(mesh.ndim)]" in new


@pytest.mark.parametrize(
    ("test", "written"),
    [
        ("not last", "model.set_requires_gradient_sync(last)"),
        ("accumulating", "model.set_requires_gradient_sync(not accumulating)"),
        ("a and b", "model.set_requires_gradient_sync(not (a and b))"),
    ],
)
def test_a_conditional_no_sync_sets_the_switch_from_its_test(test, written):
    new, (finding,) = _migrate(
        "model = FSDP(model)\n"
        f"with model.no_sync() if {test} else contextlib.nullcontext():\n"
        "    loss.backward()\n"
    )
    assert finding.fixed and f"{written}\ntry:\n    loss.backward()\n" in new
    assert "finally:\n    model.set_requires_gradient_sync(True)\n" in new
    assert "import contextlib" not in new  # used by the null context alone


def test_the_model_a_setup_function_returns_is_followed():
    new, (finding,) = _migrate(
        "def setup(model):\n    model = FSDP(model)\n    return model\n\n\n"
        "def main(net):\n    model = setup(net)\n    with model.no_sync():\n"
        "        model(x).sum().backward()\n"
    )
    assert finding.fixed and "    model.set_requires_gradient_sync(False)\n" in new


def test_a_use_before_the_setup_function_keeps_the_file():
    """Visited before the call is rewritten: it keeps the file FSDP1, named."""
    new, (finding,) = _migrate(
        "def main(net):\n    model = setup(net)\n    model.clip_grad_norm_(1.0)\n\n\n"
        "def setup(model):\n    return FSDP(model)\n"
    )
    assert new is None and "`model.clip_grad_norm_` at line 8" in finding.withheld


def test_units_wrapped_by_hand_cast_no_inputs_the_root_does():
    new, findings = _migrate(
        "mp = torch.distributed.fsdp.MixedPrecision(param_dtype=torch.bfloat16)\n"
        "for i, layer in enumerate(model.layers):\n"
        "    model.layers[i] = FSDP(layer, mixed_precision=mp)\n"
        "model = FSDP(model, mixed_precision=mp)\n"
    )
    assert all(f.fixed for f in findings)
    assert "a unit wrapped by hand inside `model` (wrapped at line 9)" in findings[0].message
    assert "param_dtype=torch.bfloat16, cast_forward_inputs=False)" in new
    assert "mp = " not in new and "MixedPrecision(" not in new  # shared by the calls alone
    assert "model = fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=" in new


@pytest.mark.parametrize(
    ("body", "inner"),
    [
        # two models kept on one object: two roots, each casting its inputs
        (
            "self.actor = FSDP(self.actor, mixed_precision=mp)\n"
            "self.critic = FSDP(self.critic, mixed_precision=mp)\n",
            None,
        ),
        # a unit stored into the model wrapped next: that model is its root
        (
            "self.model.encoder = FSDP(self.model.encoder, mixed_precision=mp)\n"
            "self.model = FSDP(self.model, mixed_precision=mp)\n",
            "self.model",
        ),
        (
            "self.model.layers[0] = FSDP(self.model.layers[0], mixed_precision=mp)\n"
            "self.model = FSDP(self.model, mixed_precision=mp)\n",
            "self.model",
        ),
    ],
    ids=["siblings", "attribute-of-the-root", "item-of-the-root"],
)
def test_a_model_on_an_object_is_a_unit_only_of_what_it_hangs_on(body, inner):
    new, findings = _migrate(
        "class Trainer:\n    def shard(self):\n"
        "        mp = torch.distributed.fsdp.MixedPrecision(param_dtype=torch.bfloat16)\n"
        + textwrap.indent(body, "        ")
    )
    assert all(f.fixed for f in findings)
    said = [f"a unit wrapped by hand inside `{inner}`" in f.message for f in findings]
    assert said == [inner is not None, False]
    assert new.count("cast_forward_inputs=False") == (inner is not None)


TRAINER = (
    "class Trainer:\n"
    "    def __init__(self, model):\n        self.model = FSDP(model)\n\n"
    "    def step(self, loss):\n        with self.model.no_sync():\n            loss.backward()\n"
    "        self.model.clip_grad_norm_(1.0)\n"
)


def test_a_trainers_model_on_self_is_followed_into_its_other_methods():
    new, (finding,) = _migrate(TRAINER)
    assert finding.fixed and "        self.model = fully_shard(model)\n" in new
    assert "        self.model.set_requires_gradient_sync(False)\n" in new
    assert "torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)" in new


@pytest.mark.parametrize(
    "change",
    [
        # a method before the wrapping one: visited before the call is rewritten
        (
            "class Trainer:\n",
            "class Trainer:\n    def early(self):\n        self.model.no_sync()\n\n",
        ),
        # assigned elsewhere too: not certainly the wrapped model
        ("        self.model.clip", "        self.model = other\n        self.model.clip"),
    ],
    ids=["used-in-an-earlier-method", "assigned-twice"],
)
def test_a_trainers_model_not_certainly_wrapped_keeps_the_file(change):
    new, (finding,) = _migrate(TRAINER.replace(*change))
    assert new is None and finding.withheld and "exists only on FSDP1 models" in finding.withheld


@pytest.mark.parametrize(
    ("member", "mesh"),
    [("SHARD_GRAD_OP", False), ("NO_SHARD", True), ("HYBRID_SHARD", True)],
)
def test_a_strategy_chosen_in_branches_gets_each_members_mesh(member, mesh):
    """Every strategy the file can pass: FSDP2's mesh for it where FSDP1 had its own ranks."""
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp import ShardingStrategy\n"
        "strategy = ShardingStrategy.FULL_SHARD\n"
        f"if small:\n    strategy = ShardingStrategy.{member}\n"
        "model = FSDP(model, sharding_strategy=strategy)\n"
    )
    assert finding.fixed, finding.message
    assert ("mesh=mesh_like_fsdp1(strategy, model)" in new) is mesh
    assert ("reshard_after_forward=reshards_like_fsdp1(strategy)" in new) is mesh


@pytest.mark.parametrize(
    "binding",
    [
        "policy = CustomPolicy(fn)\n",
        "policy = size_policy\nif flag:\n    policy = CustomPolicy(fn)\n",
    ],
)
def test_a_custom_policy_which_plain_code_cannot_call_stays_for_a_human(binding):
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp.wrap import CustomPolicy\n"
        + binding
        + "model = FSDP(model, auto_wrap_policy=policy)\n"
    )
    assert new is None and "the policy may be a `CustomPolicy`" in finding.message


def test_a_hybrid_strategy_read_at_run_time_passes_a_mesh_that_may_be_none():
    """llama-recipes' shape: FSDP1 builds node-local groups where the mesh is None."""
    new, (finding,) = _migrate(
        "def shard(model, cfg, hsdp_mesh):\n"
        "    return FSDP(model, sharding_strategy=cfg.sharding_strategy, device_mesh=hsdp_mesh)\n"
    )
    assert finding.fixed and "strategy = cfg.sharding_strategy\n" in new
    # the helper builds FSDP1's node-local groups where the mesh is None at run time
    assert "mesh=mesh_like_fsdp1(strategy, model, mesh=hsdp_mesh)" in new
    assert "rebuilt from its groups" in finding.message


@pytest.mark.parametrize(
    "policy",
    [
        "ModuleWrapPolicy(block_classes)",  # dolomite's shape: classes computed first
        "functools.partial(transformer_auto_wrap_policy, transformer_layer_cls=layers())",
    ],
)
def test_a_class_policy_whose_classes_come_at_run_time_is_asked_at_run_time(policy):
    """FSDP1 asks the policy object; the rewrite asks the same object, as FSDP1 does."""
    new, (finding,) = _migrate(
        "import functools\n"
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy, transformer_auto_wrap_policy\n"
        "def shard(model, block_classes):\n"
        f"    return FSDP(model, auto_wrap_policy={policy})\n"
    )
    assert finding.fixed, finding.message
    # laid out over lines where long: compared without layout
    flat = re.sub(r",(?=\))", "", re.sub(r"\s", "", new))
    assert re.sub(r"\s", "", f"shard_like_fsdp1(model,{policy},model,None)") in flat
    assert "the policy picks the units at run time" in finding.message


@pytest.mark.parametrize("orig", ["", ", use_orig_params=True"])
def test_every_conversion_names_dtensor_parameters_and_gradients(orig):
    """FSDP1 gave plain tensors (flat, or views of the shard): a norm summed by hand breaks."""
    new, (finding,) = _migrate(
        f"model = FSDP(model{orig})\n"
        "total = torch.zeros(())\n"
        "for p in model.parameters():\n"
        "    total += p.grad.norm() ** 2\n"
    )
    assert finding.fixed
    assert "parameters and their gradients are DTensors where FSDP1 gave plain" in finding.message
    assert ("gave it flat ones" in finding.message) is (orig == "")


@pytest.mark.parametrize(
    ("device", "kind"),
    [("", '"cuda"'), (", device_id=local_rank", "torch.device(local_rank).type")],
)
def test_a_process_group_becomes_a_mesh_of_the_named_device(device, kind):
    """Without ``device_id`` the mesh is CUDA's, and the finding says so; no import of
    torch is written for a mesh that does not name it (it withheld the fix before)."""
    new, (finding,) = _migrate(
        f"def shard(model, group, local_rank):\n"
        f"    return FSDP(model, process_group=group{device})\n"
    )
    assert finding.fixed, finding.withheld
    assert f"DeviceMesh.from_group(group, {kind})" in new
    assert ("on CUDA devices" in finding.message) is (device == "")
    assert "an optimizer's own `state_dict()` holds DTensors" in finding.message


def test_a_mesh_on_cuda_needs_no_import_of_torch():
    source = (
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "\n"
        "\n"
        "def shard(model, group):\n"
        "    return FSDP(model, process_group=group)\n"
    )
    outcome = run(source.encode(), SETTINGS)
    (finding,) = outcome.findings
    assert finding.fixed, finding.withheld
    assert b"import torch\n" not in outcome.new_source


def test_a_call_inside_another_lays_out_under_itself():
    """``torch.compile(\\n    FSDP(...))``: the arguments one level past the call's own line."""
    new, (finding,) = _migrate(
        "def wrap(model, strategy):\n"
        "    return torch.compile(\n"
        "        FSDP(\n"
        "            model,\n"
        "            sharding_strategy=strategy,\n"
        "        )\n"
        "    )\n"
    )
    assert finding.fixed, finding.withheld
    body = new[new.index("def wrap") :]
    assert "        fully_shard(\n            model,\n            reshard_after_forward=" in body
    assert "\n        )\n    )\n" in body
