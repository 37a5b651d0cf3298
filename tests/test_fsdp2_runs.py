"""FSDP401 proven by runs: FSDP1 code and its FSDP2 rewrite, side by side on real ranks.

Two parts, each one spawn of 2 gloo ranks (NCCL where GPUs are):

- unit by unit: for each policy form the rewrite reads, the modules the rewritten code
  shards are exactly FSDP1's units and those of ``compat.fsdp2.fully_shard_by_policy``;
- training files of our own writing (``tests/fixtures/fsdp2/``) and their migrated
  rewrites (plain FSDP2 code; those plain code cannot express, on the bridge asked for
  with ``--fsdp2-bridge``): no FSDP1 unit left, the same number of units, the same loss
  at every step on every rank, the same full state dict, and the FSDP1 file's trained
  weights load into the FSDP2 model.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from codemods.engine.run import run
from codemods.settings import Settings
from compat.features import current
from tests import distributed

if not current().fsdp2_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP2 only on CUDA", allow_module_level=True)

import torch.nn as nn  # noqa: E402

from tests.models import Block, Head  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "fsdp2"
SCRIPTS = (
    "transformer_partial_shard_grad_op",
    "module_wrap_policy_mixed_precision",
    "nested_policy_classes",
    "clip_and_full_state_dict",
    "unit_checks_isinstance",
    "gradient_accumulation_no_sync",
    "optimizer_state_resume",
    "precision_chosen_by_flag",
    "clip_grad_norm_method",
    "trainer_class_checkpoints",
    "hybrid_mesh_meta_init",
)
#: The scripts plain FSDP2 code cannot express: migrated with ``--fsdp2-bridge``.
ON_THE_BRIDGE = frozenset(
    {"clip_grad_norm_method", "trainer_class_checkpoints", "hybrid_mesh_meta_init"}
)
STEPS = 4
SETTINGS = Settings(fix=True, unsafe_fixes=True, select=("FSDP4",))
BRIDGE = SETTINGS.replace(fsdp2_bridge=True)


class Stage(nn.Module):
    """Blocks behind a norm: a policy class with policy classes inside."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.blocks = nn.Sequential(Block(width), Block(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.norm(x))


class Staged(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.stages = nn.ModuleList([Stage(width), Stage(width)])
        self.head = Head(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for stage in self.stages:
            x = stage(x)
        return self.head(x)


#: Policy forms the rewrite reads: (source of the policy, the same policy as an object).
_HEAD = (
    "import functools\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy, transformer_auto_wrap_policy\n"
    "from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy, size_based_auto_wrap_policy\n"
    "from tests.test_fsdp2_runs import Stage\n"
    "from tests.models import Block, Head\n"
)
FORMS = {
    "module-wrap-policy": ("ModuleWrapPolicy({Block, Head})", None),
    "module-wrap-policy-list": ("ModuleWrapPolicy([Block])", None),
    "transformer-partial": (
        "functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})",
        None,
    ),
    "nested-classes": ("ModuleWrapPolicy({Stage, Block})", None),
    "bound-once": ("POLICY", "POLICY = ModuleWrapPolicy((Stage, Head))\n"),
    "helper": (
        "wrap_policy()",
        "def wrap_policy():\n    classes = {Stage, Block}\n    return ModuleWrapPolicy(classes)\n",
    ),
    "no-policy": ("None", None),
    "computed-class": ("ModuleWrapPolicy({LAYER})", "LAYER = type(Stage())\n"),
    # Decided at run time by FSDP1's rules (the rewrite's shard_like_fsdp1).
    "size-based": ("functools.partial(size_based_auto_wrap_policy, min_num_params=500)", None),
    "lambda-policy": (
        "functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: isinstance(m, Stage))",
        None,
    ),
    "callable": (
        "lambda module, recurse, nonwrapped_numel: recurse or nonwrapped_numel > 1000",
        None,
    ),
    "config-read": (
        "wrap_policy(['Block', 'Head'])",
        "def wrap_policy(names):\n    if not names:\n        return None\n"
        "    return ModuleWrapPolicy({c for c in (Block, Head, Stage) if c.__name__ in names})\n",
    ),
}


def _wrapping(policy: str, binding: str | None) -> str:
    return (
        _HEAD
        + (binding or "")
        + "\n\ndef shard(model, device):\n"
        + f"    return FSDP(model, auto_wrap_policy={policy}, device_id=device)\n"
    )


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - our own code
    return module


def migrated(source: str, settings: Settings = SETTINGS) -> str:
    """``source`` after ``fsdp-migrate --extend-select FSDP4 --unsafe-fixes``."""
    outcome = run(source.encode(), settings)
    assert outcome.new_source is not None, [f.message for f in outcome.findings]
    assert all(f.fixed for f in outcome.findings), outcome.findings
    return outcome.new_source.decode()


def _fsdp1_units(model: nn.Module) -> list[str]:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from compat.checkpointing import clean_name

    return sorted(
        clean_name(name)
        for name, module in model.named_modules()
        if isinstance(module, FullyShardedDataParallel)
    )


def _fsdp2_units(model: nn.Module) -> list[str]:
    from compat.fsdp2 import fsdp2_unit_names

    return sorted(fsdp2_unit_names(model))


def _units_by_form(rank: int, world_size: int, sources: dict) -> dict:
    from compat.fsdp2 import fully_shard_by_policy

    device = distributed.device_for(rank)
    results = {}
    for form, (old, new) in sources.items():
        fsdp1 = _module(old, f"fsdp1_{form.replace('-', '_')}")
        fsdp2 = _module(new, f"fsdp2_{form.replace('-', '_')}")
        runtime_policy = getattr(fsdp1, "POLICY", None)
        if runtime_policy is None and FORMS[form][0] != "None":
            runtime_policy = eval(FORMS[form][0], vars(fsdp1))  # noqa: S307 - our own source
        results[form] = {
            "fsdp1": _fsdp1_units(fsdp1.shard(Staged(), device)),
            "rewrite": _fsdp2_units(fsdp2.shard(Staged(), device)),
            "compat": _fsdp2_units(fully_shard_by_policy(Staged(), runtime_policy)),
        }
    return results


@pytest.fixture(scope="module")
def units() -> list[dict]:
    sources = {form: _wrapping(*spec) for form, spec in FORMS.items()}
    pairs = {form: (source, migrated(source)) for form, source in sources.items()}
    return distributed.run(
        _units_by_form, pairs, backend=distributed.backend_for_tests(), timeout=300
    )


@pytest.mark.distributed
@pytest.mark.parametrize("form", list(FORMS))
def test_the_rewrite_shards_exactly_fsdp1s_units(units, form):
    for rank_result in units:
        result = rank_result[form]
        assert result["rewrite"] == result["fsdp1"] == result["compat"]
        assert result["fsdp1"][0] == ""  # the root
        assert len(result["fsdp1"]) > 1 or form == "no-policy"


def _plain(state: dict) -> dict:
    return {k: v.detach().float().cpu().clone() for k, v in state.items()}


def _full_state(model: nn.Module) -> dict:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    # CPU ranks: FSDP1 cannot offload a full state dict there (offload_to_cpu crashes).
    options = StateDictOptions(full_state_dict=True, cpu_offload=torch.cuda.is_available())
    return {
        k: v.detach().float().cpu().clone()
        for k, v in get_model_state_dict(model, options=options).items()
    }


def _load_full(model: nn.Module, state: dict) -> None:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    device = distributed.device_for(torch.distributed.get_rank())
    state = {k: v.to(device) for k, v in state.items()}
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True))


def _side_by_side(rank: int, world_size: int, scripts: dict) -> dict:
    from torch.distributed.fsdp import FullyShardedDataParallel

    results = {}
    for name, (old, new) in scripts.items():
        fsdp1 = _module(old, f"fsdp1_{name}")
        fsdp2 = _module(new, f"fsdp2_{name}")
        if hasattr(fsdp1, "main"):  # wraps, trains and saves in one function
            model1, losses1, saved1 = fsdp1.main(rank, STEPS)
            model2, losses2, saved2 = fsdp2.main(rank, STEPS)
            _same_state(_plain(saved1), _plain(saved2))
            fresh = fsdp2.main(rank, 0)[0]
        else:
            model1, model2 = fsdp1.build(), fsdp2.build()
            losses1, losses2 = fsdp1.train(model1, rank, STEPS), fsdp2.train(model2, rank, STEPS)
            fresh = fsdp2.build()
        result = {
            "fsdp1_units": _fsdp1_units(model1),
            "fsdp2_units": _fsdp2_units(model2),
            "fsdp1_left": any(isinstance(m, FullyShardedDataParallel) for m in model2.modules()),
            "fsdp1_losses": losses1,
            "fsdp2_losses": losses2,
        }
        state1, state2 = _full_state(model1), _full_state(model2)
        _load_full(fresh, state1)  # an FSDP2 model loading the FSDP1 run's checkpoint
        result["loaded"] = _full_state(fresh)
        result["fsdp1_state"], result["fsdp2_state"] = state1, state2
        results[name] = result
    return results


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    scripts = {}
    for name in SCRIPTS:
        old = (FIXTURES / f"{name}.py").read_text()
        scripts[name] = (old, migrated(old, BRIDGE if name in ON_THE_BRIDGE else SETTINGS))
    return distributed.run(
        _side_by_side, scripts, backend=distributed.backend_for_tests(), timeout=400
    )


def _same_state(one: dict, other: dict) -> None:
    assert one.keys() == other.keys() and one
    for key in one:
        torch.testing.assert_close(other[key], one[key], atol=1e-5, rtol=0, msg=key)


@pytest.mark.distributed
@pytest.mark.parametrize("script", SCRIPTS)
def test_the_rewritten_script_trains_like_the_fsdp1_script(runs, script):
    for rank_result in runs:
        result = rank_result[script]
        assert not result["fsdp1_left"]
        assert result["fsdp2_units"] == result["fsdp1_units"] and len(result["fsdp1_units"]) > 1
        assert result["fsdp2_losses"] == pytest.approx(result["fsdp1_losses"], abs=1e-5)
        _same_state(result["fsdp1_state"], result["fsdp2_state"])
        # FSDP1's trained weights load into the FSDP2 model as they are.
        _same_state(result["fsdp1_state"], result["loaded"])


def test_fsdp1s_methods_where_the_model_is_not_followed_put_the_file_on_the_bridge():
    """The bridge's model keeps them; without the bridge (the default), the file stays FSDP1."""
    source = (FIXTURES / "clip_grad_norm_method.py").read_bytes()
    outcome = run(source, BRIDGE)
    (finding,) = outcome.findings
    assert finding.fixed and "`model.clip_grad_norm_` at line 25" in finding.message
    assert b"= fully_shard_like_fsdp1(" in outcome.new_source
    assert b"model.clip_grad_norm_(1.0)" in outcome.new_source
    outcome = run(source, SETTINGS)
    assert outcome.new_source is None
    (finding,) = outcome.findings
    assert finding.withheld == (
        "fix withheld: `model.clip_grad_norm_` at line 25: exists only on FSDP1 models "
        "(on FSDP2: `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`)"
    )


def test_fsdp1s_class_calls_go_to_compats_fsdp1_api():
    source = (FIXTURES / "trainer_class_checkpoints.py").read_bytes()
    new = run(source, BRIDGE).new_source.decode()
    assert "FSDP." not in new and "import FullyShardedDataParallel" not in new
    assert new.count("FSDP1Api.state_dict_type(") == 2
    assert "FSDP1Api.optim_state_dict_to_load(" in new


def test_ignored_modules_keep_the_file_fsdp1_with_the_recipe():
    """Plain code only (no bridge): the call stays FSDP1 and its finding has the recipe."""
    source = (FIXTURES / "ignored_modules.py").read_bytes()
    outcome = run(source, SETTINGS)
    assert outcome.new_source is None
    (finding,) = outcome.findings
    assert not finding.fixed and "foreach=False" in finding.message


def test_ignored_modules_go_to_the_bridge_with_the_recipe():
    """With the bridge, the call keeps its arguments on compat's FSDP1 bridge."""
    source = (FIXTURES / "ignored_modules.py").read_bytes()
    outcome = run(source, BRIDGE)
    assert b"fully_shard_like_fsdp1(" in outcome.new_source
    (finding,) = outcome.findings
    assert finding.fixed and "foreach=False" in finding.message


def _foreach_steps(rank: int, world_size: int) -> dict:
    """One SGD step with ``foreach=True`` beside ignored parameters, FSDP1 and FSDP2."""
    from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard

    from tests.models import batch, local_device, make_model

    outcomes = {}
    for engine in ("fsdp1", "fsdp2"):
        model = make_model().to(local_device())
        if engine == "fsdp1":
            model = FullyShardedDataParallel(
                model, ignored_modules=[model.head], device_id=local_device()
            )
        else:
            fully_shard(model, ignored_params=set(model.head.parameters()))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
        x, y = batch(rank, 0, local_device())
        nn.functional.mse_loss(model(x), y).backward()
        try:
            optimizer.step()
            outcomes[engine] = "stepped"
        except RuntimeError as error:
            outcomes[engine] = str(error)
    return outcomes


@pytest.mark.distributed
def test_why_ignored_modules_stay_fsdp1_a_foreach_step_fails_on_the_mix():
    """FSDP2's ignored parameters are plain tensors beside DTensors: a foreach step fails.

    FSDP1's flat and ignored parameters are all plain tensors, so the same optimizer
    steps. ``foreach`` is the default on CUDA: this is why FSDP401 reports
    ``ignored_modules`` with a recipe instead of rewriting it (if a torch release makes
    the mix work, this fails and the rule can be revisited).
    """
    import inspect

    import torch.distributed.fsdp as fsdp

    shard = getattr(fsdp, "fully_shard", None)
    if shard is None or "ignored_params" not in inspect.signature(shard).parameters:
        pytest.skip("this torch's fully_shard takes no ignored_params (torch < 2.7)")
    runs = distributed.run(_foreach_steps, backend=distributed.backend_for_tests())
    for outcomes in runs:
        assert outcomes["fsdp1"] == "stepped"
        assert "mixed torch.Tensor and DTensor" in outcomes["fsdp2"]


#: bf16 builders whose blocks get fp32 positions from their parent (FSDP1 casts the
#: inputs at the root only), in the call and bound by a flag: ``file:builder``.
PRECISION = FIXTURES / "precision_fp32_positions.py"
PRECISION_BUILDERS = ("build", "build_by_flag")


@pytest.fixture(scope="module")
def precision_reports(tmp_path_factory) -> dict:
    """The port checker on each FSDP1 builder and its rewrite, one spawn of 2 ranks."""
    from compat.portcheck import PortCase, check_ports

    new = migrated(PRECISION.read_text())
    port = tmp_path_factory.mktemp("precision") / "ported.py"
    port.write_text(new)
    cases = {
        name: PortCase(f"{PRECISION}:{name}", f"{port}:{name}", "tests.portcheck_ports:batch")
        for name in PRECISION_BUILDERS
    }
    return {"source": new, **check_ports(cases, world_size=2, timeout=300)}


def test_the_units_cast_no_inputs_and_the_root_does():
    new = migrated(PRECISION.read_text())
    assert new.count("cast_forward_inputs=False") == 2  # a units' policy per call
    assert new.count("mp_policy=unit_mp_policy)") == 2
    assert "model = fully_shard(model, mp_policy=mp_policy)" in new
    assert "model = fully_shard(model, mp_policy=precision)" in new
    # What still differs is named: accumulation without sync; nothing else.
    outcome = run(PRECISION.read_bytes(), SETTINGS)
    for finding in outcome.findings:
        assert "kept in `reduce_dtype` where FSDP1 kept them in `param_dtype`" in finding.message


@pytest.mark.distributed
@pytest.mark.parametrize("builder", PRECISION_BUILDERS)
def test_bf16_with_fp32_inputs_to_the_units_trains_as_fsdp1(precision_reports, builder):
    """The rewrite's root-only casting: every number equal to FSDP1's (port checker)."""
    report = precision_reports[builder]
    report.assert_passed()
    # The blocks get the fp32 positions on both sides (bf16 activations beside them).
    blocks = [row for row in report.units if row.name.startswith("layers.")]
    assert len(blocks) == 2
    for row in blocks:
        assert row.inputs_after == row.inputs_before and "float32" in row.inputs_before
    for row in report.step_rows:
        assert row.loss_after == row.loss_before  # bit-equal
    assert [f.cause for f in report.findings] == ["state-dict-kind"]


META_RECIPE = FIXTURES / "meta_units_recipe.py"


@pytest.mark.distributed
def test_the_meta_recipe_of_the_finding_builds_fsdp1s_weights():
    """The finding's materialisation, written by hand, equals FSDP1's; the other form not.

    FSDP1 materialises each meta unit as it wraps it; the port does the same before each
    ``fully_shard``. Sharding on meta and initialising afterwards draws other values.
    """
    from compat.portcheck import PortCase, check_ports

    def case(after: str) -> PortCase:
        batch = "tests.portcheck_ports:batch"
        return PortCase(f"{META_RECIPE}:fsdp1", f"{META_RECIPE}:{after}", batch)

    cases = {"recipe": case("fsdp2"), "after": case("fsdp2_materialised_after_sharding")}
    reports = check_ports(cases, world_size=2, timeout=300)
    reports["recipe"].assert_passed()
    assert not reports["after"].passed
    assert reports["after"].units[0].initial > 0  # other initial weights
