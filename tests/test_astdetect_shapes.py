"""The ``ast`` halves agree with libcst on shapes the rule examples do not hold.

Each source is linted both ways (see ``tests/test_astdetect.py``): the findings must be
the same, and the ``ast`` side must decide the source, or leave it to libcst where it is
marked so (a shape the ``ast`` half does not model: parentheses around a reported
argument, where libcst's argument starts though a node's own position leaves them out;
``del`` of a name it follows; a subscripted import).
"""

from __future__ import annotations

import sys

import pytest

from codemods.astlint.lint import Undecided, lint
from codemods.engine.run import run
from codemods.settings import Settings

#: A ``match`` binding ``m`` (Python 3.10+: on 3.9 the case goes without it).
_MATCH_M = "    match x:\n        case [m]:\n            pass\n" * (sys.version_info >= (3, 10))

_DM = "from torch.distributed.tensor import distribute_module\n"
_TWO = "def f(a, b): pass\n"
_FOUND = "distribute_module(m, mesh, output_fn=lambda a, b: 1)\n"
_FS = "from torch.distributed.fsdp import fully_shard\n"
_USE = "model.set_reduce_scatter_divide_factor(3)\n"
_CK = (
    "import functools\nfrom functools import partial\n"
    "from torch.utils.checkpoint import checkpoint, checkpoint_sequential\n"
    "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n"
)
_FSDP = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
_DCP = (
    "from functools import partial\n"
    "from torch.distributed.checkpoint import save_state_dict, load_state_dict\n"
)
_SET = "from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_state_dict\n"

_SDT = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType\n"
_SDT_BLOCKS = (
    "import torch\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP,"
    " StateDictType, FullStateDictConfig\n"
    "def save(model):\n"
    "    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
    "        sd = model.state_dict()\n"
    "    # after\n"
    "    return sd\n"
    "def save2(model):\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd = model.state_dict()\n"
    "        # inside\n"
    "    return sd\n"
    "def save3(model):\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd = model.state_dict()\n"
    "\n"
    "        # inside after blank\n"
    "    return sd\n"
    "def save4(model):\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        model.load_state_dict(sd)\n"
    "  # odd\n"
    "    return sd\n"
    "def save7(model):\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,"
    " FullStateDictConfig(True, True)):\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,"
    " FullStateDictConfig(rank0_only=True)):\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT) as x:\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT), other():\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd = model.state_dict(); x = 1\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT): sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd = other.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        model.load_state_dict(state_dict=sd)\n"
    "    with FSDP.state_dict_type(model.inner, StateDictType.FULL_STATE_DICT):\n"
    "        model.inner.load_state_dict(sd)\n"
    "    with FSDP.state_dict_type(module=model, state_dict_type=StateDictType.FULL_STATE_DICT):\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, None, None):\n"
    "        sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, **kw):\n"
    "        sd = model.state_dict()\n"
    "    FSDP.set_state_dict_type(model, StateDictType.FULL_STATE_DICT)\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        if x:\n"
    "            sd = model.state_dict()\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd: dict = model.state_dict()\n"
    "# end comment\n"
)
_SDT_NAMED = (
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP,"
    " StateDictType, FullStateDictConfig\n"
    "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
    "cfg = FullStateDictConfig(offload_to_cpu=False, rank0_only=False)\n"
    "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
    "    sd = model.state_dict()\n"
    "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, state_dict_config=cfg):\n"
    "    model.load_state_dict(sd)\n"
    "def f():\n"
    "    def get_model_state_dict(): pass\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd = model.state_dict()\n"
    "    StateDictOptions = 1\n"
    "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        model.load_state_dict(sd)\n"
)
_SDT_ASYNC = (
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType\n"
    "async def g():\n"
    "    async with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
    "        sd = model.state_dict()\n"
    "with (FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT)):\n"
    "    sd = model.state_dict()\n"
)
#: (id, source, decided): ``decided`` False where the file must go to libcst.
SHAPES = [
    # FSDP126: which functions are visible, where the argument is
    ("126-positional", _DM + _TWO + "distribute_module(m, mesh, None, f, lambda a, b: 1)\n", True),
    ("126-paren-second", _DM + _TWO + "distribute_module(m, mesh, None, f, (f))\n", False),
    ("126-paren-first", _DM + _TWO + "distribute_module((f), mesh, None, f, f)\n", True),
    (
        "126-comment-paren",
        _DM + _TWO + "distribute_module(m, mesh, None,  # c(\n    f, output_fn=(lambda a, b: 1))\n",
        True,
    ),
    (
        "126-split-lines",
        _DM + _TWO + "distribute_module(\n    m,  # model (\n    mesh, None, f, f)\n",
        True,
    ),
    (
        "126-bound-later",
        _DM + _TWO + "def g():\n    distribute_module(m, mesh, input_fn=f)\n    f = 2\n" + _FOUND,
        True,
    ),
    (
        "126-rebound",
        _DM + _TWO + "f = deco(f)\ndistribute_module(m, mesh, input_fn=f)\n" + _FOUND,
        True,
    ),
    (
        "126-class-body",
        _DM
        + "class C:\n    def f(a, b): pass\n    x = distribute_module(m, mesh, input_fn=f)\n"
        + "    def g(self):\n        distribute_module(m, mesh, input_fn=f, output_fn=self.f)\n",
        True,
    ),
    (
        "126-arities",
        _DM
        + "def f(a, b, *, c): pass\nasync def h(a, /, b): pass\ndef k(a, b, **kw): pass\n"
        + "distribute_module(m, mesh, input_fn=f, output_fn=h)\n"
        + "distribute_module(m, mesh, input_fn=k, output_fn=lambda a, *b: 1)\n"
        + "distribute_module(m, mesh, *rest, input_fn=lambda a, b: 1)\n"
        + "distribute_module(m, mesh, None, *rest, lambda a, b: 1)\n",
        True,
    ),
    (
        "126-global-nonlocal",
        _DM
        + "def g():\n    global f\n    def f(a, b): pass\ndistribute_module(m, mesh, input_fn=f)\n"
        + "def h():\n    def f(x, y): pass\n    def i():\n        nonlocal f\n"
        + "        distribute_module(m, mesh, input_fn=f)\n"
        + "    return [distribute_module(m, mesh, input_fn=f) for f in fs]\n",
        True,
    ),
    ("126-deleted", _DM + _TWO + "del f\ndistribute_module(m, mesh, input_fn=f)\n", False),
    (
        "126-noqa-fallback",
        "from torch.distributed._tensor.api import distribute_module as dm\n"
        + _TWO
        + "dm(m, mesh, None, f, f)  # noqa: FSDP126\n"
        + "try:\n    dm(m, mesh, None, f, f)\nexcept ImportError:\n    pass\n",
        True,
    ),
    # FSDP128: which keys name objects, where the dict is
    (
        "128-keys",
        _SET
        + "set_model_state_dict(model, {model.enc: sd, blocks[0]: x, f(): y, True: z, enc: w})\n"
        + "set_model_state_dict(model, {None: sd})\nset_model_state_dict(model, {X: sd})\n"
        + "set_model_state_dict(model, {**a})\nset_model_state_dict(model, {a: 1, **b})\n"
        + "set_model_state_dict(model, {})\nset_model_state_dict(model, {'a': 1})\n"
        + "set_model_state_dict(model, {...: 1})\n"
        + "set_model_state_dict(model, {False: 1, (a): 2})\n",
        True,
    ),
    (
        "128-arguments",
        _SET
        + "set_state_dict(model, opt, model_state_dict={a: 1}, optim_state_dict={})\n"
        + "set_state_dict(model, opt, {a: 1}, {})\n"
        + "set_model_state_dict(model,\n    {a: 1})\nset_model_state_dict(*x, {a: 1})\n"
        + "set_model_state_dict(model, dict(a=1))\n",
        True,
    ),
    ("128-paren", _SET + "set_model_state_dict(model, ({a: 1}))\n", False),
    # FSDP125: which block a `fully_shard` call is in, what comes between it and a use
    (
        "125-one-line",
        _FS + "model = fully_shard(model); model.set_reduce_scatter_divide_factor(2)\n" + _USE,
        True,
    ),
    (
        "125-suite",
        _FS
        + "if c: model = fully_shard(model); model.set_reduce_scatter_divide_factor(2)\n"
        + _USE,
        True,
    ),
    (
        "125-elif-else",
        _FS
        + "def f(model):\n    model.set_reduce_scatter_divide_factor(1)\n    if a:\n        pass\n"
        + "    elif b: fully_shard(model)\n    else:\n        fully_shard(model)\n"
        + "        model.set_reduce_scatter_divide_factor(3)\n"
        + "    model.set_reduce_scatter_divide_factor(2)\n    model = other(model)\n"
        + "    model.set_reduce_scatter_divide_factor(4)\n"
        + "    g = lambda: model.set_reduce_scatter_divide_factor(5)\n"
        + "    [model.set_reduce_scatter_divide_factor(6) for _ in x]\n",
        True,
    ),
    (
        "125-blocks",
        _FS
        + "def f(model):\n    for m in model.layers:\n        fully_shard(module=m)\n"
        + "        m.set_reduce_scatter_divide_factor(2)\n    else:\n"
        + "        m.set_reduce_scatter_divide_factor(3)\n    with ctx:\n"
        + "        model = fully_shard(model)\n    model.set_reduce_scatter_divide_factor(4)\n"
        + "    try:\n        fully_shard(model)\n"
        + "        model.set_reduce_scatter_divide_factor(5)\n"
        + "    except ImportError:\n        pass\n    try:\n        fully_shard(model)\n"
        + "    except ValueError as model:\n        model.set_reduce_scatter_divide_factor(6)\n"
        + "    finally:\n        model.set_reduce_scatter_divide_factor(7)\n"
        + "    print(model.set_reduce_scatter_divide_factor(8))\n"
        + "    h = model.set_reduce_scatter_divide_factor\n",
        True,
    ),
    (
        "125-calls",
        _FS
        + "m = fully_shard(m)\nm = fully_shard(m)\nm.set_reduce_scatter_divide_factor(2)\n"
        + "(fully_shard(m)).set_reduce_scatter_divide_factor(2)\n"
        + "fully_shard(m).set_reduce_scatter_divide_factor(2)  # noqa: FSDP125\n"
        + "a = b = fully_shard(m)\na.set_reduce_scatter_divide_factor(1)\n"
        + "fully_shard(*ms)\nm.set_reduce_scatter_divide_factor(9)\n",
        True,
    ),
    (
        "125-scopes",
        _FS
        + "class C:\n    m = fully_shard(m)\n    m.set_reduce_scatter_divide_factor(2)\n"
        + "    def g(self):\n        m.set_reduce_scatter_divide_factor(2)\n"
        + "@deco(m := 3)\ndef k(m):\n    fully_shard(m)\n"
        + "    m.set_reduce_scatter_divide_factor(2)\n"
        + "    @deco(m := 3)\n    def k2(): pass\n    m.set_reduce_scatter_divide_factor(3)\n"
        + _MATCH_M
        + "    m.set_reduce_scatter_divide_factor(4)\n"
        + "def g(): m = fully_shard(m); m.set_reduce_scatter_divide_factor(4)\n"
        + "async def h(m):\n    fully_shard(m)\n    await m.set_reduce_scatter_divide_factor(4)\n"
        + "    async with x as m:\n        pass\n    m.set_reduce_scatter_divide_factor(5)\n",
        True,
    ),
    (
        "125-paren",
        _FS + "model = fully_shard(model)\n(model.set_reduce_scatter_divide_factor)(2)\n",
        True,
    ),
    (
        "125-deleted",
        _FS + "m = fully_shard(m)\ndel m\nm.set_reduce_scatter_divide_factor(2)\n",
        False,
    ),
    (
        "125-global-import",
        _FS
        + "def k():\n    global m\n    m = fully_shard(m)\n    import m\n"
        + "    m.set_reduce_scatter_divide_factor(3)\n",
        False,
    ),
    (
        "125-continued",
        _FS + "if x: \\\n    fully_shard(m)\nm.set_reduce_scatter_divide_factor(4)\n",
        False,
    ),
    # FSDP124: what passes use_reentrant, which checkpoint_fn is torch's
    (
        "124-arguments",
        _CK
        + "checkpoint(f, x)\ncheckpoint(f, x, use_reentrant=False)\ncheckpoint(f, *xs)\n"
        + "checkpoint(f, **kw)\ncheckpoint_sequential(fs, 2, x)\n"
        + "checkpoint_sequential(fs, 2, x, False)\ncheckpoint_sequential(fs, 2, *rest)\n"
        + "checkpoint_sequential(fs, *rest, 2)\n"
        + "try:\n    checkpoint(f, x)\nexcept ImportError:\n    pass\n"
        + "checkpoint(f, x)  # noqa: FSDP124\n",
        True,
    ),
    (
        "124-partials",
        _CK
        + "partial(checkpoint, use_reentrant=True)\npartial(checkpoint)\n"
        + "functools.partial(checkpoint_sequential, fs, 2, x, True)\n"
        + "functools.partial(checkpoint_sequential, fs)\npartial(*args)\n"
        + "partial(checkpoint_wrapper, checkpoint_fn=checkpoint)\n"
        + "partial(checkpoint_wrapper, offload_to_cpu=True)\n"
        + "partial(checkpoint_wrapper, m, None, checkpoint_sequential)\n",
        True,
    ),
    (
        "124-wrapper",
        _CK
        + "checkpoint_wrapper(m)\ncheckpoint_wrapper(m, checkpoint_fn=checkpoint)\n"
        + "checkpoint_wrapper(m, CheckpointImpl.NO_REENTRANT, checkpoint)\n"
        + "checkpoint_wrapper(m, CheckpointImpl.NO_REENTRANT, checkpoint, use_reentrant=False)\n"
        + "checkpoint_wrapper(m, checkpoint_fn=my_ckpt)\n"
        + "checkpoint_wrapper(m, checkpoint_fn=ckpts[0])\n"
        + "checkpoint_wrapper(m, checkpoint_fn=make().fn)\n",
        True,
    ),
    ("124-subscripted-import", _CK + "checkpoint_wrapper(m, checkpoint_fn=checkpoint[0])\n", False),
    # FSDP117: where optim_input is, whether optim is passed; FSDP118: Lightning's string
    (
        "117-arguments",
        _FSDP
        + "FSDP.full_optim_state_dict(model, optim, optim_input=params)\n"
        + "FSDP.full_optim_state_dict(model, optim, params)\n"
        + "FSDP.full_optim_state_dict(model, optim, params, True)\n"
        + "FSDP.full_optim_state_dict(model, optim_input=params)\n"
        + "FSDP.full_optim_state_dict(model, optim, optim_input=params, **kw)\n"
        + "FSDP.shard_full_optim_state_dict(sd, model, params, optim)\n"
        + "FSDP.rekey_optim_state_dict(sd, kt, model, params, optim=o)\n"
        + "FSDP.full_optim_state_dict(model, optim,  # (\n    params)\n"
        + "FSDP.sharded_optim_state_dict(model, optim, optim_input=params)\n",
        True,
    ),
    ("117-paren", _FSDP + "FSDP.full_optim_state_dict(model, optim, (params))\n", False),
    (
        "118-strings",
        "from lightning.pytorch.strategies import FSDPStrategy\n"
        + "FSDPStrategy(sharding_strategy='no_shard')\n"
        + "FSDPStrategy(sharding_strategy=b'NO_SHARD')\n"
        + "FSDPStrategy(sharding_strategy=f'NO_SHARD')\n"
        + "FSDPStrategy(sharding_strategy='FULL_SHARD')\nFSDPStrategy('NO_SHARD')\n",
        True,
    ),
    # FSDP120/FSDP121: which calls translate, where `save`/`load` mean something else
    (
        "120-translates",
        _DCP
        + "save_state_dict(sd, writer, coordinator_rank=0)\n"
        + "save_state_dict(sd, writer, pg, 0, False, planner)\n"
        + "partial(save_state_dict, storage_writer=w)\n",
        True,
    ),
    ("120-rank", _DCP + "save_state_dict(sd, writer, coordinator_rank=1)\n", True),
    ("120-too-many", _DCP + "save_state_dict(sd, writer, pg, 0, False, planner, extra)\n", True),
    ("120-star", _DCP + "save_state_dict(*a)\n", True),
    ("121-rank-flag", _DCP + "partial(load_state_dict, sd, r, coordinator_rank=True)\n", True),
    ("121-bare", _DCP + "x = load_state_dict\nload_state_dict(sd, r)\n", True),
    (
        "120-imported-save",
        _DCP + "from torch.distributed.checkpoint import save\nsave_state_dict(sd, w)\n",
        True,
    ),
    (
        "120-other-save",
        _DCP
        + "from torch.distributed.checkpoint.state_dict_saver import save\n"
        + "save_state_dict(sd, w)\n",
        True,
    ),
    ("120-own-save", _DCP + "def save(x): pass\nsave_state_dict(sd, w)\n", True),
    (
        "120-local-save",
        _DCP + "def f():\n    save = 1\n    save_state_dict(sd, w)\nsave_state_dict(sd, w)\n",
        True,
    ),
    ("120-deleted-save", _DCP + "save = 1\ndel save\nsave_state_dict(sd, w)\n", False),
    # FSDP115: which `state_dict_type` blocks the fix is certain about; comments by them
    ("115-blocks", _SDT_BLOCKS, True),
    ("115-named-config", _SDT_NAMED, True),
    ("115-async-parenthesized", _SDT_ASYNC, True),
    (
        "115-header-comment",
        _SDT
        + "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):  # c\n"
        + "    model.load_state_dict(sd)\n",
        True,
    ),
    (
        "115-leading-comment",
        _SDT
        + "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
        + "    # c\n    model.load_state_dict(sd)\n",
        True,
    ),
    (
        "115-comment-after-a-split-header",
        _SDT
        + "def f():\n    with FSDP.state_dict_type(\n        model, StateDictType.FULL_STATE_DICT\n"
        + "    ):  # c\n        sd = model.state_dict()\n    return sd\n",
        True,
    ),
    (
        "115-comments-both-ways",
        _SDT
        + "def f():\n    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
        + "        model.load_state_dict(sd)\n        # inside\n    # outside\n    return 1\n",
        False,
    ),
]


@pytest.mark.parametrize(("source", "decided"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_shape_agrees(source: str, decided: bool):
    expected = run(source.encode(), Settings()).findings
    assert expected, "each shape holds at least one finding"
    try:
        found = lint(source.encode(), Settings())
    except Undecided:
        assert not decided, "the ast side left the shape to libcst"
        return
    assert decided, "the ast side decided a shape it should leave to libcst"
    assert found == expected


@pytest.mark.parametrize("unsafe", [False, True])
def test_a_call_of_an_old_name_read_through_an_attribute_is_one_finding(unsafe):
    """``FullyShardedDataParallel(**kw).to(device)`` (fastNLP): the attribute and the call's
    name are one use; ``migrate --unsafe-fixes`` printed it twice."""
    from codemods.releases import Releases

    source = (
        b"from fairscale.nn import FullyShardedDataParallel\n"
        b"def setup(model, kwargs):\n"
        b"    return FullyShardedDataParallel(**kwargs).to('cpu')\n"
    )
    settings = Settings(releases=Releases.parse(torch="2.4.."), unsafe_fixes=unsafe, fix=True)
    found = [(f.line, f.col, f.code) for f in run(source, settings).findings]
    assert found == [(1, 26, "FSDP301"), (3, 12, "FSDP301")]
    assert found == [(f.line, f.col, f.code) for f in lint(source, settings)]


@pytest.mark.parametrize(
    ("binding", "taken"),
    [
        ("", False),
        ("def offload_wrapper(m):\n    return m\n", True),
        ("from mine import offload_wrapper\n", True),
        # NFKC folds the fullwidth letter into `o`: Python binds `offload_wrapper`
        ("\uff4fffload_wrapper = None\n", True),
        ("# offload_wrapper, named in a comment only\n", False),
    ],
)
def test_offload_to_cpu_is_fixed_only_where_offload_wrapper_is_free(binding, taken):
    """FSDP133 writes ``offload_wrapper`` only where the module binds no other; a module
    that does not spell the name (in ASCII) is not walked to learn so."""
    source = (_CK + binding + "checkpoint_wrapper(m, offload_to_cpu=True)\n").encode()
    for findings in (run(source, Settings()).findings, lint(source, Settings())):
        fixable = [f.fixable for f in findings if f.code == "FSDP133"]
        assert fixable == [not taken]
