"""Every registry entry is complete, consistent and has a working example."""

from __future__ import annotations

import ast
import re

import libcst
import pytest
from packaging.version import Version

from codemods.registry import REGISTRY, ChangeKind, FixSafety, Framework, Rule

RULES = list(REGISTRY)
IDS = [rule.code for rule in RULES]
DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
CODE_PREFIX = {Framework.TORCH: "FSDP1", Framework.LIGHTNING: "FSDP2", Framework.FAIRSCALE: "FSDP3"}


def test_codes_and_names_are_unique():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)


def test_duplicate_codes_are_refused():
    rule = RULES[0]
    with pytest.raises(ValueError, match=rule.code):
        type(REGISTRY)(rules=(rule, rule))


def test_unknown_code_names_the_known_ones():
    with pytest.raises(KeyError, match="FSDP101"):
        REGISTRY["FSDP999"]


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_entry_is_complete(rule: Rule):
    assert re.fullmatch(r"FSDP\d{3}", rule.code)
    # FSDP4xx is a family across frameworks: the move from FSDP1 to FSDP2 (opt-in).
    assert rule.code.startswith(CODE_PREFIX[rule.framework]) or (
        rule.code.startswith("FSDP4") and rule.opt_in
    )
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert isinstance(rule.kind, ChangeKind) and isinstance(rule.fix, FixSafety)
    # A whole package can be renamed (lightning_lite): a bare top-level name then.
    package = rule.kind is ChangeKind.SYMBOL_RENAME
    assert rule.old and all(
        DOTTED.match(name) or (package and name.isidentifier()) for name in rule.old
    ), rule.old
    assert len(set(rule.old)) == len(rule.old)
    if rule.kind is not ChangeKind.REMOVAL:
        assert rule.new and DOTTED.match(rule.new)
    assert rule.message and "\n" not in rule.message and not rule.message.endswith(".")
    assert len(rule.why) > 40


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_versions_parse_and_are_ordered(rule: Rule):
    versions = {k: getattr(rule, k) for k in ("introduced", "deprecated", "removed")}
    parsed = {k: Version(v) for k, v in versions.items() if v is not None}
    if "deprecated" in parsed and "removed" in parsed:
        assert parsed["deprecated"] <= parsed["removed"]
    if rule.kind is ChangeKind.SYMBOL_RENAME and "introduced" in parsed and "removed" in parsed:
        assert parsed["introduced"] <= parsed["removed"], "a rename leaves no gap"


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_example_is_parseable_and_changes_something(rule: Rule):
    for source in (rule.example.before, rule.example.after):
        assert source.strip() and source.endswith("\n")
        ast.parse(source)
        libcst.parse_module(source)
    assert rule.example.before != rule.example.after


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_kind_specific_fields(rule: Rule):
    old_leaf = rule.old[0].rsplit(".", 1)[-1]
    if rule.kind in (ChangeKind.KEYWORD_RENAME, ChangeKind.STRING_VALUE, ChangeKind.DEFAULT_CHANGE):
        assert rule.argument, "needs the argument it is about"
        assert rule.argument in rule.example.before or rule.kind is ChangeKind.DEFAULT_CHANGE
    if rule.kind is ChangeKind.KEYWORD_RENAME:
        assert rule.new_argument and rule.new_argument != rule.argument
        assert rule.new_argument in rule.example.after
    if rule.kind is ChangeKind.STRING_VALUE:
        assert rule.values and all(old != new for old, new in rule.values)
        assert any(
            repr(old) in rule.example.before or str(old) in rule.example.before
            for old, _ in rule.values
        )
    else:
        assert not rule.values
    if rule.kind in (ChangeKind.SYMBOL_RENAME, ChangeKind.METHOD_RENAME):
        assert old_leaf in rule.example.before
        assert rule.new.rsplit(".", 1)[-1] in rule.example.after or rule.fix is FixSafety.MANUAL


@pytest.mark.parametrize(
    "spelling",
    [
        # The rows of the API history in shared/DESIGN.md and the names issue 2 lists.
        "default_auto_wrap_policy",
        "unwrapped_params",
        "transformer_auto_wrap_policy",
        "lambda_auto_wrap_policy",
        "_FSDPPolicy",
        "min_num_params",
        "torch.distributed._composable.fsdp",
        "checkpoint_wrapper",
        "DDPFullyShardedPlugin",
        "DDPFullyShardedStrategy",
        "DDPFullyShardedNativeStrategy",
        "fsdp_native",
        "fsdp_native_full_shard_offload",
        "ddp_fully_sharded",
        "precision",
        "configure_sharded_model",
        "activation_checkpointing",
        "auto_wrap_policy",
        "fairscale.nn.FullyShardedDataParallel",
        "fairscale.nn.wrap.wrap",
        "fairscale.nn.wrap.enable_wrap",
        "fairscale.nn.wrap.auto_wrap",
        "fairscale.nn.wrap.default_auto_wrap_policy",
        "fairscale.nn.checkpoint.checkpoint_wrapper",
        # FairScale's documented paths, and what issue 15 found uncovered in real code.
        "fairscale.nn.enable_wrap",
        "fairscale.nn.auto_wrap",
        "fairscale.nn.default_auto_wrap_policy",
        "fairscale.nn.checkpoint_wrapper",
        "fsdp_auto_wrap_policy",
        "FullyShardedNativeNativeMixedPrecisionPlugin",
        "FullyShardedNativeMixedPrecisionPlugin",
        "pytorch_lightning.plugins.precision.fsdp_native_native_amp"
        ".FullyShardedNativeNativeMixedPrecisionPlugin",
        "lightning_lite",
        "LightningLite",
        "lightning.Trainer",
        "lightning.Fabric",
    ],
)
def test_registry_covers_the_api_history(spelling: str):
    def mentions(rule: Rule) -> bool:
        names = {*rule.old, *(n.rsplit(".", 1)[-1] for n in rule.old), rule.argument}
        names |= {old for old, _ in rule.values if isinstance(old, str)}
        return spelling in names

    assert any(mentions(rule) for rule in RULES), f"no rule covers {spelling!r}"


@pytest.mark.parametrize(
    "flag",
    [
        "module_wrap_policy",
        "custom_policy",
        "fsdp1_on_cpu",
        "fsdp2",
        "fsdp2_public",
        "fsdp2_on_cpu",
        "selective_ac",
        "ac_auto_wrap_policy",
        "checkpoint_no_reentrant_default",
    ],
)
def test_capability_rows_exist_with_versions(flag: str):
    cap = REGISTRY.capability(flag)
    Version(cap.since)
    assert cap.summary


def test_registry_imports_without_torch(run_without_torch):
    out = run_without_torch("from codemods.registry import REGISTRY; print(len(REGISTRY))")
    assert int(out) == len(RULES)
