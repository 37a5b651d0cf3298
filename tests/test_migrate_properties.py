"""Property tests: generated legacy code (argument order, aliases, comments, line breaks,
nesting) migrates to code that parses, that a second run leaves alone, and that the lint
finds nothing fixable in."""

from __future__ import annotations

import ast

import libcst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codemods.engine.run import run
from codemods.settings import Settings

EVERY_FIX = Settings(fix=True, unsafe_fixes=True)
LINT = Settings()

IDENTIFIERS = st.sampled_from(["policy", "wrap_policy", "p", "auto", "layer_policy"])
COMMENTS = st.sampled_from(["", "  # keep me", "  # TODO: tune", "  # noqa: E501"])


@st.composite
def arguments(draw, pairs: list[tuple[str, str]]) -> str:
    """``pairs`` as keyword arguments in any order, one line or one per line, commented."""
    chosen = draw(st.permutations(pairs))
    if draw(st.booleans()):
        return ", ".join(f"{k}={v}" for k, v in chosen)
    lines = [f"    {k}={v},{draw(COMMENTS)}" for k, v in chosen]
    return "\n" + "\n".join(lines) + "\n"


@st.composite
def trainer_code(draw) -> str:
    package = draw(st.sampled_from(["lightning.pytorch", "pytorch_lightning", "lightning.fabric"]))
    cls = "Fabric" if package.endswith("fabric") else "Trainer"
    alias = draw(st.sampled_from([cls, f"{cls} as T"]))
    name = alias.split(" as ")[-1]
    pairs = [("devices", "2")]
    strategy = draw(
        st.sampled_from(['"fsdp_native"', "'fsdp_native_full_shard_offload'", '"fsdp"', None])
    )
    precision = draw(st.sampled_from(["16", '"16"', "'bf16'", '"32"', "64", None]))
    pairs += [("strategy", strategy)] if strategy else []
    pairs += [("precision", precision)] if precision else []
    call = f"{name}({draw(arguments(pairs))})"
    if draw(st.booleans()):  # nested in a function and a list
        return f"from {package} import {alias}\n\ndef make():\n    return [{call}]\n"
    return f"from {package} import {alias}\ntrainer = {call}\n"


@st.composite
def policy_code(draw) -> str:
    partial_import, partial = draw(
        st.sampled_from(
            [
                ("import functools\n", "functools.partial"),
                ("from functools import partial\n", "partial"),
                ("from functools import partial as bind\n", "bind"),
            ]
        )
    )
    policy_import, policy = draw(
        st.sampled_from(
            [
                (
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n",
                    "transformer_auto_wrap_policy",
                ),
                (
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy as twp\n",
                    "twp",
                ),
                ("import torch.distributed.fsdp.wrap as W\n", "W.transformer_auto_wrap_policy"),
            ]
        )
    )
    layers = draw(st.sampled_from(["{Block}", "{Block, Head}", "(Block,)"]))
    target = draw(IDENTIFIERS)
    partial_call = f"{partial}({policy}, transformer_layer_cls={layers})"
    consumer = draw(st.sampled_from(["FSDP", "FSDPStrategy"]))
    consumer_import = (
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        if consumer == "FSDP"
        else "from lightning.pytorch.strategies import FSDPStrategy\n"
    )
    extra = draw(st.sampled_from(["", ", activation_checkpointing=Block", ", cpu_offload=False"]))
    if consumer == "FSDP":
        extra = ""
        use = f"model = FSDP(model, auto_wrap_policy={target})\n"
    else:
        use = f"strategy = FSDPStrategy(auto_wrap_policy={target}{extra})\n"
    if draw(st.booleans()):  # the partial inline instead of through a name
        use = use.replace(f"auto_wrap_policy={target}", f"auto_wrap_policy={partial_call}")
        body = use
    else:
        body = f"{target} = {partial_call}{draw(COMMENTS)}\n{use}"
    return (
        partial_import
        + policy_import
        + consumer_import
        + "class Block: ...\nclass Head: ...\n"
        + body
    )


@st.composite
def custom_policy_code(draw) -> str:
    name = draw(st.sampled_from(["policy", "my_policy", "size_or_block"]))
    extra = draw(st.sampled_from(["", ", min_num_params=int(1e8)", ", *, threshold=10"]))
    body = draw(
        st.sampled_from(
            [
                "    return recurse or unwrapped_params >= 100\n",
                "    if recurse:\n        return True\n    return unwrapped_params > 10  # big\n",
                "    total = unwrapped_params\n    return recurse or total > 0\n",
            ]
        )
    )
    return f"def {name}(module, recurse, unwrapped_params{extra}):\n{body}"


@st.composite
def strategy_code(draw) -> str:
    package = draw(st.sampled_from(["pytorch_lightning", "lightning.pytorch"]))
    pairs = draw(
        st.lists(
            st.sampled_from(
                [
                    ("min_num_params", "1_000_000"),
                    ("cpu_offload", "True"),
                    ("reshard_after_forward", "False"),
                    ("flatten_parameters", "True"),
                    ("activation_checkpointing", "[Block]"),
                    ("bucket_cap_mb", "25"),  # no FSDPStrategy meaning: left for a human
                ]
            ),
            unique_by=lambda kv: kv[0],
            max_size=4,
        )
    )
    return (
        f"from {package}.strategies import DDPFullyShardedStrategy\n"
        "class Block: ...\n"
        f"strategy = DDPFullyShardedStrategy({draw(arguments(pairs))})\n"
    )


LEGACY_CODE = st.one_of(trainer_code(), policy_code(), custom_policy_code(), strategy_code())


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(LEGACY_CODE, min_size=1, max_size=3))
def test_migrated_code_parses_is_stable_and_has_nothing_fixable_left(snippets):
    source = "\n".join(snippets).encode()
    migrated = run(source, EVERY_FIX).new_source or source
    libcst.parse_module(migrated)
    ast.parse(migrated)
    assert run(migrated, EVERY_FIX).new_source is None, "a second run changes the code"
    leftovers = [f for f in run(migrated, LINT).findings if f.fixable]
    assert not leftovers, leftovers
