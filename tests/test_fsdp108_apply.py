"""FSDP108 on ``apply_activation_checkpointing``: its default wrapper is ``checkpoint_wrapper``.

Reported where the call leaves the wrapper to the default or passes torch's
``checkpoint_wrapper`` itself; not where it passes a wrapper of its own (a partial that
states the implementation is FSDP108's own concern at the partial), nor for a partial
of it or a call that unpacks arguments. Both detectors agree; nothing is rewritten.
"""

from __future__ import annotations

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

HEAD = (
    "import functools\n"
    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
    "    CheckpointImpl,\n"
    "    apply_activation_checkpointing,\n"
    "    checkpoint_wrapper,\n"
    ")\n"
)
SETTINGS = Settings(
    select=("FSDP108",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch="2.0..")
)
MINE = "functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT)"


@pytest.mark.parametrize(
    ("call", "reported"),
    [
        ("apply_activation_checkpointing(model, check_fn=is_block)", True),
        ("apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper)", True),
        ("apply_activation_checkpointing(model, checkpoint_wrapper, is_block)", True),
        (f"apply_activation_checkpointing(model, checkpoint_wrapper_fn={MINE})", False),
        (f"apply_activation_checkpointing(model, {MINE}, is_block)", False),
        ("apply_activation_checkpointing(model, checkpoint_wrapper_fn=my_wrapper)", False),
        ("apply_activation_checkpointing(model, **options)", False),
        ("apply = functools.partial(apply_activation_checkpointing, check_fn=is_block)", False),
    ],
)
def test_the_default_wrapper_is_reported_and_left_for_a_human(call, reported):
    source = (HEAD + call + "\n").encode()
    outcome = run(source, SETTINGS)
    found = [f for f in outcome.findings if f.line == 7]
    assert len(found) == int(reported)
    if reported:
        assert not found[0].fixed and "checkpoint_wrapper_fn=functools.partial(" in found[0].no_fix
    assert outcome.new_source is None
    assert (
        lint(source, SETTINGS.replace(fix=False))
        == run(source, SETTINGS.replace(fix=False)).findings
    )
