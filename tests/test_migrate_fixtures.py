"""Fixture tests for every rewrite: input, expected output, and the no-op cases."""

from __future__ import annotations

import textwrap

import libcst
import pytest

from codemods.engine import FIXERS, Settings, run
from codemods.registry import REGISTRY

FIX = Settings(fix=True)
FIX_UNSAFE = Settings(fix=True, unsafe_fixes=True)


def migrate(source: str, settings: Settings = FIX) -> str:
    outcome = run(textwrap.dedent(source).encode(), settings)
    return (outcome.new_source or textwrap.dedent(source).encode()).decode()


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_registry_example_round_trips(rule):
    settings = Settings(fix=True, unsafe_fixes=True, select=(rule.code,))
    outcome = run(rule.example.before.encode(), settings)
    assert outcome.findings and {f.code for f in outcome.findings} == {rule.code}
    if rule.code in FIXERS:
        assert outcome.new_source.decode() == rule.example.after
        assert run(outcome.new_source, settings).findings == []  # nothing left, idempotent
    else:
        assert outcome.new_source is None and not any(f.fixable for f in outcome.findings)


CASES = {
    "transformer-partial-module-alias": (
        """
        import functools as ft
        import torch.distributed.fsdp.wrap as wrap_mod
        from torch.distributed.fsdp import FullyShardedDataParallel
        policy = ft.partial(wrap_mod.transformer_auto_wrap_policy, transformer_layer_cls={Block})
        model = FullyShardedDataParallel(model, auto_wrap_policy=policy)
        """,
        """
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        policy = ModuleWrapPolicy({Block})
        model = FullyShardedDataParallel(model, auto_wrap_policy=policy)
        """,
    ),
    "transformer-partial-multiline-comments": (
        """
        from functools import partial
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        model = FSDP(model, auto_wrap_policy=partial(
            transformer_auto_wrap_policy,  # wrap each decoder layer
            transformer_layer_cls={DecoderLayer},  # and nothing else
        ))
        """,
        """
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy(  # wrap each decoder layer
            {DecoderLayer},  # and nothing else
        ))
        """,
    ),
    "partial-kept-when-other-import-users-remain": (
        """
        from functools import partial
        from compat.fsdp import FSDP
        from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy, size_based_auto_wrap_policy
        a = partial(lambda_auto_wrap_policy, lambda_fn=is_block)
        b = partial(size_based_auto_wrap_policy, min_num_params=10)
        FSDP(FSDP(model, auto_wrap_policy=a), auto_wrap_policy=b)
        """,
        """
        from functools import partial
        from compat.fsdp import FSDP
        from torch.distributed.fsdp.wrap import CustomPolicy, size_based_auto_wrap_policy
        a = CustomPolicy(is_block)
        b = partial(size_based_auto_wrap_policy, min_num_params=10)
        FSDP(FSDP(model, auto_wrap_policy=a), auto_wrap_policy=b)
        """,
    ),
    "unwrapped-params-definition-and-uses": (
        """
        def my_policy(module, recurse, unwrapped_params, min_num_params=int(1e8)):
            if recurse:
                return True
            # the count that matters
            return unwrapped_params >= min_num_params
        """,
        """
        def my_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8)):
            if recurse:
                return True
            # the count that matters
            return nonwrapped_numel >= min_num_params
        """,
    ),
    "unwrapped-params-keyword-call": (
        """
        from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy as sb
        sb(module=m, recurse=False, unwrapped_params=n)
        """,
        """
        from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy as sb
        sb(module=m, recurse=False, nonwrapped_numel=n)
        """,
    ),
    "default-policy-module-attribute": (
        """
        import torch.distributed.fsdp.wrap as w
        policy = w.default_auto_wrap_policy
        """,
        """
        import torch.distributed.fsdp.wrap as w
        policy = w.size_based_auto_wrap_policy
        """,
    ),
    "strategy-and-precision-keep-quotes": (
        """
        import pytorch_lightning as pl
        trainer = pl.Trainer(
            strategy='fsdp_native_full_shard_offload',  # offload
            precision="bf16",
        )
        """,
        """
        import pytorch_lightning as pl
        trainer = pl.Trainer(
            strategy='fsdp_cpu_offload',  # offload
            precision="bf16-mixed",
        )
        """,
    ),
    "native-strategy-keeps-package-style": (
        """
        from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy
        strategy = DDPFullyShardedNativeStrategy(activation_checkpointing=[Block])
        """,
        """
        from pytorch_lightning.strategies import FSDPStrategy
        strategy = FSDPStrategy(activation_checkpointing_policy={Block})
        """,
    ),
    "fabric-activation-checkpointing-class": (
        """
        from lightning.fabric.strategies import FSDPStrategy
        from model import Block
        strategy = FSDPStrategy(activation_checkpointing=Block)
        """,
        """
        from lightning.fabric.strategies import FSDPStrategy
        from model import Block
        strategy = FSDPStrategy(activation_checkpointing_policy={Block})
        """,
    ),
    "class-from-an-enclosing-scope": (
        """
        from lightning.fabric.strategies import FSDPStrategy
        class Block: ...
        def main():
            return FSDPStrategy(activation_checkpointing=Block)
        """,
        """
        from lightning.fabric.strategies import FSDPStrategy
        class Block: ...
        def main():
            return FSDPStrategy(activation_checkpointing_policy={Block})
        """,
    ),
    "fairscale-strategy-translated": (
        """
        import pytorch_lightning as pl
        strategy = pl.strategies.DDPFullyShardedStrategy(
            reshard_after_forward=False,  # ZeRO-2 style
            activation_checkpointing=[pl.LightningModule],
            flatten_parameters=True,
        )
        """,
        """
        import pytorch_lightning as pl
        strategy = pl.strategies.FSDPStrategy(
            sharding_strategy="SHARD_GRAD_OP",  # ZeRO-2 style
            activation_checkpointing_policy={pl.LightningModule},
        )
        """,
    ),
    "configure-sharded-model-in-lightning-module": (
        """
        import lightning.pytorch as L
        class Model(L.LightningModule):
            def configure_sharded_model(self):  # build big layers here
                self.layer = wrap(Layer())
        """,
        """
        import lightning.pytorch as L
        class Model(L.LightningModule):
            def configure_model(self):  # build big layers here
                self.layer = wrap(Layer())
        """,
    ),
    "composable-fsdp-import": (
        """
        from torch.distributed._composable.fsdp import fully_shard, MixedPrecisionPolicy
        fully_shard(model, mp_policy=MixedPrecisionPolicy())
        """,
        """
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        fully_shard(model, mp_policy=MixedPrecisionPolicy())
        """,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_rewrite(name):
    before, after = CASES[name]
    got = migrate(before, FIX_UNSAFE if "fairscale-strategy" in name else FIX)
    assert got == textwrap.dedent(after)
    libcst.parse_module(got)
    assert migrate(got) == got, "a second run changes nothing"


NO_OPS = {
    "local-function-named-like-torchs": """
        def default_auto_wrap_policy(module, recurse, nonwrapped_numel):
            return True
        policy = default_auto_wrap_policy
        """,
    "hugging-face-dict-key": """
        fsdp_config = {"min_num_params": 1000, "transformer_layer_cls_to_wrap": "Block"}
        """,
    "strings-and-comments": """
        # default_auto_wrap_policy was renamed; see DDPFullyShardedStrategy docs
        note = "use unwrapped_params and fsdp_native no more"
        """,
    "attribute-of-an-unrelated-object": """
        config.activation_checkpointing = True
        other.configure_sharded_model()
        """,
    "import-fallback-block": """
        try:
            from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy
        except ImportError:
            from torch.distributed.fsdp.wrap import (
                default_auto_wrap_policy as size_based_auto_wrap_policy,
            )
        """,
    "already-current": """
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        from lightning.pytorch import Trainer
        from lightning.pytorch.strategies import FSDPStrategy
        strategy = FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block})
        trainer = Trainer(strategy="fsdp", precision="16-mixed")
        policy = ModuleWrapPolicy({Block})
        """,
    "configure-sharded-model-outside-lightning": """
        class Plain:
            def configure_sharded_model(self):
                pass
        """,
    "partial-consumed-by-or-policy": """
        import functools
        from torch.distributed.fsdp.wrap import _or_policy, transformer_auto_wrap_policy
        policy = functools.partial(
            _or_policy,
            policies=[functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={B})],
        )
        """,
    "partial-called-as-a-function": """
        import functools
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={B})
        policy(module=m, recurse=False, nonwrapped_numel=0)
        """,
    "partial-with-a-function-local-import": """
        from functools import partial
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        def shard(model):
            from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy
            return FSDP(model, auto_wrap_policy=partial(lambda_auto_wrap_policy, lambda_fn=f))
        """,
    "fairscale-strategy-with-fairscale-only-argument": """
        from pytorch_lightning.strategies import DDPFullyShardedStrategy
        strategy = DDPFullyShardedStrategy(min_num_params=10, bucket_cap_mb=50)
        """,
    "fairscale-strategy-with-positional-argument": """
        from pytorch_lightning.strategies import DDPFullyShardedStrategy
        strategy = DDPFullyShardedStrategy(None, True)
        """,
    "fairscale-strategy-class-not-called": """
        import pytorch_lightning as pl
        strategy_class = pl.strategies.DDPFullyShardedStrategy
        """,
    "list-variable-is-not-a-class": """
        from lightning.pytorch.strategies import FSDPStrategy
        layers = [Block, Head]
        strategy = FSDPStrategy(activation_checkpointing=layers)
        """,
    "unsafe-fix-needs-opt-in": """
        from lightning.pytorch import Trainer
        trainer = Trainer(strategy="ddp_fully_sharded")
        """,
}


@pytest.mark.parametrize("name", NO_OPS)
def test_no_op(name):
    source = textwrap.dedent(NO_OPS[name])
    settings = FIX_UNSAFE if name.startswith("fairscale-strategy") else FIX
    assert run(source.encode(), settings).new_source is None


def test_cases_left_for_a_human_are_reported():
    for name, code in [
        ("partial-consumed-by-or-policy", "FSDP103"),
        ("list-variable-is-not-a-class", "FSDP208"),
        ("unsafe-fix-needs-opt-in", "FSDP205"),
    ]:
        findings = run(textwrap.dedent(NO_OPS[name]).encode(), FIX).findings
        assert [f.code for f in findings] == [code] and not findings[0].fixed, name


def test_unsafe_fix_applies_with_opt_in():
    got = migrate(NO_OPS["unsafe-fix-needs-opt-in"], FIX_UNSAFE)
    assert 'Trainer(strategy="fsdp")' in got


def test_lint_mode_reports_and_changes_nothing():
    before, _ = CASES["strategy-and-precision-keep-quotes"]
    outcome = run(textwrap.dedent(before).encode(), Settings())
    assert outcome.new_source is None
    assert [(f.code, f.line, f.fixable, f.fixed) for f in outcome.findings] == [
        ("FSDP204", 4, True, False),
        ("FSDP206", 5, True, False),
    ]


@pytest.mark.parametrize(
    ("select", "ignore", "codes"),
    [
        ((), (), {"FSDP204", "FSDP206"}),
        (("FSDP204",), (), {"FSDP204"}),
        ((), ("FSDP206",), {"FSDP204"}),
        (("FSDP2",), ("FSDP204",), {"FSDP206"}),
    ],
)
def test_select_and_ignore(select, ignore, codes):
    before, _ = CASES["strategy-and-precision-keep-quotes"]
    findings = run(
        textwrap.dedent(before).encode(), Settings(select=select, ignore=ignore)
    ).findings
    assert {f.code for f in findings} == codes


def test_opt_in_rule_only_when_selected():
    source = b"from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nm = FSDP(m)\n"
    assert run(source, Settings()).findings == []
    assert {f.code for f in run(source, Settings(select=("FSDP111",))).findings} == {"FSDP111"}


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_prefilter_lets_every_rules_example_through(rule):
    from codemods.runner import may_have_findings

    assert may_have_findings(rule.example.before.encode(), Settings(select=(rule.code,)))


@pytest.mark.parametrize(
    "source",
    [
        b"import torch\nx = torch.ones(2)\n",
        b"precision = 16\nstrategy = 'ddp'\n",
        b"from mylib import wrap\nwrap(x)\n",
        b"trainer = Trainer(precision=32)\n",
    ],
)
def test_prefilter_skips_code_that_cannot_have_findings(source):
    from codemods.runner import may_have_findings

    assert not may_have_findings(source, Settings())
