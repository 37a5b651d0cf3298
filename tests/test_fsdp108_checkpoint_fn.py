"""FSDP108 where the call passes ``checkpoint_fn``: what the default still decides, said.

torch ignores ``checkpoint_impl`` for the checkpointing when the caller passes a
checkpointing function (TransformerEngine's ``te.distributed.checkpoint``, say): that
function decides whether it reenters. The implementation then decides only how the
wrapped module's keyword inputs reach the function: packed into positional ones under
the reentrant default (before torch 2.2), as keywords since. Such a finding says so
(both detectors, calls and partials); the rest of FSDP108 is unchanged. The run below
checks the claim on the installed torch.
"""

from __future__ import annotations

import pytest
import torch

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.rules.fsdp108 import CUSTOM_FN
from codemods.settings import Settings

HEAD = (
    "import functools\n"
    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n"
)
SETTINGS = Settings(
    select=("FSDP108",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch="2.0..")
)


@pytest.mark.parametrize(
    ("line", "explained"),
    [
        ("w = checkpoint_wrapper(block, checkpoint_fn=my_checkpoint, use_reentrant=False)", True),
        ("w = functools.partial(checkpoint_wrapper, checkpoint_fn=my_checkpoint)", True),
        ("w = checkpoint_wrapper(block)", False),
        ("w = checkpoint_wrapper(block, preserve_rng_state=False)", False),
    ],
)
def test_a_call_with_its_own_checkpoint_fn_is_told_what_the_default_decides(line, explained):
    source = (HEAD + line + "\n").encode()
    outcome = run(source, SETTINGS)
    (found,) = outcome.findings
    assert found.message.endswith(f"({CUSTOM_FN})") == explained
    assert found.fixed  # the unsafe fix still states the implementation
    assert b"checkpoint_impl=CheckpointImpl.NO_REENTRANT" in outcome.new_source
    unfixed = SETTINGS.replace(fix=False)
    assert lint(source, unfixed) == run(source, unfixed).findings


def _received(impl_name: str) -> tuple[int, list[str]]:
    """What a checkpointing function of the caller's receives from the wrapper."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        checkpoint_wrapper,
    )

    seen: list = []

    def my_checkpoint(function, *args, **kwargs):
        seen.append((len(args), sorted(kwargs)))
        return function(*args, **kwargs)

    class Scale(torch.nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    wrapped = checkpoint_wrapper(
        Scale(), checkpoint_impl=getattr(CheckpointImpl, impl_name), checkpoint_fn=my_checkpoint
    )
    assert torch.equal(wrapped(torch.ones(2), scale=3.0), torch.full((2,), 3.0))
    return seen[0]


def _takes_checkpoint_fn() -> bool:
    import inspect

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    return "checkpoint_fn" in inspect.signature(checkpoint_wrapper).parameters


@pytest.mark.skipif(not _takes_checkpoint_fn(), reason="this torch's wrapper has no checkpoint_fn")
def test_torch_packs_keyword_inputs_for_its_function_only_where_reentrant():
    # Reentrant: `scale` travels packed among the positional inputs; else as a keyword.
    assert _received("REENTRANT") == (2, [])
    assert _received("NO_REENTRANT") == (1, ["scale"])
