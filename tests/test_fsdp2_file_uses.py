"""FSDP401 where the call's own file uses the model, or binds its arguments, FSDP1's way.

Shapes of our own writing after real scripts: a setup function wrapping a variable of
the same name as ``main``'s, which loads weights before wrapping; a precision bound to
a name that the dual stack's FSDP1 branch still passes; a precision chosen by a flag.
The runs of the new forms are in tests/test_fsdp2_checkpoint_blocks.py.
"""

from __future__ import annotations

import pytest

from tests.test_fsdp2_checkpoint_blocks import _settings, fsdp401_run

HEAD = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp import MixedPrecision\n"
    "from model import Net\n\n\n"
)


def _migrate(body: str, torch: str = "2.6..") -> tuple[str | None, list]:
    return fsdp401_run(HEAD, body, _settings(torch))


SETUP_THEN_MAIN = """\
def setup(model):
    model = FSDP(model)
    return model


def main(path):
    model = Net()
    model.load_state_dict(torch.load(path))
    model = setup(model)
    return model
"""


def test_a_load_before_main_wraps_its_own_variable_is_the_plain_module():
    new, (finding,) = _migrate(SETUP_THEN_MAIN)
    assert finding.fixed, finding.withheld
    assert "    model.load_state_dict(torch.load(path))\n" in new


@pytest.mark.parametrize(
    "inner",
    [
        # a nested function reading it (a loss closure in the loop) changes nothing
        "    def forward(x):\n        return model(x)\n\n",
        # one rebinding it may: the load could see anything
        "    def forward(x):\n        nonlocal model\n        model = setup(model)\n\n",
    ],
    ids=["read", "nonlocal"],
)
def test_a_nested_function_reading_mains_variable_leaves_it_mains(inner):
    body = SETUP_THEN_MAIN.replace(
        "    model = setup(model)\n", f"{inner}    model = setup(model)\n"
    )
    new, findings = _migrate(body)
    if "nonlocal" in inner:
        assert new is None and "`model.load_state_dict` at line" in findings[0].withheld
    else:
        assert findings[0].fixed and "    model.load_state_dict(torch.load(path))\n" in new


@pytest.mark.parametrize(
    "use",
    [
        # after the setup function's result is bound: the wrapped model
        "    model = setup(Net())\n    model.load_state_dict(torch.load(path))\n",
        # a parameter may be the wrapped model a caller passes
        "    model.load_state_dict(torch.load(path))\n",
    ],
    ids=["after", "parameter"],
)
def test_a_load_on_what_may_be_the_wrapped_model_still_counts(use):
    source = "def setup(model):\n    model = FSDP(model)\n    return model\n\n\n"
    new, (finding,) = _migrate(source + "def main(path, model):\n" + use)
    if "setup(" in use:  # the result tracked: rewritten to the full-state-dict load
        assert "set_model_state_dict(" in new
    else:  # may be the wrapped model: kept FSDP1, saying why
        assert new is None and "load_state_dict" in finding.withheld


@pytest.mark.parametrize(
    "bound",
    [
        "build()",  # a function of this file may return a wrapped model not followed
        "copy.deepcopy(model)",  # an imported callable given a wrapped model's name
    ],
)
def test_a_variable_of_the_same_name_wrapped_nowhere_in_its_function_still_counts(bound):
    new, (finding,) = _migrate(
        "import copy\n\n\ndef build():\n    return setup(Net())\n\n\n"
        "def setup(model):\n    model = FSDP(model)\n    return model\n\n\n"
        f"def check(model):\n    other = {bound}\n    model = {bound}\n"
        "    return model.state_dict()\n"
    )
    assert new is None and "`model.state_dict` at line" in finding.withheld


def test_a_variable_bound_by_an_imported_callable_is_not_the_wrapped_model():
    new, (finding,) = _migrate(
        "import copy\n\n\ndef setup(model):\n    model = FSDP(model)\n    return model\n\n\n"
        "def check():\n    model = Net()\n    model = copy.deepcopy(model)\n"
        "    return model.state_dict()\n"
    )
    assert finding.fixed and "    return model.state_dict()\n" in new


@pytest.mark.parametrize(
    ("use", "recipe"),
    [
        # (a block that only reads converts: tests/test_fsdp2_summon_blocks.py)
        ("with FSDP.summon_full_params(model):\n    model.weight.zero_()\n", "`unshard()` on each"),
        ("with model.summon_full_params():\n    print(model.weight)\n", "`unshard()` on each"),
        ("print(model.module)\n", "the model itself: `fully_shard` shards the module in place"),
        ("osd = FSDP.optim_state_dict_to_load(model, optim, osd)\n", "set_optimizer_state_dict("),
    ],
    ids=["summon", "summon-method", "module", "to-load"],
)
def test_what_stays_fsdp1_names_its_own_fsdp2_recipe(use, recipe):
    new, (finding,) = _migrate("model = FSDP(Net())\noptim = osd = None\n" + use)
    assert new is None and recipe in finding.withheld


BOUND_PRECISION = """\
def wrap(model, half):
    mp = None
    if half:
        mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    model = FSDP(model, mixed_precision=mp)
    return model
"""


def test_a_bound_precision_in_the_dual_stack_is_converted_at_run_time():
    new, (finding,) = _migrate(BOUND_PRECISION, torch="2.0..")
    assert finding.fixed, finding.withheld
    assert "        model = fully_shard(model, mp_policy=precision_like_fsdp1(mp, True))\n" in new
    # FSDP1's branch passes the FSDP1 object, bound as written
    assert "mp = MixedPrecision(param_dtype=torch.bfloat16" in new
    assert "        model = FSDP(model, mixed_precision=mp)\n" in new
    assert "is read at run time" in finding.message


def test_a_bound_precision_in_plain_code_is_still_rebound():
    new, (finding,) = _migrate(BOUND_PRECISION)
    assert finding.fixed
    assert "mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16" in new
    assert "precision_like_fsdp1" not in new


CHOSEN = """\
def wrap(model, half):
    model = FSDP(
        model,
        mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, {casting})
        if half
        else None,
    )
    return model
"""


def test_a_precision_chosen_by_a_flag_becomes_the_same_choice_of_policies():
    new, (finding,) = _migrate(CHOSEN.format(casting="cast_root_forward_inputs=False"))
    assert finding.fixed, finding.withheld
    assert (
        "        mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, "
        "cast_forward_inputs=False) if half else MixedPrecisionPolicy(),\n"
    ) in new


def test_a_chosen_precision_with_units_casts_at_the_root_only():
    new, (finding,) = _migrate(
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
        + CHOSEN.format(casting="reduce_dtype=torch.float32").replace(
            "        model,\n",
            "        model,\n        auto_wrap_policy=ModuleWrapPolicy({Net}),\n",
            1,
        )
    )
    assert finding.fixed, finding.withheld
    assert "    mp_policy = (\n" in new and "        if half\n" in new
    assert (
        "    unit_mp_policy = MixedPrecisionPolicy(\n        param_dtype=mp_policy.param_dtype,"
    ) in new


def test_a_chosen_precision_whose_test_calls_stays_for_a_human():
    new, (finding,) = _migrate(CHOSEN.format(casting="").replace("if half", "if half()"))
    assert new is None and "`mixed_precision` is not a `MixedPrecision(...)` call" in (
        finding.message
    )


@pytest.mark.parametrize("torch_range", ["2.6..", "2.0.."])
def test_a_name_the_function_imports_is_read_there_not_imported_again(torch_range):
    """`ShardingStrategy` imported in the method: the strategy table reads that one."""
    new, (finding,) = _migrate(
        "def wrap(model, strategy):\n"
        "    from torch.distributed.fsdp import ShardingStrategy\n"
        "    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP2_\n\n"
        "    table = {'zero3': ShardingStrategy.FULL_SHARD}\n"
        "    return FSDP2_(model, sharding_strategy=table[strategy])\n",
        torch_range,
    )
    assert finding.fixed, finding.withheld
    head = new[: new.index("def wrap")]
    assert "ShardingStrategy" not in head  # no module-level import left unused
    assert "reshard_after_forward=reshards_like_fsdp1(strategy_)" in new


ARMS = """\
def build(model, strategy, path):
    if strategy == "fsdp":
        model = FSDP(model)
    elif strategy == "fsdp2":
        full = model.state_dict()
{extra}    return model
"""


def test_a_use_in_another_arm_of_the_wrapping_if_is_the_plain_module():
    # The `elif` arm never runs after the `if` arm's wrapper call in one call of build:
    # the plain module's own state dict, kept as written.
    new, (finding,) = _migrate(ARMS.format(extra=""))
    assert finding.fixed, finding.withheld
    assert "        full = model.state_dict()\n" in new
    assert "get_model_state_dict" not in new


@pytest.mark.parametrize(
    "body",
    [
        # the use after the chain, where the wrapped model reaches it
        ARMS.format(extra="    full = model.state_dict()\n"),
        # a loop round the chain: a later turn may take the other arm after wrapping
        "def build(model, strategies):\n"
        "    for strategy in strategies:\n"
        "        if strategy == 'fsdp':\n"
        "            model = FSDP(model)\n"
        "        else:\n"
        "            full = model.state_dict()\n"
        "    return model\n",
        # the same arm, after the call
        "def build(model, flag):\n"
        "    if flag:\n"
        "        model = FSDP(model)\n"
        "        full = model.state_dict()\n"
        "    return model\n",
    ],
)
def test_a_use_the_wrapped_model_may_reach_is_a_use_of_the_wrapped_model(body):
    # Read as the sharded model's: its full state dict is asked of DCP (or the file held).
    new, (finding,) = _migrate(body)
    assert not finding.fixed or "    full = get_model_state_dict(model" in new
