"""FSDP401 in the codemod: the forms it rewrites, the ones it leaves, and selecting it.

The registry's cases (tests/test_rule_cases.py) hold the main forms; these are the ones
that need settings (a target torch, a config file) or look at a finding's message.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

HEAD = (
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n"
)


def _migrate(body: str, **settings) -> tuple[str | None, list]:
    # The plain form and its recipes: the bridge is off here (tests/test_fsdp2_bridge_form.py
    # covers a call that goes to compat's FSDP1 bridge instead).
    options = {
        "fix": True,
        "unsafe_fixes": True,
        "select": ("FSDP4",),
        "fsdp2_bridge": False,
        **settings,
    }
    outcome = run((HEAD + textwrap.dedent(body)).encode(), Settings(**options))
    new = outcome.new_source.decode() if outcome.new_source is not None else None
    return new, outcome.findings


@pytest.mark.parametrize(
    ("target", "home"),
    [
        ("2.4", "torch.distributed._composable.fsdp"),
        ("2.5", "torch.distributed._composable.fsdp"),
        ("2.6", "torch.distributed.fsdp"),
        (None, "torch.distributed.fsdp"),
    ],
)
def test_fully_shard_comes_from_where_the_target_torch_has_it(target, home):
    new, _ = _migrate(
        "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n",
        releases=Releases.parse(torch=target),
    )
    assert f"from {home} import fully_shard\n" in new
    assert "FullyShardedDataParallel" not in new and "ModuleWrapPolicy" not in new


def test_no_finding_before_torch_2_4():
    new, findings = _migrate("model = FSDP(model)\n", releases=Releases.parse(torch="2.3"))
    assert new is None and findings == []


def test_opt_in_and_unsafe():
    source = (HEAD + "model = FSDP(model)\n").encode()
    assert run(source, Settings(fix=True, unsafe_fixes=True)).findings == []
    safe_only = run(source, Settings(fix=True, select=("FSDP4",)))
    assert safe_only.new_source is None and not safe_only.findings[0].fixed


def test_no_policy_shards_the_root_only():
    new, _ = _migrate("model = FSDP(model, use_orig_params=True, limit_all_gathers=True)\n")
    assert new.startswith("from torch.distributed.fsdp import fully_shard\n")
    assert new.endswith("\n\nmodel = fully_shard(model)\n")


def test_a_call_that_builds_the_module_binds_it_first():
    new, _ = _migrate("model = FSDP(Net().to(device), auto_wrap_policy={Block})\n")
    assert new.endswith(
        "model = Net().to(device)\n"
        "for submodule in reversed(list(model.modules())):  # descendants before ancestors\n"
        "    if isinstance(submodule, Block) and submodule is not model:\n"
        "        fully_shard(submodule)\n"
        "model = fully_shard(model)\n"
    )


def test_a_wrapped_argument_is_sharded_before_its_statement():
    new, _ = _migrate(
        "model = Net()\noptimizer = make(FSDP(model, auto_wrap_policy=ModuleWrapPolicy([Block])))\n"
    )
    assert new.endswith(
        "for submodule in reversed(list(model.modules())):  # descendants before ancestors\n"
        "    if isinstance(submodule, Block) and submodule is not model:\n"
        "        fully_shard(submodule)\n"
        "optimizer = make(fully_shard(model))\n"
    )


def test_the_loop_variable_does_not_take_a_name_the_file_uses():
    new, _ = _migrate("submodule = 1\nmodel = FSDP(model, auto_wrap_policy={Block})\n")
    assert "for submodule_ in reversed(list(model.modules()))" in new


def test_tabs_are_kept():
    new, _ = _migrate("def f(model):\n\treturn FSDP(model, auto_wrap_policy={Block})\n")
    assert "\n\tfor submodule in" in new and "\n\t\tif isinstance" in new
    assert "\n\t\t\tfully_shard(submodule)\n\treturn fully_shard(model)\n" in new


def test_dropped_arguments_that_change_something_are_noted():
    new, findings = _migrate(
        """\
        from torch.distributed.fsdp import BackwardPrefetch, MixedPrecision
        model = FSDP(
            model,
            mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, buffer_dtype=torch.float32),
            backward_prefetch=BackwardPrefetch.BACKWARD_POST,
            forward_prefetch=True,
            device_id=local_rank,
        )
        """
    )
    (finding,) = findings
    assert finding.fixed
    for note in ("buffer_dtype", "set_modules_to_backward_prefetch", "set_modules_to_forward"):
        assert note in finding.message
    assert "`device_id` becomes the current device (`set_device_like_fsdp1(local_rank)`)" in (
        finding.message
    )
    assert "mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16)" in new
    assert "BackwardPrefetch" not in new and "MixedPrecision," not in new


@pytest.mark.parametrize(
    ("value", "noted"),
    [("False", True), ("config.rate_limit", True), ("True", False)],
)
def test_a_rate_limiter_fsdp1_may_not_have_run_is_named(value, noted):
    """FSDP2 has no switch for its rate limiter: only ``True`` means what FSDP2 does."""
    new, (finding,) = _migrate(
        f"model = FSDP(model, auto_wrap_policy={{Block}}, limit_all_gathers={value})\n"
    )
    assert finding.fixed and "limit_all_gathers" not in new
    assert (f"`limit_all_gathers={value}` dropped: FSDP2 always limits" in finding.message) is (
        noted
    )


@pytest.mark.parametrize(
    ("call", "why"),
    [
        ("FSDP(model, auto_wrap_policy={get_class()})", "not certainly a class"),
        ("FSDP(model, auto_wrap_policy={Block}, ignored_modules=[model.head])", "foreach=False"),
        ("FSDP(model, mixed_precision=precision())", "not a `MixedPrecision(...)` call"),
        ("FSDP(model, sharding_strategy='FULL_SHARD')", "not a `ShardingStrategy` member"),
        ("FSDP(model, **options)", "`**options`: not a dict built where the call is: keywords"),
        ("FSDP(model, *extra)", "`*extra`: not a dict built where the call is: keywords"),
        ("[FSDP(m) for m in models]", "does not split"),
    ],
)
def test_calls_left_for_a_human_say_why(call, why):
    new, findings = _migrate(f"model = {call}\n")
    assert new is None
    (finding,) = findings
    assert not finding.fixable and why in finding.message
    # How to check the hand port, and the opt-in bridge that would take the call.
    assert "python -m compat.portcheck" in finding.message
    assert "`--fsdp2-bridge`" in finding.message


def test_below_the_bridges_torch_the_finding_does_not_offer_it():
    target = {"releases": Releases.parse(torch="2.4..2.13")}
    _, (finding,) = _migrate("model = FSDP(model, **options)\n", **target)
    assert "python -m compat.portcheck" in finding.message
    assert "--fsdp2-bridge" not in finding.message


@pytest.mark.parametrize(
    "body",
    [
        "def shard(model):\n"
        "    layer_cls = type(model.layers[0])\n"
        "    return FSDP(model, auto_wrap_policy={layer_cls})\n",
        "def shard(model, layer_cls):\n    return FSDP(model, auto_wrap_policy={layer_cls})\n",
        "layer_cls = pick(config)\n\n\ndef shard(model):\n"
        "    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy([layer_cls]))\n",
    ],
    ids=["computed", "parameter", "module-level"],
)
def test_a_unit_class_bound_once_is_tested_as_it_is(body):
    """FSDP1 tests ``isinstance(module, (layer_cls,))``: the loop tests the same object."""
    new, (finding,) = _migrate(body)
    assert finding.fixed
    assert "        if isinstance(submodule, layer_cls) and submodule is not model:\n" in new


@pytest.mark.parametrize(
    "body",
    [
        "layer_cls = A\nif big:\n    layer_cls = B\n"
        "model = FSDP(model, auto_wrap_policy={layer_cls})\n",
        "for layer_cls in classes:\n    model = FSDP(model, auto_wrap_policy={layer_cls})\n",
        "with pick() as layer_cls:\n    model = FSDP(model, auto_wrap_policy={layer_cls})\n",
    ],
    ids=["rebound", "loop-target", "with-target"],
)
def test_a_unit_class_bound_otherwise_stays_manual(body):
    new, (finding,) = _migrate(body)
    assert new is None and "`layer_cls` in the policy is not certainly a class" in finding.message


def test_a_helpers_parameter_is_not_the_wrap_sites_name():
    """The helper's ``layer_cls`` is not the wrap site's: its policy decides at run time."""
    new, (finding,) = _migrate(
        "def policy(layer_cls):\n    return ModuleWrapPolicy({layer_cls})\n\n\n"
        "def shard(model, layer_cls):\n    return FSDP(model, auto_wrap_policy=policy(Block))\n"
    )
    assert finding.fixed and "shard_like_fsdp1(model, policy(Block), model, None)" in new


@pytest.mark.parametrize("policy", ["{Block}", "{layer_cls}"])
def test_an_inline_policy_the_default_rules_rewrite_too_converts(policy):
    """Both families in one run: FSDP103 rewrites the policy that FSDP401 then drops."""
    source = (
        "from functools import partial\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
        "from model import Block\n\n"
        "layer_cls = type(model.layers[0])\n"
        "model = FSDP(\n"
        "    model,\n"
        "    auto_wrap_policy=partial(\n"
        f"        transformer_auto_wrap_policy, transformer_layer_cls={policy}\n"
        "    ),\n"
        ")\n"
    )
    every_family = ("FSDP1", "FSDP2", "FSDP3", "FSDP4")
    settings = Settings(fix=True, unsafe_fixes=True, select=every_family)
    outcome = run(source.encode(), settings)
    assert all(f.fixed for f in outcome.findings), outcome.findings
    new = outcome.new_source.decode()
    assert new.startswith(
        "from torch.distributed.fsdp import fully_shard\nfrom model import Block\n"
    )
    assert "ModuleWrapPolicy" not in new and "partial" not in new


@pytest.mark.parametrize("target", ["2.6", "2.7", "2.13"])
def test_ignored_modules_stay_for_a_human_with_the_optimizer_caveat(target):
    # FSDP2 would leave the ignored parameters plain tensors beside DTensors, and an
    # optimizer over both fails in a foreach step (tests/test_fsdp2_runs.py shows it).
    new, (finding,) = _migrate(
        "model = FSDP(model, auto_wrap_policy={Block}, ignored_modules=[model.head])\n",
        releases=Releases.parse(torch=target),
    )
    assert new is None and not finding.fixed
    assert "ignored_params=" in finding.message and "foreach=False" in finding.message


@pytest.mark.parametrize(
    ("value", "keyword"),
    [
        ("True", "offload_policy=CPUOffloadPolicy()"),
        ("False", None),
        ("args.offload", "offload_policy=CPUOffloadPolicy() if args.offload else OffloadPolicy()"),
        ("offload", "offload_policy=CPUOffloadPolicy() if offload else OffloadPolicy()"),
    ],
)
def test_cpu_offload_by_literal_or_flag(value, keyword):
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp import CPUOffload\n"
        f"model = FSDP(model, cpu_offload=CPUOffload(offload_params={value}))\n"
    )
    assert finding.fixed and "CPUOffload(" not in new
    call = " ".join(new[new.index("model = fully_shard(") :].split())
    if keyword is None:
        assert call == "model = fully_shard(model)"
    else:
        assert call in (
            f"model = fully_shard( model, {keyword}, )",
            f"model = fully_shard(model, {keyword})",
        )
    names = new.splitlines()[0].removeprefix("from torch.distributed.fsdp import ").split(", ")
    assert ("OffloadPolicy" in names) is ("else OffloadPolicy()" in (keyword or ""))


@pytest.mark.parametrize(
    ("value", "policy"),
    [
        (
            "CPUOffload(offload_params=True) if args.offload else None",
            "CPUOffloadPolicy() if args.offload else OffloadPolicy()",
        ),
        (
            "None if actor else CPUOffload(offload_params=True)",
            "OffloadPolicy() if actor else CPUOffloadPolicy()",
        ),
        (
            "CPUOffload(offload_params=flag) if a and b else None",
            # too long for a line: laid out as formatters do
            "(\n"
            "    (CPUOffloadPolicy() if flag else OffloadPolicy())\n"
            "    if (a and b)\n"
            "    else OffloadPolicy()\n"
            ")",
        ),
        ("CPUOffload() if args.offload else None", None),  # no offloading either way
    ],
)
def test_cpu_offload_chosen_by_a_condition(value, policy):
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp import CPUOffload\n"
        f"model = FSDP(model, auto_wrap_policy={{Block}}, cpu_offload={value})\n"
    )
    assert finding.fixed and "CPUOffload(" not in new
    if policy is None:
        assert "model = fully_shard(model)\n" in new
    else:
        assert f"offload_policy = {policy}\n" in new
        assert "model = fully_shard(model, offload_policy=offload_policy)\n" in new


def test_cpu_offload_built_by_a_call_stays_manual():
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp import CPUOffload\n"
        "model = FSDP(model, cpu_offload=CPUOffload(True) if a else make_offload())\n"
    )
    assert new is None and "`cpu_offload` is not a `CPUOffload(...)` call" in finding.message


@pytest.mark.parametrize(
    ("binding", "read"),
    [
        # verl's shape: None, or `CPUOffload(...)` with a flag from the config
        (
            "if not cfg.offload:\n    offload = None\n"
            "else:\n    offload = CPUOffload(offload_params=cfg.params)\n",
            "offload",
        ),
        ("", "cfg.cpu_offload"),  # a config's own value
    ],
)
def test_cpu_offload_bound_at_run_time_offloads_where_fsdp1_did(binding, read):
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp import CPUOffload\n"
        + binding
        + f"model = FSDP(model, cpu_offload={read})\n"
    )
    assert finding.fixed, finding.message
    policy = f'CPUOffloadPolicy() if getattr({read}, "offload_params", False) else OffloadPolicy()'
    assert f"offload_policy={policy}" in new
    assert "(pinned, as FSDP1's were)" in finding.message


@pytest.mark.parametrize(
    ("flag", "written"),
    [("wants_offload()", "wants_offload()"), ("local or remote", "(local or remote)")],
)
def test_a_computed_value_is_evaluated_once_before_the_loop(flag, written):
    # FSDP1 evaluates each argument once; the loop would call it once per unit.
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp import CPUOffload\n"
        f"model = FSDP(model, auto_wrap_policy={{Block}}, "
        f"cpu_offload=CPUOffload(offload_params={flag}))\n"
    )
    assert finding.fixed and new.count(flag) == 1
    binding = f"offload_policy = CPUOffloadPolicy() if {written} else OffloadPolicy()\n"
    assert binding + "for submodule in" in new
    assert "fully_shard(submodule, offload_policy=offload_policy)" in new
    assert "model = fully_shard(model, offload_policy=offload_policy)" in new


def test_a_lone_call_keeps_its_values_in_place():
    new, _ = _migrate(
        "from torch.distributed.fsdp import CPUOffload\n"
        "model = FSDP(model, cpu_offload=CPUOffload(offload_params=wants_offload()))\n"
    )
    assert (
        "fully_shard(\n    model,\n    offload_policy=CPUOffloadPolicy() if wants_offload()" in new
    )


def test_no_ignored_modules_is_dropped():
    new, _ = _migrate("model = FSDP(model, ignored_modules=None)\n")
    assert new.endswith("\nmodel = fully_shard(model)\n")


def test_one_call_left_withholds_the_others_and_says_why():
    new, findings = _migrate(
        "a = FSDP(a, auto_wrap_policy={Block})  # noqa: FSDP401\nb = FSDP(b)\n"
    )
    assert new is None
    (finding,) = findings
    assert finding.withheld == "fix withheld: the FSDP1 call at line 5 is kept on purpose"


def test_a_call_left_for_a_human_lists_everything_in_the_way():
    # Real calls are config-driven: the finding is the whole porting checklist at once.
    call = (
        "FSDP(model, auto_wrap_policy={pick()}, sharding_strategy='sdp', "
        "ignored_modules=[model.head], mixed_precision=mp(), device_id=rank)"
    )
    new, (finding,) = _migrate(f"model = {call}\n")
    assert new is None and not finding.fixable
    reasons = ["not certainly a class", "`ShardingStrategy` member", "foreach=False"]
    reasons.append("not a `MixedPrecision(...)` call")
    at = [finding.message.index(f"({n}) ") for n in range(1, 5)]
    assert at == sorted(at) and "(5) " not in finding.message
    for number, why in enumerate(reasons, 1):
        part = finding.message[at[number - 1] : at[number] if number < 4 else None]
        assert why in part


@pytest.mark.parametrize(
    ("use", "why"),
    [
        ("FSDP.fsdp_modules(model, root_only=True)", "`FSDP` at line 6 is FSDP1 only"),
        ("FSDP.fsdp_modules(*models)", "`FSDP` at line 6 is FSDP1 only"),
        ("isinstance(model, FSDP) or FSDP", "`FSDP` at line 6 is FSDP1 only"),
        ("isinstance(model, klass=FSDP)", "`FSDP` at line 6 is FSDP1 only"),
        (
            "if torch_version < (2, 0):\n    assert isinstance(model, FSDP)",
            "`FSDP` at line 7 is FSDP1 only",
        ),
        ("FSDP.clip_grad_norm_(model, 1.0)", "`FSDP` at line 6 is FSDP1 only"),
        (
            "with model.no_sync(), open(path):\n    pass",
            "`model.no_sync` at line 6: exists only on FSDP1 models",
        ),
        (
            "with model.no_sync() as ctx:\n    pass",
            "`model.no_sync` at line 6: exists only on FSDP1 models",
        ),
        ("with model.no_sync(): pass", "`model.no_sync` at line 6: exists only on FSDP1 models"),
        ("context = model.no_sync()", "`model.no_sync` at line 6: exists only on FSDP1 models"),
        ("def f():\n    model.clip_grad_norm_(1.0)", "`model.clip_grad_norm_` at line 7: exists"),
        ("model.module.save()", "`model.module` at line 6: exists only on FSDP1 models"),
        ("model.load_state_dict(state, strict=False)", "`model.load_state_dict` at line 6: FSDP2"),
    ],
)
def test_uses_only_fsdp1_has_keep_the_file_fsdp1(use, why):
    new, findings = _migrate(f"model = FSDP(model, auto_wrap_policy={{Block}})\n{use}\n")
    assert new is None
    assert findings[0].withheld.startswith(f"fix withheld: {why}")


@pytest.mark.parametrize("bridge", [True, False])
@pytest.mark.parametrize(
    ("imports", "use", "why"),
    [
        (
            "import transformer_engine.pytorch as te",
            "te.distributed.prepare_te_modules_for_fsdp(model)",
            "asserts an FSDP1 root",
        ),
        (
            "from distributed_shampoo.distributor.shampoo_fsdp_utils import "
            "compile_fsdp_parameter_metadata as metadata",
            "config = dict(param_to_metadata=metadata(model))",
            "reads FSDP1's flat parameters",
        ),
        (
            "from distributed_shampoo import HSDPDistributedConfig",
            "config = HSDPDistributedConfig(device_mesh=mesh)",
            "`HybridShardDistributedConfig`",
        ),
        (
            "from apex.optimizers import FusedAdam",
            "optimizer = FusedAdam(model.parameters(), lr=1e-4)",
            "by data pointer",
        ),
    ],
)
def test_a_library_call_that_needs_an_fsdp1_model_keeps_the_file_fsdp1(imports, use, why, bridge):
    source = f"{imports}\nmodel = FSDP(model, auto_wrap_policy={{Block}})\n{use}\n"
    new, findings = _migrate(source, fsdp2_bridge=bridge)
    assert new is None
    assert findings[0].withheld.startswith("fix withheld: `")
    assert "at line 7: " in findings[0].withheld and why in findings[0].withheld


WRAP = "sharded = FSDP(model, auto_wrap_policy={Block})"
NEW = "model = Net()\n"


@pytest.mark.parametrize(
    "body",
    [
        f"model.load_state_dict(torch.load(path))\n{WRAP}\n",
        f"if resume:\n    model.load_state_dict(state)\n{WRAP}\n",
        f"for path in paths:\n    model.load_state_dict(torch.load(path))\n{WRAP}\n",
        f"def main():\n    model.load_state_dict(state)\n    {WRAP}\n",
    ],
)
def test_a_use_before_the_model_is_wrapped_is_the_plain_module(body):
    new, findings = _migrate(NEW + body)
    assert new is not None and findings[0].fixed
    assert "model.load_state_dict(" in new and "fully_shard(model" in new


@pytest.mark.parametrize(
    "body",
    [
        # the second pass of the loop loads into the wrapped model
        f"for path in paths:\n    model.load_state_dict(torch.load(path))\n    {WRAP}\n",
        # the function may run after the wrap
        f"def load():\n    model.load_state_dict(state)\n{WRAP}\nload()\n",
        f"{WRAP}\nmodel.load_state_dict(state)\n",
    ],
)
def test_a_use_that_may_see_the_wrapped_model_keeps_the_file_fsdp1(body):
    new, findings = _migrate(NEW + body)
    assert new is None and "`model.load_state_dict` at line" in findings[0].withheld


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("isinstance(model, FSDP)", "isinstance(model, FSDPModule)"),
        ("isinstance(m, (Block, FSDP))", "isinstance(m, (Block, FSDPModule))"),
        ("[m for m in model.modules() if isinstance(m, FSDP)]", "isinstance(m, FSDPModule)]"),
    ],
)
@pytest.mark.parametrize("where", ["after", "before"])
def test_a_unit_check_becomes_fsdp_module_wherever_it_stands(before, after, where):
    check = f"def units(model, m=None):\n    return {before}\n"
    call = "model = FSDP(model, auto_wrap_policy={Block})\n"
    new, findings = _migrate(check + call if where == "before" else call + check)
    assert new is not None and after in new
    assert "from torch.distributed.fsdp import FSDPModule, fully_shard\n" in new
    assert "FSDP(" not in new and "FullyShardedDataParallel" not in new
    assert [f.code for f in findings] == ["FSDP401"] and findings[0].fixed


@pytest.mark.parametrize(
    ("define", "after"),
    [
        ("def step(model: FSDP) -> None:\n    pass\n", "def step(model: FSDPModule) -> None:"),
        (
            "def build(cfg, *, model: Optional[FSDP] = None) -> Tuple[FSDP, int]:\n    pass\n",
            "def build(cfg, *, model: Optional[FSDPModule] = None) -> Tuple[FSDPModule, int]:",
        ),
        ("def each(*models: FSDP):\n    pass\n", "def each(*models: FSDPModule):"),
    ],
)
def test_a_function_annotated_with_the_fsdp1_class_gets_fsdp_module(define, after):
    new, findings = _migrate("model = FSDP(model, auto_wrap_policy={Block})\n" + define)
    assert new is not None and after in new and findings[0].fixed
    assert "FullyShardedDataParallel" not in new


def test_an_annotated_variable_keeps_the_file_fsdp1():
    """Only a function's annotations are rewritten (a hook sees them before they are left)."""
    new, findings = _migrate("model: FSDP = FSDP(model, auto_wrap_policy={Block})\n")
    assert new is None
    assert findings[0].withheld == "fix withheld: `FSDP` at line 5 is FSDP1 only"


@pytest.mark.parametrize("where", ["after", "before"])
@pytest.mark.parametrize("argument", ["model", "module=model"])
def test_fsdp1s_module_list_becomes_the_fsdp_module_instances(where, argument):
    listing = f"def units(model):\n    return FSDP.fsdp_modules({argument})\n"
    call = "model = FSDP(model, auto_wrap_policy={Block})\n"
    new, findings = _migrate(listing + call if where == "before" else call + listing)
    assert new is not None and findings[0].fixed
    comprehension = (
        "[submodule for submodule in model.modules() if isinstance(submodule, FSDPModule)]"
    )
    assert f"    return {comprehension}\n" in new
    assert "fsdp_modules" not in new and "FullyShardedDataParallel" not in new


def test_a_units_wrapped_module_in_a_loop_is_the_unit_itself():
    # FSDP1's unit wraps the module it shards; FSDP2 shards it in place, same class.
    new, findings = _migrate(
        "model = FSDP(model, auto_wrap_policy={Block})\n"
        "for unit in FSDP.fsdp_modules(model):\n"
        "    if isinstance(unit.module, Block):  # a block\n"
        "        print(unit.module.fc1.weight.shape)\n"
    )
    assert findings[0].fixed
    assert new.endswith(
        "    if isinstance(unit, Block):  # a block\n        print(unit.fc1.weight.shape)\n"
    )


@pytest.mark.parametrize(
    "loop",
    [
        "names = [type(u.module) for u in FSDP.fsdp_modules(model)]\n",  # visited first
        "for unit in FSDP.fsdp_modules(model):\n    print(unit.sharding_strategy)\n",
    ],
)
def test_other_reads_of_a_units_fsdp1_state_keep_the_file_fsdp1(loop):
    new, findings = _migrate("model = FSDP(model, auto_wrap_policy={Block})\n" + loop)
    assert new is None and "the loop reads FSDP1's state of each unit" in findings[0].withheld


def test_no_sync_becomes_the_fsdp2_switch_turned_back_on_in_finally():
    new, findings = _migrate(
        "model = FSDP(model, auto_wrap_policy={Block})\n"
        "for x in data:\n"
        "    # accumulate\n"
        "    with model.no_sync():  # no reduction\n"
        "        model(x).sum().backward()\n"
        "        model.clip_grad_norm_(1.0)\n"
    )
    assert findings[0].fixed
    assert new.endswith(
        "    # accumulate\n"
        "    model.set_requires_gradient_sync(False)\n"
        "    try:  # no reduction\n"
        "        model(x).sum().backward()\n"
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    finally:\n"
        "        model.set_requires_gradient_sync(True)\n"
    )


def test_a_unit_check_follows_the_target_torch():
    new, _ = _migrate(
        "model = FSDP(model, auto_wrap_policy={Block})\nisinstance(model, FSDP)\n",
        releases=Releases.parse(torch="2.4"),
    )
    assert "from torch.distributed._composable.fsdp import FSDPModule, fully_shard" in new


#: A file that already tells FSDP1 models from FSDP2 ones.
TELLS_APART = (
    "from torch.distributed.fsdp import FSDPModule\n"
    "model = FSDP(model, auto_wrap_policy={Block})\n\n\n"
    "def clip(m):\n"
    "    if isinstance(m, FSDP):\n"
    "        return m.clip_grad_norm_(1.0)\n"
)


@pytest.mark.parametrize(
    "partner",
    [
        "    elif isinstance(m, FSDPModule):\n        return clip_fsdp2(m)\n",
        "    elif isinstance(m, (DDP, FSDPModule)):\n        return clip_fsdp2(m)\n",
        "    elif m is None or isinstance(m, FSDPModule):\n        return None\n",
    ],
    ids=["elif", "in-a-tuple", "in-a-condition"],
)
def test_a_check_paired_with_fsdp2s_is_left_for_the_fsdp2_branch(partner):
    # A converted model is an FSDPModule: it takes the branch the file wrote for FSDP2.
    new, findings = _migrate(TELLS_APART + partner)
    assert findings[0].fixed, findings[0].withheld
    assert "    if isinstance(m, FSDP):\n" in new and "model = fully_shard(model)" in new
    assert "FullyShardedDataParallel as FSDP" in new  # the check still uses it


@pytest.mark.parametrize(
    "partner",
    [
        "    return clip_fsdp2(m)\n",  # no FSDP2 test at all
        "    elif isinstance(other, FSDPModule):\n        return None\n",  # another object
    ],
    ids=["none", "another-subject"],
)
def test_an_unpaired_check_keeps_a_file_that_names_fsdp2s_class_fsdp1(partner):
    new, findings = _migrate(TELLS_APART + partner)
    assert new is None and "`FSDPModule` is a name here" in findings[0].withheld


DISPATCH = (
    "from torch.distributed.fsdp import FSDPModule\n"
    "from torch.distributed.fsdp._runtime_utils import _lazy_init\n"
    "model = FSDP(model, auto_wrap_policy={Block})\n\n\n"
    "def fsdp_version(model):\n"
    "    if isinstance(model, FSDP):\n"
    "        return 1\n"
    "    elif isinstance(model, FSDPModule):\n"
    "        return 2\n"
    "    return 0\n\n\n"
    "def offload(model):\n"
    "    if fsdp_version(model) == ANSWER:\n"
    "        offload_fsdp2(model)\n"
    "LEAVE"
    "    assert isinstance(model, FSDP)\n"
    "    _lazy_init(model, model)\n"
)


def test_fsdp1_code_after_an_fsdp2_models_return_is_left_as_written():
    # verl's offload helpers: FSDP2 models return first, FSDP1's internals come after.
    new, findings = _migrate(DISPATCH.replace("ANSWER", "2").replace("LEAVE", "        return\n"))
    assert findings[0].fixed, findings[0].withheld
    assert "    assert isinstance(model, FSDP)\n    _lazy_init(model, model)\n" in new


@pytest.mark.parametrize(
    ("answer", "leave"),
    [(1, "        return\n"), (2, "")],
    ids=["the-fsdp1-answer", "no-return"],
)
def test_fsdp1_code_an_fsdp2_model_may_reach_still_counts(answer, leave):
    new, findings = _migrate(DISPATCH.replace("ANSWER", str(answer)).replace("LEAVE", leave))
    assert new is None and "`_lazy_init` at line" in findings[0].withheld
    assert "is FSDP1's internals" in findings[0].withheld


def test_fsdp1_code_after_a_return_on_a_check_that_becomes_fsdp2s_is_left():
    # torchtnt's _is_fsdp_module: the check becomes FSDPModule, so a converted model
    # returns before the composable-FSDP1 probe that follows.
    new, findings = _migrate(
        "from torch.distributed.fsdp._common_utils import _FSDPState\n"
        "model = FSDP(model, auto_wrap_policy={Block})\n\n\n"
        "def is_fsdp(module):\n"
        "    if isinstance(module, FSDP):\n"
        "        return True\n"
        "    return isinstance(state_of(module), _FSDPState)\n"
    )
    assert findings[0].fixed, findings[0].withheld
    assert "    if isinstance(module, FSDPModule):\n        return True\n" in new
    assert "_FSDPState)\n" in new


OLD_ORDER = (
    "        return FSDP.optim_state_dict_to_load(osd, model, optim)\n"
    "    return FSDP.optim_state_dict_to_load(model, optim, osd)\n"
)


@pytest.mark.parametrize(
    "gate",
    [
        "version.parse(torch.__version__) < version.parse('2.1.0')",
        "not _TORCH_GREATER_EQUAL_2_1",
    ],
)
def test_fsdp1_code_for_a_torch_without_fsdp2_is_left_as_written(gate):
    body = "model = FSDP(model, auto_wrap_policy={Block})\n\n\ndef load(model, optim, osd):\n"
    new, findings = _migrate(body + f"    if {gate}:\n" + OLD_ORDER, fsdp2_bridge=True)
    assert findings[0].fixed, findings[0].withheld
    assert "        return FSDP.optim_state_dict_to_load(osd, model, optim)\n" in new
    assert "    return FSDP1Api.optim_state_dict_to_load(model, optim, osd)\n" in new


@pytest.mark.parametrize(
    "gate",
    [
        "version.parse(torch.__version__) < version.parse('2.5')",  # runs on FSDP2's 2.4
        "_PL_LESS_THAN_2_0",  # Lightning's release, not torch's
    ],
)
def test_fsdp1_code_that_a_torch_with_fsdp2_may_run_still_counts(gate):
    body = "model = FSDP(model, auto_wrap_policy={Block})\n\n\ndef load(model, optim, osd):\n"
    new, findings = _migrate(body + f"    if {gate}:\n" + OLD_ORDER, fsdp2_bridge=True)
    assert new is None and "is FSDP1 only" in findings[0].withheld


def _project(tmp_path: Path, monkeypatch, config: str) -> Path:
    monkeypatch.chdir(tmp_path)
    # a project on the current torch: FSDP2's `fully_shard` runs on its whole range
    Path("pyproject.toml").write_text(f'[tool.fsdp-compat]\ntarget-torch = "latest"\n{config}\n')
    path = Path("train.py")
    path.write_text(HEAD + "model = FSDP(model, auto_wrap_policy={Block})\n")
    return path


def test_extend_select_in_the_config_turns_the_family_on(tmp_path, monkeypatch, capsys):
    from codemods.lint import main as lint
    from codemods.migrate import main as migrate

    path = _project(tmp_path, monkeypatch, 'extend-select = ["FSDP4"]')
    lint(["--output-format", "json", "train.py"])
    assert {d["code"] for d in json.loads(capsys.readouterr().out)} == {"FSDP401"}
    migrate(["--unsafe-fixes", "train.py"])
    assert "model = fully_shard(model)\n" in path.read_text()


def test_extend_select_on_the_command_line(tmp_path, monkeypatch):
    from codemods.migrate import main as migrate

    path = _project(tmp_path, monkeypatch, "")
    migrate(["--unsafe-fixes", "train.py"])
    assert "FSDP(model" in path.read_text()
    migrate(["--unsafe-fixes", "--extend-select", "FSDP4", "train.py"])
    assert "model = fully_shard(model)\n" in path.read_text()


def test_the_module_may_be_passed_by_keyword_and_be_an_attribute():
    new, _ = _migrate(
        "def setup(self):\n    self.model = FSDP(module=self.model, auto_wrap_policy={Block})\n"
    )
    assert new.endswith(
        "    for submodule in reversed(list(self.model.modules())):  "
        "# descendants before ancestors\n"
        "        if isinstance(submodule, Block) and submodule is not self.model:\n"
        "            fully_shard(submodule)\n"
        "    self.model = fully_shard(self.model)\n"
    )


def test_a_sharding_strategy_chosen_by_a_flag_becomes_a_bool():
    new, _ = _migrate(
        "from torch.distributed.fsdp import ShardingStrategy as S\n"
        "model = FSDP(model, sharding_strategy=S.SHARD_GRAD_OP if zero2 else S.FULL_SHARD)\n"
    )
    assert new.endswith("model = fully_shard(model, reshard_after_forward=not bool(zero2))\n")


def test_the_guide_shows_the_rules_own_mapping():
    from codemods.rules.fsdp401.arguments import mapping_table

    guide = (Path(__file__).parents[1] / "docs" / "fsdp2.md").read_text(encoding="utf-8")
    assert mapping_table() in guide


def test_a_use_in_a_version_gates_older_branch_keeps_the_file_fsdp1():
    new, findings = _migrate(
        """\
        model = FSDP(model, auto_wrap_policy={Block})
        if torch.__version__ < "2.0":
            norm = model.clip_grad_norm_(1.0)
        """
    )
    assert new is None
    assert findings[0].withheld == (
        "fix withheld: `model.clip_grad_norm_` at line 7: exists only on FSDP1 models "
        "(on FSDP2: `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`)"
    )


def test_a_use_in_a_version_gates_newer_branch_is_converted_like_any_code():
    """The branch for the newer release is current code (issue 32): converted with the call."""
    new, _ = _migrate(
        """\
        model = FSDP(model, auto_wrap_policy={Block})
        if torch.__version__ >= "2.0":
            norm = model.clip_grad_norm_(1.0)
        """
    )
    assert new is not None
    assert 'if torch.__version__ >= "2.0":\n    norm = torch.nn.utils.clip_grad_norm_(' in new


_LOOP = (
    "for submodule in reversed(list(model.modules())):  # descendants before ancestors\n"
    "    if isinstance(submodule, Block) and submodule is not model:\n"
    "        fully_shard(submodule)\n"
    "model = fully_shard(model)\n"
)
_PARTIAL = (
    "from functools import partial\n"
    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
)


@pytest.mark.parametrize(
    ("helper", "wrap"),
    [
        (  # returned directly, after a docstring
            'def get_wrap_policy():\n    """The policy."""\n'
            "    return partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})\n",
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy())\n",
        ),
        (  # a local assigned once, then returned; an argument the policy does not use
            "def get_wrap_policy(cfg):\n    layers = [Block]\n"
            "    policy = ModuleWrapPolicy(layers)\n    return policy\n",
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy(cfg.name))\n",
        ),
        (  # the call bound to a name first
            "def get_wrap_policy():\n    return {Block}\n",
            "policy = get_wrap_policy()\nmodel = FSDP(model, auto_wrap_policy=policy)\n",
        ),
    ],
)
def test_a_policy_built_by_a_straight_line_helper_is_read(helper, wrap):
    new, findings = _migrate(_PARTIAL + helper + wrap)
    assert findings[0].fixed
    assert new.endswith(_LOOP)
    assert helper in new  # the helper itself is left as it was


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "def get_wrap_policy(big):\n    if big:\n        return ModuleWrapPolicy({Block})\n"
            "    return ModuleWrapPolicy({Head})\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy(True))\n",
            id="a branch",
        ),
        pytest.param(
            "def get_wrap_policy(cls):\n    return ModuleWrapPolicy({cls})\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy(Block))\n",
            id="a class set from a parameter",
        ),
        pytest.param(
            "def get_wrap_policy(classes):\n    return ModuleWrapPolicy(classes)\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy({Block}))\n",
            id="the classes passed in",
        ),
        pytest.param(
            "class Policies:\n    def get_wrap_policy():\n        return {Block}\n"
            "    model = FSDP(model, auto_wrap_policy=get_wrap_policy())\n",
            id="defined in a class",
        ),
        pytest.param(
            "def main(model):\n    def get_wrap_policy():\n        return {Block}\n"
            "    return FSDP(model, auto_wrap_policy=get_wrap_policy())\n",
            id="nested",
        ),
        pytest.param(
            "def get_wrap_policy():\n    return {Block}\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy())\n"
            "def get_wrap_policy():\n    return {Head}\n",
            id="redefined later",
        ),
        pytest.param(
            "@functools.cache\ndef get_wrap_policy():\n    return {Block}\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy())\n",
            id="decorated",
        ),
        pytest.param(
            "def get_wrap_policy():\n    return {Block}\n"
            "def main(model, Block):\n"
            "    return FSDP(model, auto_wrap_policy=get_wrap_policy())\n",
            id="the class shadowed where the model is wrapped",
        ),
        pytest.param(
            "def get_wrap_policy():\n    Block = Head\n    return {Block}\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy())\n",
            id="the class shadowed in the helper",
        ),
        pytest.param(
            "def get_wrap_policy(log):\n    return {Block}\n"
            "model = FSDP(model, auto_wrap_policy=get_wrap_policy(print('wrapping')))\n",
            id="an argument with a call the rewrite would drop",
        ),
    ],
)
def test_a_helper_policy_that_is_not_certain_decides_at_run_time(source):
    """Its classes are not read with certainty: the policy it returns decides, as in FSDP1."""
    new, findings = _migrate("from model import Head\n" + source)
    (finding,) = [f for f in findings if f.code == "FSDP401"]
    assert finding.fixed and "get_wrap_policy(" in new and "shard_like_fsdp1(" in new


def test_a_class_shadowed_where_the_model_is_wrapped_stays_manual():
    new, findings = _migrate(
        "policy = ModuleWrapPolicy({Block})\n"
        "def main(model, Block):\n    return FSDP(model, auto_wrap_policy=policy)\n"
    )
    assert new is None
    assert "`Block` means something else where the model is wrapped" in findings[0].message


def test_a_value_quoted_in_a_message_is_one_short_line():
    layers = ("encoder_layer", "decoder_layer", "embedding_layer")
    names = "".join(f'        "{name}",\n' for name in layers)
    body = f"model = FSDP(\n    model,\n    auto_wrap_policy={{\n        layer_class(\n{names}"
    new, (finding,) = _migrate(body + "        )\n    },\n)\n")
    assert new is None and "\n" not in finding.message
    # on one line, cut to SHOWN_LENGTH (60) characters, the last three of them dots
    full = "layer_class( " + " ".join(f'"{name}",' for name in layers) + " )"
    assert f"`{full[:57]}...` in the policy is not certainly a class" in finding.message


PRECISION_HEAD = "import torch\nfrom torch.distributed.fsdp import MixedPrecision\n"
BRANCHES = (
    "def build(model, bf16):\n"
    "    mp = None  # full precision\n"
    "    if bf16:\n"
    "        mp = MixedPrecision(param_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)\n"
    "    model = FSDP(model, auto_wrap_policy={Block}, mixed_precision=mp)%s\n"
    "    return model\n"
)


def test_a_precision_chosen_in_branches_is_rebound_as_the_fsdp2_policy():
    new, (finding,) = _migrate(PRECISION_HEAD + BRANCHES % "")
    assert finding.fixed and "`buffer_dtype` dropped" in finding.message
    assert "    mp = MixedPrecisionPolicy()  # full precision\n" in new
    assert "        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16)\n" in new
    assert "fully_shard(model, mp_policy=mp)" in new and "MixedPrecision," not in new


def test_a_precision_rebound_only_where_the_call_converts():
    # silenced: the call stays FSDP1, so its precision stays FSDP1's too
    new, findings = _migrate(PRECISION_HEAD + BRANCHES % "  # noqa: FSDP401")
    assert new is None and findings == []


@pytest.mark.parametrize(
    "use",
    [
        "    print(mp)\n",  # read elsewhere: it stays FSDP1's object there
        "    mp = mp or MixedPrecision()\n",  # bound by something else too
    ],
)
def test_a_precision_used_otherwise_is_converted_at_run_time(use):
    """FSDP1's object stays where else it is used; the wrap site converts it when it runs."""
    body = BRANCHES.replace("    model = FSDP", use + "    model = FSDP") % ""
    new, (finding,) = _migrate(PRECISION_HEAD + body)
    assert finding.fixed and "`mixed_precision` is read at run time" in finding.message
    assert "mp_policy = precision_like_fsdp1(mp, True)\n" in new
    assert "def precision_like_fsdp1(precision, root):" in new


#: FSDP1's casting fields -> (the root policy's ``cast_forward_inputs``, the units' own
#: policy's; None: not written, FSDP2's default ``True``; "shared": the root's policy).
CASTING = {
    "": (None, "False"),  # FSDP1's default: the root alone casts
    ", cast_forward_inputs=False": (None, "False"),
    ", cast_forward_inputs=True": ("True", "shared"),  # every unit casts
    ", cast_root_forward_inputs=False": ("False", "shared"),  # no unit casts
    ", cast_root_forward_inputs=True, cast_forward_inputs=True": ("True", "shared"),
}


def _policies(source: str) -> dict[str, dict[str, str]]:
    """Each ``name = MixedPrecisionPolicy(...)`` of ``source``: its keywords' sources."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if ast.unparse(node.value.func) == "MixedPrecisionPolicy":
                keywords = {k.arg: ast.unparse(k.value) for k in node.value.keywords}
                out[ast.unparse(node.targets[0])] = keywords
    return out


@pytest.mark.parametrize("fields", list(CASTING))
def test_the_units_cast_their_inputs_where_fsdp1s_did(fields):
    root_casts, units_cast = CASTING[fields]
    dtypes = {"param_dtype": "torch.bfloat16", "reduce_dtype": "torch.float32"}
    new, (finding,) = _migrate(
        PRECISION_HEAD + "model = FSDP(model, auto_wrap_policy={Block}, mixed_precision="
        f"MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32{fields}))\n"
    )
    assert finding.fixed
    policies = _policies(new)
    root = dtypes if root_casts is None else {**dtypes, "cast_forward_inputs": root_casts}
    assert policies["mp_policy"] == root
    assert "model = fully_shard(model, mp_policy=mp_policy)" in new
    if units_cast == "shared":
        assert set(policies) == {"mp_policy"}
        assert "fully_shard(submodule, mp_policy=mp_policy)" in new
        return
    assert policies["unit_mp_policy"] == {**dtypes, "cast_forward_inputs": units_cast}
    assert "# as FSDP1: the root casts the floating inputs, the units below it do not" in new
    assert "fully_shard(submodule, mp_policy=unit_mp_policy)" in new


def test_without_units_the_root_keeps_one_policy():
    new, _ = _migrate(
        PRECISION_HEAD + "model = FSDP(model, mixed_precision=MixedPrecision(param_dtype=x))\n"
    )
    assert new.endswith(
        "model = fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=x))\n"
    )


def test_a_computed_dtype_is_read_from_the_roots_policy_not_evaluated_again():
    new, _ = _migrate(
        PRECISION_HEAD + "model = FSDP(model, auto_wrap_policy={Block}, "
        "mixed_precision=MixedPrecision(param_dtype=dtype_of(config)))\n"
    )
    assert new.count("dtype_of(config)") == 1
    assert "param_dtype=mp_policy.param_dtype" in new


def test_a_precision_bound_by_branches_gives_the_units_its_dtypes():
    new, _ = _migrate(PRECISION_HEAD + BRANCHES % "")
    assert _policies(new)["unit_mp_policy"] == {
        "param_dtype": "mp.param_dtype",
        "reduce_dtype": "mp.reduce_dtype",
        "cast_forward_inputs": "False",
    }
    assert "fully_shard(model, mp_policy=mp)" in new


def test_branches_that_cast_in_different_ways_stay_for_a_human():
    fp16 = "MixedPrecision(param_dtype=torch.float16, cast_forward_inputs=True)"
    body = BRANCHES.replace("    if bf16:\n", f"    if fp16:\n        mp = {fp16}\n    if bf16:\n")
    new, (finding,) = _migrate(PRECISION_HEAD + body % "")
    assert new is None and "cast the forward inputs in different ways" in finding.message


@pytest.mark.parametrize(
    ("dtypes", "noted"),
    [
        ("param_dtype=torch.bfloat16, reduce_dtype=torch.float32", True),
        ("param_dtype=torch.bfloat16", False),  # reduced in bf16: accumulated in bf16 too
        ("param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16", False),
    ],
)
def test_accumulation_in_reduce_dtype_is_named_where_it_differs(dtypes, noted):
    _, (finding,) = _migrate(
        PRECISION_HEAD + f"model = FSDP(model, mixed_precision=MixedPrecision({dtypes}))\n"
    )
    said = "kept in `reduce_dtype` where FSDP1 kept them in `param_dtype`" in finding.message
    assert said is noted


def test_many_unit_classes_are_named_once_before_the_loop():
    names = [f"DecoderLayerOfTheLargeModel{i}" for i in range(4)]
    body = f"from model import {', '.join(names)}\n"
    body += f"model = FSDP(model, auto_wrap_policy={{{', '.join(names)}}})\n"
    new, (finding,) = _migrate(body)
    assert finding.fixed
    listed = "".join(f"    {name},\n" for name in names)
    assert f"unit_classes = (\n{listed})\nfor submodule in" in new
    assert "if isinstance(submodule, unit_classes) and submodule is not model:" in new
    written = [line for line in new.splitlines() if not line.startswith("from ")]
    assert max(len(line) for line in written) <= 88


STRATEGY_HEAD = "from torch.distributed.fsdp import ShardingStrategy\n"


@pytest.mark.parametrize(
    ("binding", "written"),
    [
        ("strategy = ShardingStrategy.SHARD_GRAD_OP\n", "reshard_after_forward=False"),
        (
            "strategy: ShardingStrategy = ShardingStrategy.FULL_SHARD\n",
            "reshard_after_forward=True",
        ),
    ],
)
def test_a_sharding_strategy_bound_once_is_the_member(binding, written):
    body = STRATEGY_HEAD + binding + "model = FSDP(model, sharding_strategy=strategy)\n"
    new, (finding,) = _migrate(body)
    assert finding.fixed and f"model = fully_shard(model, {written})" in new


def test_a_sharding_strategy_bound_twice_is_looked_up_at_run_time():
    body = STRATEGY_HEAD + (
        "strategy = ShardingStrategy.SHARD_GRAD_OP\n"
        "if big:\n    strategy = ShardingStrategy.FULL_SHARD\n"
        "model = FSDP(model, sharding_strategy=strategy)\n"
    )
    new, (finding,) = _migrate(body)
    # the two members the file binds it to, nothing else: no mesh of its own
    table = "{ShardingStrategy.FULL_SHARD: True, ShardingStrategy.SHARD_GRAD_OP: False}"
    assert finding.fixed and f"reshard_after_forward={table}[strategy],\n" in new
    assert "mesh_like_fsdp1" not in new


def test_a_sharding_strategy_looked_up_in_a_table_becomes_a_table_of_flags():
    table = '{"fsdp": ShardingStrategy.FULL_SHARD, "sdp": ShardingStrategy.SHARD_GRAD_OP}'
    body = STRATEGY_HEAD + f"model = FSDP(model, sharding_strategy={table}[args.mode])\n"
    new, (finding,) = _migrate(body)
    assert finding.fixed
    assert 'reshard_after_forward={"fsdp": True, "sdp": False}[args.mode]' in new


def test_a_table_with_a_strategy_fsdp2_lacks_gets_its_mesh_at_run_time():
    table = '{"fsdp": ShardingStrategy.FULL_SHARD, "hsdp": ShardingStrategy.HYBRID_SHARD}'
    body = STRATEGY_HEAD + (
        f"def shard(model, mode):\n    return FSDP(model, sharding_strategy={table}[mode])\n"
    )
    new, (finding,) = _migrate(body)
    assert finding.fixed, finding.message
    # read once, for both keywords (laid out one entry a line, as formatters do)
    assert '    strategy = {\n        "fsdp": ShardingStrategy.FULL_SHARD,\n' in new
    assert "reshard_after_forward=reshards_like_fsdp1(strategy)" in new
    assert "mesh=mesh_like_fsdp1(strategy, model)" in new
    assert "where a node has one device FSDP1 fell back" in finding.message


DEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block, Net\n\n\n"
    "def main():\n"
    "    model = Net()\n"
    "{policy}"
    "    strategy = ShardingStrategy.SHARD_GRAD_OP\n"
    "    model = FSDP(model, auto_wrap_policy=policy, sharding_strategy=strategy)\n"
    "{after}"
    "    return model\n"
)


@pytest.mark.parametrize(
    ("policy", "after", "kept"),
    [
        ("    policy = ModuleWrapPolicy({Block})\n", "", []),
        # a comment above may say more than the binding; a later use still needs it
        ("    # one unit per block\n    policy = ModuleWrapPolicy({Block})\n", "", ["policy"]),
        ("    policy = ModuleWrapPolicy({Block})\n", "    print(policy)\n", ["policy"]),
        # the bridge takes the call's own arguments: their bindings stay
        (
            "    from torch.distributed.fsdp.wrap import CustomPolicy\n"
            "    policy = CustomPolicy(blocks)\n",
            "",
            ["policy", "strategy"],
        ),
    ],
    ids=["dead", "commented", "used-again", "bridged"],
)
def test_the_bindings_a_conversion_leaves_dead_go_with_it(policy, after, kept):
    source = DEAD.format(policy=policy, after=after).replace("Block, Net", "Block, Net, blocks")
    # the bridge asked for (`--fsdp2-bridge`): the last case goes there
    settings = Settings(fix=True, unsafe_fixes=True, select=("FSDP4",), fsdp2_bridge=True)
    new = run(source.encode(), settings).new_source.decode()
    for name, imported in (("policy", "ModuleWrapPolicy"), ("strategy", "ShardingStrategy")):
        assert (f"    {name} = " in new) == (name in kept), name
        assert (imported in new) == (name in kept), imported
    assert "fully_shard" in new


#: FSDP1-only reads on a value the file takes for an FSDP1 model, and the read named.
FSDP1_READS = {
    "annotated": (
        "def f(module: FSDP):\n    return module.process_group\n",
        "module.process_group",
    ),
    "checked": (
        "def f(m):\n    if isinstance(m, FSDP):\n        return m.mixed_precision\n",
        "m.mixed_precision",
    ),
    "annotated-private": (
        "def f(module: FSDP):\n    return module._fsdp_wrapped_module\n",
        "module._fsdp_wrapped_module",
    ),
    "checked-strategy": (
        "def f(m):\n    if isinstance(m, FSDP) and m.sharding_strategy:\n        return 1\n"
        "    if isinstance(m, FSDP):\n        return m.sharding_strategy\n",
        "m.sharding_strategy",
    ),
    "wrapped": ("def f():\n    return 0\n\n\nprint(model.process_group)\n", "model.process_group"),
}
WRAP = "\n\nmodel = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"


@pytest.mark.parametrize("case", list(FSDP1_READS))
@pytest.mark.parametrize("bridge", [False, True])
def test_an_fsdp1_only_read_on_a_model_that_would_convert_keeps_the_file(case, bridge):
    body, read = FSDP1_READS[case]
    if case == "wrapped":  # after the wrapper call
        body = WRAP + body.split("\n\n\n")[1]
    else:
        body = body + WRAP
    new, (finding,) = _migrate(body, fsdp2_bridge=bridge)
    assert new is None, new
    assert finding.withheld.startswith(f"fix withheld: `{read}` at line ")
    assert "exists only on FSDP1 models" in finding.withheld


def test_an_fsdp1_method_on_an_annotated_parameter_takes_the_bridge_or_keeps_the_file():
    body = "def f(m: FSDP):\n    m.clip_grad_norm_(1.0)\n" + WRAP
    new, (finding,) = _migrate(body)
    assert new is None
    assert "`m.clip_grad_norm_` at line 6" in finding.withheld
    assert "torch.nn.utils.clip_grad_norm_" in finding.withheld  # what to write on FSDP2
    new, (finding,) = _migrate(body, fsdp2_bridge=True)
    assert finding.fixed and "def f(m: FSDPModule):" in new and "m.clip_grad_norm_(1.0)" in new
    assert "model = fully_shard_like_fsdp1(model," in new  # the bridge's model keeps it


def test_reads_that_both_fsdps_answer_leave_the_conversion():
    new, (finding,) = _migrate("def f(module: FSDP):\n    return module.training\n" + WRAP)
    assert finding.fixed and "def f(module: FSDPModule):" in new


SUBCLASS = (
    "class ShardedModel(FSDP):\n"
    "    def forward(self, *args, **kwargs):\n"
    "        return super().forward(*args, **kwargs)\n\n\n"
    "model = ShardedModel(model, use_orig_params=True)\n"
)


@pytest.mark.parametrize("lint_only", [False, True])
def test_a_call_of_an_fsdp1_subclass_is_reported_as_staying(lint_only):
    from codemods.batch.runner import process_source

    source = HEAD + SUBCLASS
    if lint_only:  # as fsdp-lint: the ast detector hands the file to libcst's survey
        findings = process_source("a.py", source.encode(), Settings(select=("FSDP4",))).findings
    else:
        new, findings = _migrate(SUBCLASS)
        assert new is None
    (finding,) = findings
    assert (finding.code, finding.line, finding.fixable) == ("FSDP401", 10, False)
    assert "`ShardedModel` (line 5) subclasses FSDP1's `FullyShardedDataParallel`" in (
        finding.message
    )


def test_a_subclass_call_keeps_the_files_other_calls_fsdp1():
    new, findings = _migrate(SUBCLASS + "other = FSDP(other, auto_wrap_policy={Block})\n")
    assert new is None and len(findings) == 2
    # every reason (here the class statement's base too)
    assert findings[1].withheld == (
        "fix withheld: `ShardedModel` at line 10 subclasses FSDP1 and stays FSDP1; "
        "`FSDP` at line 5 is FSDP1 only"
    )


def test_a_subclass_the_file_does_not_call_is_reported_at_its_base():
    """Other files import and call it (toad's FSDPModule): said where it is defined."""
    new, (finding,) = _migrate(SUBCLASS.replace("model = ShardedModel(", "model = f("))
    assert new is None
    assert (finding.code, finding.line, finding.col, finding.fixable) == ("FSDP401", 5, 20, False)
    assert "`ShardedModel` (line 5) subclasses FSDP1's" in finding.message
    assert "so its calls (in other files) stay FSDP1" in finding.message


@pytest.mark.parametrize("target", ["2.1..2.13", "2.3..2.6"])
def test_a_range_with_torch_releases_without_fully_shard_keeps_fsdp1_beside_fsdp2(target):
    """FSDP2 appeared in 2.4: a range reaching below it keeps the FSDP1 call beside it.

    tests/test_fsdp2_dual_stack.py holds the forms and runs both branches.
    """
    new, (finding,) = _migrate(
        "model = FSDP(model, auto_wrap_policy={Block})\n", releases=Releases.parse(torch=target)
    )
    assert finding.fixed and finding.no_fix is None
    assert (
        "if HAS_FSDP2:\n" in new
        and "else:\n    model = FSDP(model, auto_wrap_policy={Block})\n" in new
    )


@pytest.mark.parametrize(
    "built",
    [
        "with torch.device('meta'):\n    model = Net()\n",
        "model = Net(device='meta')\n",
        "from accelerate import init_empty_weights\n"
        "with init_empty_weights():\n    model = Net()\n",
    ],
    ids=["device-context", "device-argument", "accelerate"],
)
def test_a_model_built_on_meta_is_materialised_unit_by_unit_as_fsdp1_did(built):
    """FSDP1 materialises meta units when it wraps them; FSDP2 would keep them on meta."""
    body = "import torch\nfrom model import Net\n" + built + WRAP
    new, (finding,) = _migrate(body)
    assert finding.fixed and "materialised just before its `fully_shard`" in finding.message
    assert "def materialize_like_fsdp1(unit, device, init_fn=None):" in new
    assert "materialize_like_fsdp1(unit, torch.device('cuda', torch.cuda.current_device()))" in new
    assert new.index("prepare_unit(model)\n") < new.index("model = fully_shard(model")


def test_a_meta_model_with_param_init_fn_passes_it():
    body = "import torch\nrank = 1\nwith torch.device('meta'):\n    model = Net()\n"
    body += "model = FSDP(model, param_init_fn=init, device_id=rank)\n"
    new, (finding,) = _migrate(body)
    assert finding.fixed and "    materialize_like_fsdp1(unit, rank, init)\n" in new


@pytest.mark.parametrize(
    ("arguments", "flat"),
    [("", True), (", use_orig_params=False", True), (", use_orig_params=True", False)],
)
def test_each_converted_call_names_what_fsdp2_does_otherwise(arguments, flat):
    """The differences real ports accepted, listed for the call (FSDP2-PORTS.md 7.1)."""
    new, (finding,) = _migrate(f"model = FSDP(model, auto_wrap_policy={{Block}}{arguments})\n")
    assert finding.fixed and "use_orig_params" not in new
    assert ("the optimizer gets each original parameter" in finding.message) is flat
    assert "`state_dict()` gives DTensor shards" in finding.message
