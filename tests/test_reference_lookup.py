"""Which old name a qualified name refers to: ``codemods.rules.index.Index.reference``.

FairScale's ``fairscale.nn.wrap`` is a subpackage and, re-exported by ``fairscale.nn``,
the function ``wrap``; ``fairscale.nn.wrap.auto_wrap`` is a module and the function
``auto_wrap``. A name inside such a module is not a use of the function.
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.rules.index import INDEX
from codemods.settings import Settings


@pytest.mark.parametrize(
    ("qualified", "module", "code"),
    [
        ("fairscale.nn.wrap", False, "FSDP303"),  # `from fairscale.nn import wrap`
        ("fairscale.nn.wrap.wrap", False, "FSDP303"),
        ("fairscale.nn.wrap.enable_wrap", False, "FSDP302"),
        ("fairscale.nn.enable_wrap", False, "FSDP302"),
        ("fairscale.nn.wrap.auto_wrap", False, "FSDP304"),
        ("fairscale.nn.wrap.auto_wrap.enable_wrap", False, "FSDP302"),
        ("fairscale.nn.auto_wrap", False, "FSDP304"),
        ("fairscale.nn.default_auto_wrap_policy", False, "FSDP305"),
        ("fairscale.nn.checkpoint_wrapper", False, "FSDP306"),
        ("fairscale.nn.FullyShardedDataParallel", False, "FSDP301"),
        # Inside the modules: not the functions.
        ("fairscale.nn.wrap.config_auto_wrap_policy", False, None),
        ("fairscale.nn.wrap.auto_wrap.ConfigAutoWrap", False, None),
        ("fairscale.nn.wrap.auto_wrap.ConfigAutoWrap.in_autowrap_context", False, None),
        # The modules themselves, where they certainly are modules (`import a.b`, `a.b.x`).
        ("fairscale.nn.wrap", True, None),
        ("fairscale.nn.wrap.auto_wrap", True, None),
        # An ordinary class keeps matching what is inside it (`Old.attribute`).
        ("fairscale.nn.FullyShardedDataParallel.state_dict_type", False, "FSDP301"),
    ],
)
def test_reference(qualified, module, code):
    found = INDEX.reference(qualified, module=module)
    assert (found and found[1].code) == (code or None)


def _codes(source: str) -> list[str]:
    return [f.code for f in run(source.encode(), Settings()).findings]


@pytest.mark.parametrize(
    "source",
    [
        "import fairscale.nn.wrap\n",
        "import fairscale.nn.wrap.auto_wrap\n",
        "import fairscale.nn.wrap.auto_wrap as aw\nx = aw.ConfigAutoWrap\n",
        "import fairscale.nn.wrap as fw\npolicy = fw.config_auto_wrap_policy\n",
        "import fairscale.nn\npolicy = fairscale.nn.wrap.config_auto_wrap_policy\n",
        "from fairscale.nn.wrap.auto_wrap import ConfigAutoWrap\n",
        "from fairscale.nn.wrap import config_auto_wrap_policy\n",
    ],
)
def test_module_uses_are_not_function_uses(source):
    assert _codes(source) == []


@pytest.mark.parametrize(
    ("source", "codes"),
    [
        ("from fairscale.nn import wrap\nblock = wrap(block)\n", ["FSDP303", "FSDP303"]),
        ("import fairscale.nn\nblock = fairscale.nn.wrap(block)\n", ["FSDP303"]),
        ("import fairscale.nn.wrap as fw\nblock = fw.wrap(block)\n", ["FSDP303"]),
        (
            "import fairscale.nn.wrap as fw\nwith fw.enable_wrap(wrapper_cls=W):\n    pass\n",
            ["FSDP302"],
        ),
        ("from fairscale.nn.wrap import auto_wrap\nm = auto_wrap(m)\n", ["FSDP304", "FSDP304"]),
    ],
)
def test_function_uses_are_found(source, codes):
    assert _codes(source) == codes
