"""FSDP103: where a policy partial goes decides its fix, and a finding without one says why.

The shapes are those of real training code: a helper of a recipe's policies package that
returns the partial to callers in other modules, a model-wrapping helper returning it in
a tuple, a partial assigned to a name nothing reads, one kept in a keyword dict, and one
called with the policy's arguments. ``ModuleWrapPolicy`` is taken by
``auto_wrap_policy=`` from torch 2.0 and called like the partial from 2.2, so the range's
floor decides. Both detectors (libcst's, which fixes, and the ``ast`` lint) say the same.
"""

from __future__ import annotations

import textwrap

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

HELPER = """\
import functools

from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

from .layers import DecoderBlock


def decoder_wrap_policy():
    wrap_policy = functools.partial(
        transformer_auto_wrap_policy,
        transformer_layer_cls={
            DecoderBlock,
        },
    )

    return wrap_policy
"""
PAIR = """\
from functools import partial

from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


def wrap_policy_for(kls):
    wrap_policy = partial(transformer_auto_wrap_policy, transformer_layer_cls=kls)

    return wrap_policy, None
"""
UNREAD = """\
import functools

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


def shard(model, block_cls):
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    return FSDP(model, device_id=0)
"""
IN_A_DICT = """\
import functools

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


def shard(model, layer_classes):
    auto_wrap_policy = None
    if layer_classes:
        auto_wrap_policy = functools.partial(
            transformer_auto_wrap_policy, transformer_layer_cls=set(layer_classes)
        )
    fsdp_args = dict(auto_wrap_policy=auto_wrap_policy, device_id=0)
    return FSDP(model, **fsdp_args)
"""
CALLED = """\
import functools

from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


def wrapped_children(model, block_cls):
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    return [m for m in model.children() if policy(module=m, recurse=False, nonwrapped_numel=0)]
"""
PASSED = """\
import functools

from torch.distributed.fsdp.wrap import _recursive_wrap, transformer_auto_wrap_policy


def wrap_blocks(model, block_cls, wrapper_cls):
    return _recursive_wrap(
        model,
        auto_wrap_policy=functools.partial(
            transformer_auto_wrap_policy,
            transformer_layer_cls={block_cls},
        ),
        wrapper_cls=wrapper_cls,
        ignored_modules=set(),
        ignored_params=set(),
        only_wrap_children=True,
    )
"""
RETURNED = (
    "the policy is returned to the callers of `{}()`, which this file does not all show: "
    "`ModuleWrapPolicy` is called like the partial only from torch 2.2"
)


def _outcome(source: str, span: str, unsafe: bool = True):
    releases = Releases.parse(torch=span)
    settings = Settings(select=("FSDP103",), releases=releases)
    fixing = Settings(select=("FSDP103",), releases=releases, fix=True, unsafe_fixes=unsafe)
    (found,) = run(source.encode(), settings).findings
    (linted,) = lint(source.encode(), settings)
    assert (linted.fixable, linted.unsafe, linted.no_fix) == (
        found.fixable,
        found.unsafe,
        found.no_fix,
    )
    return found, run(source.encode(), fixing).new_source


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (HELPER, RETURNED.format("decoder_wrap_policy")),
        (PAIR, RETURNED.format("wrap_policy_for")),
        (
            CALLED,
            "`policy` is called on line 8: `ModuleWrapPolicy` is called like the partial "
            "only from torch 2.2",
        ),
    ],
    ids=["helper", "tuple", "called"],
)
def test_below_torch_2_2_a_policy_passed_on_or_called_is_left_with_why(source, why):
    finding, new = _outcome(source, "2.0..")
    assert not finding.fixable and finding.no_fix == why
    assert new is None


@pytest.mark.parametrize(
    ("source", "unsafe"),
    [(HELPER, True), (PAIR, True), (CALLED, False)],
    ids=["helper", "tuple", "called"],
)
def test_from_torch_2_2_it_is_fixed(source, unsafe):
    finding, new = _outcome(source, "2.2..")
    assert finding.fixable and finding.unsafe is unsafe and finding.no_fix is None
    # an unsafe fix says, in its finding, what it changes (no longer a partial)
    assert ("(unsafe: the policy is returned to the callers of" in finding.message) is unsafe
    assert ("no `functools.partial`" in finding.message) is unsafe
    assert (
        "ModuleWrapPolicy(" in new.decode() and "transformer_auto_wrap_policy" not in new.decode()
    )
    # a safe run leaves what only an unsafe fix rewrites
    assert (_outcome(source, "2.2..", unsafe=False)[1] is None) is unsafe


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (
            UNREAD,
            "the policy is assigned to `policy`, which nothing reads: a human decides "
            "whether it is still needed",
        ),
        (
            IN_A_DICT,
            "`auto_wrap_policy` is used on line 13, where the fix cannot tell whether a "
            "`ModuleWrapPolicy` object would do",
        ),
        (
            PASSED,
            "the policy is passed to `_recursive_wrap()`, which the fix does not know to take "
            "a `ModuleWrapPolicy` object",
        ),
    ],
    ids=["unread", "in-a-dict", "passed"],
)
@pytest.mark.parametrize("span", ["2.0..", "2.2.."])
def test_a_name_nothing_reads_or_one_the_fix_cannot_follow_is_left(source, why, span):
    finding, new = _outcome(source, span)
    assert not finding.fixable and finding.no_fix == why
    assert new is None


def test_a_policy_function_imported_inside_the_function_is_left_with_why():
    """A helper importing torch's policies locally (as PEFT-style helpers do)."""
    source = textwrap.dedent(
        """\
        import functools


        def peft_wrap_policy(model, cls):
            from torch.distributed.fsdp.wrap import _or_policy, transformer_auto_wrap_policy

            wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={cls})
            return functools.partial(_or_policy, policies=[wrap])
        """
    )
    finding, new = _outcome(source, "2.2..")
    assert not finding.fixable and new is None
    assert finding.no_fix.startswith("its policy function is imported inside a function")


def test_a_called_policy_object_answers_as_the_partial_did():
    """What the called shape's fix relies on, on the installed torch (2.2 or later)."""
    torch = pytest.importorskip("torch")
    from torch.distributed.fsdp import wrap

    if not callable(getattr(wrap, "ModuleWrapPolicy", None)) or "__call__" not in vars(
        wrap.ModuleWrapPolicy
    ):
        pytest.skip("ModuleWrapPolicy is called like the partial from torch 2.2")
    new = _outcome(CALLED, "2.2..")[1].decode()
    namespaces = [{}, {}]
    exec(compile(CALLED, "old.py", "exec"), namespaces[0])
    exec(compile(new, "new.py", "exec"), namespaces[1])
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))
    old_pick = namespaces[0]["wrapped_children"](model, torch.nn.Linear)
    new_pick = namespaces[1]["wrapped_children"](model, torch.nn.Linear)
    assert old_pick == new_pick == [model[0], model[2]]
    policy = wrap.ModuleWrapPolicy({torch.nn.Linear})
    assert policy(module=model, recurse=True, nonwrapped_numel=0) is True


def test_the_helper_fix_keeps_the_layout():
    new = _outcome(HELPER, "2.2..")[1].decode()
    assert new == textwrap.dedent(
        """\
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        from .layers import DecoderBlock


        def decoder_wrap_policy():
            wrap_policy = ModuleWrapPolicy(
                {
                    DecoderBlock,
                },
            )

            return wrap_policy
        """
    )


COMBINED = """\
import functools

from torch.distributed.fsdp.wrap import _or_policy, lambda_auto_wrap_policy
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


def combined_policy(block_cls):
    blocks = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    leaves = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: not list(m.children()))
    return functools.partial(_or_policy, policies=[blocks, leaves])
"""


_CUSTOM_POLICY_NOT_CALLED_ALIKE = (
    "`leaves` goes to `_or_policy` on line 10, which calls each policy: a "
    "`CustomPolicy` object cannot be called like the partial"
)


@pytest.mark.parametrize(
    ("code", "span", "why"),
    [
        (
            "FSDP103",
            "2.0..",
            "`blocks` goes to `_or_policy` on line 10, which calls each policy: "
            "`ModuleWrapPolicy` is called like the partial only from torch 2.2",
        ),
        ("FSDP103", "2.2..", None),
    ],
)
def test_a_policy_that_or_policy_calls_is_fixed_where_the_object_is_called_alike(code, span, why):
    """torch's ``_or_policy`` calls each of its ``policies`` with the policy's arguments."""
    settings = Settings(select=(code,), releases=Releases.parse(torch=span))
    (found,) = run(COMBINED.encode(), settings).findings
    assert lint(COMBINED.encode(), settings) == [found]  # both detectors agree
    assert found.fixable is (why is None) and found.no_fix == why and not found.unsafe


@pytest.mark.parametrize(
    ("span", "no_fix"),
    [
        ("2.2..", None),
        ("2.1..", None),
        # Below CustomPolicy's release the releases are the reason for no fix, but the
        # advice to write CustomPolicy must still say it does not fit here.
        ("1.13..", "no fix runs on torch 1.13..latest: it needs torch 2.1"),
    ],
)
def test_custom_policy_advice_says_it_does_not_fit_a_called_partial_on_every_range(span, no_fix):
    settings = Settings(select=("FSDP104",), releases=Releases.parse(torch=span))
    (found,) = run(COMBINED.encode(), settings).findings
    assert lint(COMBINED.encode(), settings) == [found]  # both detectors agree
    assert found.message.endswith(f"({_CUSTOM_POLICY_NOT_CALLED_ALIKE})")
    assert not found.fixable and found.no_fix == no_fix


def test_or_policy_calls_the_fixed_policy_as_it_called_the_partial():
    """What the fix relies on, on the installed torch: the same units; `CustomPolicy` raises."""
    torch = pytest.importorskip("torch")
    from torch.distributed.fsdp import wrap

    if "__call__" not in vars(wrap.ModuleWrapPolicy):
        pytest.skip("ModuleWrapPolicy is called like the partial from torch 2.2")
    settings = Settings(select=("FSDP103",), releases=Releases.parse(torch="2.2.."), fix=True)
    new = run(COMBINED.encode(), settings).new_source.decode()
    assert "blocks = ModuleWrapPolicy({block_cls})" in new
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU()))
    picks = []
    for text in (COMBINED, new):
        namespace: dict = {}
        exec(compile(text, "policy.py", "exec"), namespace)
        policy = namespace["combined_policy"](torch.nn.Linear)
        picks.append(
            [
                policy(module=m, recurse=r, nonwrapped_numel=0)
                for m in model.modules()
                for r in (True, False)
            ]
        )
    assert picks[0] == picks[1]
    with pytest.raises(TypeError):
        wrap._or_policy(model, False, 0, policies=[wrap.CustomPolicy(lambda module: True)])
