"""FSDP401's dual stack for the uses of a converted model: each dispatches on the flag.

Where a project's releases start before FSDP2, the wrapper call's statement becomes
``if HAS_FSDP2:`` FSDP2 code ``else:`` the FSDP1 call; the uses the plain form rewrites
(``no_sync``, ``clip_grad_norm_``, state dicts, ``isinstance`` tests, ``fsdp_modules``)
dispatch on the same flag, the FSDP1 branch as written. These pin the text; the runs of
both branches are in tests/test_fsdp2_dual_stack.py.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

import pytest
from pyflakes.checker import Checker

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

HEAD = (
    "import contextlib\n"
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
    "from model import Block\n\n\n"
    "def train(model, batches, last):\n"
    "    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
)
SETTINGS = Settings(
    fix=True, unsafe_fixes=True, select=("FSDP4",), releases=Releases.parse(torch="2.0..")
)


def _migrate(body: str) -> tuple[str, list]:
    outcome = run((HEAD + textwrap.indent(textwrap.dedent(body), "    ")).encode(), SETTINGS)
    findings = [f for f in outcome.findings if f.code == "FSDP401"]
    assert outcome.new_source is not None, [f.withheld for f in findings]
    return outcome.new_source.decode(), findings


FORMS = {
    "no_sync": (
        "with model.no_sync():\n    model(batches[0]).sum().backward()\n",
        "    with no_sync_like_fsdp1(model) if HAS_FSDP2 else model.no_sync():\n"
        "        model(batches[0]).sum().backward()\n",
    ),
    "no_sync-conditional": (
        "with model.no_sync() if not last else contextlib.nullcontext():\n    loss.backward()\n",
        # laid out on more lines where the line would be long, as formatters do
        "    with (\n        no_sync_like_fsdp1(model)\n        if HAS_FSDP2\n"
        "        else model.no_sync()\n    ) if not last else contextlib.nullcontext():\n"
        "        loss.backward()\n",
    ),
    "clip": (
        "norm = model.clip_grad_norm_(1.0)\n",
        "    if HAS_FSDP2:\n"
        "        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).full_tensor()\n"
        "    else:\n"
        "        norm = model.clip_grad_norm_(1.0)\n",
    ),
    "clip-in-a-header": (
        "if model.clip_grad_norm_(1.0) > 2:\n    print('clipped')\n",
        "    if (\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).full_tensor()\n"
        "        if HAS_FSDP2\n        else model.clip_grad_norm_(1.0)\n    ) > 2:\n",
    ),
    "isinstance": (
        "assert isinstance(model, (FSDP, torch.nn.Linear))\n",
        "    assert isinstance(model, (FSDPModule if HAS_FSDP2 else FSDP, torch.nn.Linear))\n",
    ),
    "fsdp_modules": (
        "units = FSDP.fsdp_modules(model)\n",
        "    units = (\n        [submodule for submodule in model.modules() "
        "if isinstance(submodule, FSDPModule)]\n"
        "        if HAS_FSDP2\n        else FSDP.fsdp_modules(model)\n    )\n",
    ),
    "state_dict": (
        "torch.save(model.state_dict(), 'model.pt')  # rank 0 saves\n",
        "    if HAS_FSDP2:\n"
        "        torch.save(get_model_state_dict(model, options=StateDictOptions("
        "full_state_dict=True)), 'model.pt')  # rank 0 saves\n"
        "    else:\n"
        "        torch.save(model.state_dict(), 'model.pt')  # rank 0 saves\n",
    ),
}


@pytest.mark.parametrize(("body", "written"), list(FORMS.values()), ids=list(FORMS))
def test_each_use_dispatches_with_its_fsdp1_form_as_written(body, written):
    new, (finding,) = _migrate(body)
    assert finding.fixed and written in new
    assert "    else:\n        model = FSDP(model, auto_wrap_policy=" in new  # the call too


def _pyflakes(source: str) -> set[str]:
    """What pyflakes says of ``source``, without line numbers."""
    checker = Checker(ast.parse(source))
    return {message.message % message.message_args for message in checker.messages}


@pytest.mark.parametrize("body", [body for body, _ in FORMS.values()], ids=list(FORMS))
def test_a_second_run_changes_nothing_and_pyflakes_finds_nothing_new(body):
    new, _ = _migrate(body)
    again = run(new.encode(), SETTINGS)
    assert again.new_source is None
    assert [f for f in again.findings if f.code == "FSDP401"] == []
    original = HEAD + textwrap.indent(textwrap.dedent(body), "    ")
    assert _pyflakes(new) <= _pyflakes(original)  # the fixtures' own unused names only


def test_the_fsdp2_names_come_from_the_try_and_the_helper_is_written_once():
    new, _ = _migrate(
        "with model.no_sync():\n    a.backward()\n"
        "with model.no_sync():\n    b.backward()\n"
        "torch.save(model.state_dict(), 'model.pt')\n"
    )
    block = new[new.index("try:") : new.index("HAS_FSDP2 =")]
    assert "get_model_state_dict" in block and "StateDictOptions" in block
    assert new.count("def no_sync_like_fsdp1(module):") == 1
    assert new.index("def no_sync_like_fsdp1(") < new.index("def train(")
    assert "import contextlib\n" in new  # the helper's decorator


def test_two_uses_on_one_line_dispatch_as_one_statement():
    new, _ = _migrate("print(model.clip_grad_norm_(1.0), model.clip_grad_norm_(2.0))\n")
    assert (
        "    if HAS_FSDP2:\n        print(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
        ".full_tensor(), torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0).full_tensor())\n"
        "    else:\n        print(model.clip_grad_norm_(1.0), model.clip_grad_norm_(2.0))\n"
    ) in new


def test_the_finding_names_each_dispatched_use_and_its_difference():
    _, (finding,) = _migrate(
        "with model.no_sync():\n    loss.backward()\nmodel.clip_grad_norm_(1.0)\n"
    )
    assert "the model's uses dispatch on `HAS_FSDP2` too: `model.no_sync()` at line 10" in (
        finding.message
    )
    assert "where FSDP1 restores what it was" in finding.message
    assert "`model.clip_grad_norm_(1.0)` at line 12 (`torch.nn.utils.clip_grad_norm_`" in (
        finding.message
    )


def test_the_finding_names_a_listing_and_its_difference():
    _, (finding,) = _migrate("units = FSDP.fsdp_modules(model)\n")
    assert (
        "`FSDP.fsdp_modules(model)` at line 10 (on FSDP2 the sharded modules themselves"
        in finding.message
    )


def test_a_use_the_plain_form_cannot_rewrite_still_keeps_the_file_fsdp1():
    outcome = run((HEAD + "    model.clip_grad_norm_(*limits)\n").encode(), SETTINGS)
    assert outcome.new_source is None
    [finding] = [f for f in outcome.findings if f.code == "FSDP401"]
    assert not finding.fixed and "model.clip_grad_norm_` at line 10" in finding.withheld


def test_a_module_level_call_gets_its_helper_before_the_if_not_inside():
    source = (
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n"
        "model = FSDP(model)\nwith model.no_sync():\n    loss.backward()\n"
    )
    new = run(source.encode(), SETTINGS).new_source.decode()
    assert "\n\n\n@contextlib.contextmanager\ndef no_sync_like_fsdp1(module):\n" in new
    assert "module.set_requires_gradient_sync(True)\n\n\nif HAS_FSDP2:\n" in new
    assert new.endswith(
        "if HAS_FSDP2:\n    model = fully_shard(model)\nelse:\n    model = FSDP(model)\n"
        "with no_sync_like_fsdp1(model) if HAS_FSDP2 else model.no_sync():\n    loss.backward()\n"
    )
    assert _pyflakes(new) <= _pyflakes(source)
    assert run(new.encode(), SETTINGS).new_source is None


def test_a_trainers_model_on_self_dispatches_in_its_other_methods():
    source = (
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
        "class Trainer:\n    def __init__(self, model):\n        self.model = FSDP(model)\n\n"
        "    def step(self, loss):\n        with self.model.no_sync():\n"
        "            loss.backward()\n        return self.model.clip_grad_norm_(1.0)\n"
    )
    new = run(source.encode(), SETTINGS).new_source.decode()
    assert (
        "        with no_sync_like_fsdp1(self.model) if HAS_FSDP2 else self.model.no_sync():\n"
        in (new)
    )
    assert (
        "        if HAS_FSDP2:\n"
        "            return torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)"
        ".full_tensor()\n"
        "        else:\n            return self.model.clip_grad_norm_(1.0)\n"
    ) in new
    assert _pyflakes(new) <= _pyflakes(source)


def test_a_statement_form_without_a_single_body_form_dispatches_the_whole_statement(
    monkeypatch,
):
    """The generic path, for statement forms other helpers add (state dict blocks...).

    ``no_sync``'s own form taken as such a form (its one-body context set aside): the
    FSDP2 branch is the plain form built from the statement, the FSDP1 one as written.
    """
    from codemods.rules.fsdp401 import decide

    plain = decide.rewrite

    def as_another_statement_form(engine, call, receiver):
        use = plain(engine, call, receiver)
        return None if use is None else dataclasses.replace(use, method="another_form")

    monkeypatch.setattr(decide, "rewrite", as_another_statement_form)
    new, (finding,) = _migrate(
        "loss = model(batches[0]).sum()\nwith model.no_sync():\n    loss.backward()\n"
    )
    assert finding.fixed and new.endswith(
        "    if HAS_FSDP2:\n"
        "        model.set_requires_gradient_sync(False)\n"
        "        try:\n            loss.backward()\n"
        "        finally:\n            model.set_requires_gradient_sync(True)\n"
        "    else:\n        with model.no_sync():\n            loss.backward()\n"
    )
    assert "`model.no_sync()` at line 11 (its plain form)" in finding.message
    assert run(new.encode(), SETTINGS).new_source is None


def test_fsdp1_checkpoint_blocks_with_an_fsdp2_form_dispatch_too():
    """A sharded block's FSDP2 form (its body alone) is FSDP1's full state dict on FSDP1."""
    source = textwrap.dedent(
        """\
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import StateDictType


        def f(model, optim):
            model = FSDP(model)
            with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
                state = model.state_dict()
                ostate = FSDP.optim_state_dict(model, optim)
            full = FSDP.optim_state_dict(model, optim)
            return state, ostate, full
        """
    )
    # the floor torch.distributed.checkpoint's state-dict functions need (2.2 and later)
    settings = SETTINGS.replace(releases=Releases.parse(torch="2.3.."))
    new = run(source.encode(), settings).new_source.decode()
    assert (
        "    if HAS_FSDP2:\n        state = model.state_dict()\n"
        "        ostate = get_optimizer_state_dict(model, optim)\n    else:\n"
        "        with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):\n"
        "            state = model.state_dict()\n"
        "            ostate = FSDP.optim_state_dict(model, optim)\n"
    ) in new
    assert (
        "    full = (\n        get_optimizer_state_dict(model, optim, "
        "options=StateDictOptions(full_state_dict=True))\n        if HAS_FSDP2\n"
        "        else FSDP.optim_state_dict(model, optim)\n    )\n"
    ) in new
    assert _pyflakes(new) <= _pyflakes(source)
    assert run(new.encode(), settings).new_source is None
