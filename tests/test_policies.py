"""Which modules each policy form selects, without a process group (runs on any torch)."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch.nn as nn

import compat.fsdp.wrap as cw
from compat import FSDPDeprecationWarning, policy_types
from compat.features import current
from compat.policies import adapt_policy_callable, module_classes, normalize_policy, select_modules
from tests.models import Block, Head, current_policy, is_block, legacy_policy, make_model

BLOCKS = ["blocks.0", "blocks.1", "blocks.2"]


# (legacy form through compat, expected warning code or None, selected names)
FORMS = {
    "class": (lambda: Block, None, BLOCKS),
    "class-set": (lambda: {Block, Head}, None, [*BLOCKS, "head"]),
    "class-list": (lambda: [Block], None, BLOCKS),
    "class-tuple": (lambda: (Block, Head), None, [*BLOCKS, "head"]),
    "module-wrap-policy": (lambda: cw.ModuleWrapPolicy({Block}), None, BLOCKS),
    "custom-policy": (lambda: cw.CustomPolicy(is_block), None, BLOCKS),
    "transformer-partial": (
        lambda: functools.partial(cw.transformer_auto_wrap_policy, transformer_layer_cls={Block}),
        "FSDP103",
        BLOCKS,
    ),
    "lambda-partial": (
        lambda: functools.partial(cw.lambda_auto_wrap_policy, lambda_fn=is_block),
        "FSDP104",
        BLOCKS,
    ),
    "size-min-num-params": (
        lambda: functools.partial(cw.size_based_auto_wrap_policy, min_num_params=500),
        "FSDP106",
        BLOCKS,
    ),
    "size-factory-old": (
        lambda: cw.size_based_auto_wrap_policy(min_num_params=500),
        "FSDP106",
        BLOCKS,
    ),
    "size-factory-new": (
        lambda: cw.size_based_auto_wrap_policy(min_nonwrapped_numel=500),
        None,
        BLOCKS,
    ),
    "size-small-threshold": (
        lambda: cw.size_based_auto_wrap_policy(min_nonwrapped_numel=100),
        None,
        ["embed", *(f"blocks.{i}.fc{j}" for i in range(3) for j in (1, 2))],
    ),
    # Legacy only where torch passes nonwrapped_numel (2.0+); on 1.13 it is the current name.
    "user-policy-unwrapped-params": (
        lambda: legacy_policy,
        "FSDP102" if current().policy_numel_kwarg == "nonwrapped_numel" else None,
        BLOCKS,
    ),
    "user-policy-nonwrapped-numel": (lambda: current_policy, None, BLOCKS),
    "always": (lambda: cw.always_wrap_policy, None, None),
}


@pytest.mark.parametrize("form", FORMS)
def test_policy_form_selects_the_expected_modules(form):
    build, code, expected = FORMS[form]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        selected = select_modules(make_model(), build())
    codes = {
        str(w.message).rsplit("[", 1)[-1].rstrip("]")
        for w in caught
        if issubclass(w.category, FSDPDeprecationWarning)
    }
    assert codes == ({code} if code else set())
    if expected is None:  # always_wrap: every module below the root
        expected = [name for name, _ in make_model().named_modules() if name]
    assert sorted(selected) == sorted(expected)


def test_size_based_selection_matches_torchs_own_policy():
    torch_wrap = pytest.importorskip("torch.distributed.fsdp.wrap")
    native = functools.partial(torch_wrap.size_based_auto_wrap_policy, min_num_params=500)
    via_compat = cw.size_based_auto_wrap_policy(min_nonwrapped_numel=500)
    assert select_modules(make_model(), native) == select_modules(make_model(), via_compat)


def test_backport_module_wrap_policy_selects_like_torchs():
    backport = policy_types._ModuleWrapPolicyBackport({Block, Head})
    assert sorted(select_modules(make_model(), backport)) == sorted([*BLOCKS, "head"])
    assert repr(backport) == "ModuleWrapPolicy({Block, Head})"


def test_backport_custom_policy_refuses_per_module_kwargs():
    backport = policy_types._CustomPolicyBackport
    policy = backport(lambda m: {"sharding_strategy": 1} if is_block(m) else False)
    with pytest.raises(NotImplementedError, match="torch >= 2.1"):
        select_modules(make_model(), policy)
    assert sorted(select_modules(make_model(), backport(is_block))) == BLOCKS


@pytest.mark.parametrize("form", ["class-set", "module-wrap-policy", "lambda-partial", "always"])
def test_nothing_inside_an_ignored_module_is_selected(form):
    model = make_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FSDPDeprecationWarning)
        selected = select_modules(model, FORMS[form][0](), ignored=[model.blocks[2]])
        everything = select_modules(make_model(), FORMS[form][0]())
    assert "blocks.1" in selected
    assert selected == [name for name in everything if not name.startswith("blocks.2")]


def test_an_ignored_modules_parameters_count_for_no_size():
    """As FSDP1 counts: a block with half its parameters ignored is too small to wrap."""
    model = make_model()
    policy = cw.size_based_auto_wrap_policy(min_nonwrapped_numel=500)
    selected = select_modules(model, policy, ignored=[model.blocks[0].fc1])
    assert selected == ["blocks.1", "blocks.2"]


def test_include_root():
    assert "" in select_modules(make_model(), cw.always_wrap_policy, include_root=True)
    assert "" not in select_modules(make_model(), cw.always_wrap_policy)


@pytest.mark.parametrize("call", ["keyword", "positional"])
def test_policies_accept_both_numel_spellings(call):
    module = nn.Linear(20, 20)  # 420 parameters
    if call == "positional":
        assert cw.size_based_auto_wrap_policy(module, False, 420, 400)
        assert not cw.size_based_auto_wrap_policy(module, False, 420, 500)
        return
    assert cw.size_based_auto_wrap_policy(
        module, False, nonwrapped_numel=420, min_nonwrapped_numel=400
    )
    legacy_call = functools.partial(
        cw.size_based_auto_wrap_policy,
        module,
        False,
        unwrapped_params=420,
        min_nonwrapped_numel=400,
    )
    if current().policy_numel_kwarg == "nonwrapped_numel":
        with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP102\]"):
            assert legacy_call()
    else:  # torch < 2.0 passes unwrapped_params itself: nothing to warn about
        with warnings.catch_warnings():
            warnings.simplefilter("error", FSDPDeprecationWarning)
            assert legacy_call()


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        (
            {"nonwrapped_numel": 1, "unwrapped_params": 1, "min_nonwrapped_numel": 1},
            "nonwrapped_numel.*unwrapped_params",
        ),
        (
            {"nonwrapped_numel": 1, "min_nonwrapped_numel": 1, "min_num_params": 1},
            "min_nonwrapped_numel.*min_num_params",
        ),
    ],
)
def test_both_spellings_is_a_type_error_naming_both(kwargs, names):
    with pytest.raises(TypeError, match=names):
        cw.size_based_auto_wrap_policy(nn.Linear(2, 2), False, **kwargs)


def test_default_auto_wrap_policy_import_warns_at_the_import_line():
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP101\]") as record:
        from compat.fsdp.wrap import default_auto_wrap_policy
    assert record[0].filename == __file__
    # torch 1.11's signature, its threshold spelled min_num_params (torch's own): no FSDP106.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert default_auto_wrap_policy(Block(), False, 544, min_num_params=500) is True
        assert default_auto_wrap_policy(Block(), False, 544, 600) is False
        configured = default_auto_wrap_policy(min_nonwrapped_numel=500)  # compat's spelling
    assert select_modules(make_model(), configured) == BLOCKS


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_policy"):
        cw.no_such_policy  # noqa: B018


def test_adapter_leaves_callables_in_the_installed_spelling_alone():
    native = current_policy if current().policy_numel_kwarg == "nonwrapped_numel" else legacy_policy
    assert adapt_policy_callable(native) is native
    assert adapt_policy_callable(max) is max  # no signature: passed through


def test_adapted_legacy_callable_keeps_a_readable_signature():
    if current().policy_numel_kwarg != "nonwrapped_numel":
        pytest.skip("this torch still passes unwrapped_params")
    with pytest.warns(FSDPDeprecationWarning, match="in your policy legacy_policy"):
        adapted = adapt_policy_callable(legacy_policy)
    assert "nonwrapped_numel" in str(__import__("inspect").signature(adapted))
    assert adapted(module=nn.Linear(2, 2), recurse=False, nonwrapped_numel=600)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Block(), "got an instance of Block; pass the class Block itself"),
        ({Block, Head()}, "got an instance of Head"),
        (int, "expects nn.Module subclasses, got <class 'int'>"),
        ("Block", "expects nn.Module subclasses, got 'Block'"),
        (set(), "empty collection"),
    ],
)
def test_class_validation_errors(value, message):
    with pytest.raises(TypeError, match=message):
        module_classes(value, "auto_wrap_policy")


def test_normalize_refuses_a_module_instance():
    with pytest.raises(TypeError, match="got an instance of Block; pass the class Block"):
        normalize_policy(Block())


@pytest.mark.parametrize("value", [42, "policy", 3.5])
def test_normalize_refuses_what_is_no_policy(value):
    with pytest.raises(TypeError, match="auto_wrap_policy expects a module class"):
        normalize_policy(value)


def _block_policy(module, recurse, *args, **kwargs):
    return recurse or isinstance(module, Block)


def test_fsdp_policy_subclass_warns_at_its_definition_and_selects_like_its_callable():
    with pytest.warns(
        FSDPDeprecationWarning,
        match=r"\(class BlockPolicy\) \[FSDP105\]",
    ) as record:

        class BlockPolicy(cw._FSDPPolicy):
            @property
            def policy(self):
                return _block_policy

    assert record[0].filename == __file__
    assert sorted(select_modules(make_model(), BlockPolicy())) == BLOCKS
    assert BlockPolicy()(module=Block(), recurse=False, nonwrapped_numel=1) is True


def test_fsdp_policy_subclass_without_a_policy_says_so():
    with pytest.warns(FSDPDeprecationWarning):

        class Incomplete(cw._FSDPPolicy):
            pass

    with pytest.raises(NotImplementedError, match="Incomplete must define the `policy` property"):
        select_modules(make_model(), Incomplete())
