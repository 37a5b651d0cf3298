"""FSDP306's fix needs torch 1.13: keyword inputs through torch's non-reentrant wrapper.

FairScale's ``checkpoint_wrapper`` took the wrapped module's keyword arguments
(``self.attn(x, x, x, need_weights=False)``, LAVIS's ViT blocks); torch 1.12's
``checkpoint_wrapper`` hands them to ``torch.utils.checkpoint``, which refuses keyword
arguments in either mode until 1.13. A range that starts at 1.12 keeps FairScale's,
with the reason.
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.releases import Releases
from codemods.settings import Settings

SOURCE = (
    b"from fairscale.nn.checkpoint import checkpoint_wrapper\nblock = checkpoint_wrapper(block)\n"
)


@pytest.mark.parametrize(("span", "fixed"), [("1.12..", False), ("1.13..", True), ("2.4..", True)])
def test_the_fix_starts_at_torch_1_13(span, fixed):
    settings = Settings(
        select=("FSDP306",), fix=True, unsafe_fixes=True, releases=Releases.parse(torch=span)
    )
    outcome = run(SOURCE, settings)
    assert [f.line for f in outcome.findings] == [1, 2]  # the import and the call
    assert all(f.fixed is fixed for f in outcome.findings)
    assert (outcome.new_source is not None) is fixed
    if not fixed:
        assert all("it needs torch 1.13" in str(f.no_fix) for f in outcome.findings)
