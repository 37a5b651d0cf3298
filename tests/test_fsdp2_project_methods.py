"""FSDP1-only methods a training loop calls on a model that another file builds.

The builder converts to ``fully_shard``; the loop's file names no FSDP class, so no rule
visits it, and ``model.clip_grad_norm_(1.0)`` there raises at the first step on the FSDP2
model. FSDP401 withholds the builder's conversion and names the loop's line and what
to write there (``codemods.cli.fsdp1_instance_uses``). The shape is the one met in
real projects (a ``build_model`` module and a ``train`` module), written by us.
"""

from __future__ import annotations

import ast

import pytest

from codemods.cli.fsdp1_instance_uses import instance_uses
from tests.test_fsdp2_project_reach import WRAPS, _findings, _project

LOOP = (
    "import torch\n\nfrom builder import build\n\n\n"
    "def train(model, batches):\n"
    "    model = build(model)\n"
    "    optim = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for batch in batches:\n"
    "{body}"
    "        optim.step()\n\n\n"
    'if __name__ == "__main__":\n'
    "    train(torch.nn.Linear(2, 2), [])\n"
)


@pytest.mark.parametrize(
    ("body", "named", "recipe"),
    [
        (
            "        model(batch).sum().backward()\n        model.clip_grad_norm_(1.0)\n",
            "train.py:11: `model.clip_grad_norm_`",
            "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)",
        ),
        (
            "        with model.no_sync():\n            model(batch).sum().backward()\n",
            "train.py:10: `model.no_sync`",
            "set_requires_gradient_sync(False)",
        ),
    ],
)
def test_a_loop_calling_fsdp1_methods_holds_the_builder(tmp_path, body, named, recipe):
    _project(tmp_path, {"train.py": LOOP.format(body=body), "builder.py": WRAPS})
    before = (tmp_path / "builder.py").read_text()
    (kept,) = _findings(tmp_path)["builder.py"]
    assert not kept["fixed"]
    assert kept["withheld"].startswith(f"fix withheld: {named} expects an FSDP1 model")
    assert recipe in kept["withheld"]
    assert (tmp_path / "builder.py").read_text() == before


@pytest.mark.parametrize(
    "body",
    [
        # torch's function and Accelerate's method, which take the parameters first
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "        accelerator.clip_grad_norm_(model.parameters(), 1.0)\n",
        "        with accelerator.no_sync(model):\n            pass\n",
        "        model(batch).sum().backward()\n",
    ],
)
def test_a_loop_without_fsdp1_methods_lets_the_builder_convert(tmp_path, body):
    _project(tmp_path, {"train.py": LOOP.format(body=body), "builder.py": WRAPS})
    (converted,) = _findings(tmp_path)["builder.py"]
    assert converted["fixed"] and not converted["withheld"]


def test_a_loop_the_builders_models_never_reach_holds_nothing(tmp_path):
    # Its own model, not the builder's: the loop imports nothing of the builder.
    loop = LOOP.format(body="        model.clip_grad_norm_(1.0)\n").replace(
        "from builder import build\n", ""
    )
    _project(tmp_path, {"train.py": loop.replace("build(model)", "model"), "builder.py": WRAPS})
    (converted,) = _findings(tmp_path)["builder.py"]
    assert converted["fixed"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("self.model.no_sync()", [(1, "self.model.no_sync")]),
        ("engine.no_sync(model)", []),  # FSDP1's takes no argument
        ("w = m._fsdp_wrapped_module", [(1, "m._fsdp_wrapped_module")]),
        ("get()._flat_param", [(1, "(...)._flat_param")]),
        ("import fsdp_utils\nfsdp_utils.clip_grad_norm_(m, 1.0)", []),  # a module's function
        ("from x import helper\nhelper.summon_full_params(m)", []),  # an imported object's
        ("m.clip_grad_norm_(max_norm=1.0)", [(1, "m.clip_grad_norm_")]),
        ("m.clip_grad_norm_(list(m.named_parameters()), 1.0)", [(1, "m.clip_grad_norm_")]),
        ("m.clip_grad_norm_(m.named_parameters(), 1.0)", []),
    ],
)
def test_instance_uses(source, expected):
    assert instance_uses(ast.parse(source)) == expected
