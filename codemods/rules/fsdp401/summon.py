"""FSDP1's ``summon_full_params`` blocks that only read the model, as FSDP2 code, for FSDP401.

Tests check a restored model so::

    with FSDP.summon_full_params(model_a), FSDP.summon_full_params(model_b):
        torch.testing.assert_close(model_a.weight, model_b.weight)

FSDP2 has no such context; ports gather each unit for the block with ``unshard()`` and
give the memory back with ``reshard()`` (``FSDP2-PORTS.md`` row 19: torchtune's NF4
save, fairseq2). Each item becomes ``summon_full_params_like_fsdp1(model)``, a helper
written once per file (:mod:`codemods.rules.fsdp401.helpers`). Inside it every
parameter of the model is the full plain tensor, as in FSDP1's block (measured on torch
2.13, 2 gloo ranks); ``model.state_dict()`` still gives DTensor shards there, so a
block that asks more than parameters of the model keeps the file FSDP1. Only where the
block only reads: the model appears in it as ``model.<name>...`` chains (items too)
that end with a parameter, are not assigned or deleted, call no method but a few that
read a tensor, and read no gradient (``with_grads``) or FSDP1 state;
``recurse=True`` and ``writeback`` may be passed, nothing else.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.fsdp1_only import CHANGED_MEANING, FSDP1_ONLY
from codemods.rules.fsdp401.helpers import helper_names
from codemods.syntax.cst_nodes import dotted, find_all, is_plain_positional, keyword, literal
from codemods.syntax.lazy_libcst import cst

#: What the form does otherwise than FSDP1, for the converted call's finding.
DIFFERENCE = (
    "its `FSDP.summon_full_params(model)` blocks become `summon_full_params_like_fsdp1"
    "(model)`: each `FSDPModule` of the model `unshard()`ed for the block and "
    "`reshard()`ed after; nothing the block changes is written back (FSDP1's "
    "`writeback=True`), and under mixed precision the gather is in `param_dtype` "
    "(FSDP1: the full-precision parameters)"
)

#: Attributes a read block may not take from the model: gradients, FSDP1's own state
#: and what FSDP2 answers otherwise inside the block.
NOT_READS = frozenset({"grad", "data", "_parameters", *FSDP1_ONLY, *CHANGED_MEANING})


#: Tensor methods that read a parameter (a block calling others may change the model).
READ_METHODS = frozenset(
    {"detach", "clone", "cpu", "float", "double", "item", "tolist", "sum", "norm", "size"}
)


def form(engine: Engine, call: cst.Call) -> str | None:
    """``"summon"`` where the block only reads (:func:`reading_block`); queues the helper.

    The helper goes before the file's first converted call, written before this block.
    """
    if not reading_block(engine, call):
        return None
    helper_names(engine, ["summon"])
    return "summon"


def write(engine: Engine, call: cst.Call, updated: cst.Call, flag: str | None) -> cst.Call:
    """The helper's call on the model in ``call``'s place (``flag``: the dual stack's)."""
    helper = helper_names(engine, ["summon"])["summon"]
    if flag is None:
        engine.forget(call.func)
    model = updated.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return cst.Call(func=cst.Name(helper), args=[model])


def reading_block(engine: Engine, call: cst.Call) -> bool:
    """Whether ``call`` is an item of a ``with`` whose body only reads its model."""
    item = engine.parent(call)
    with_node = engine.parent(item) if isinstance(item, cst.WithItem) else None
    if not isinstance(with_node, cst.With) or item.asname is not None or not call.args:
        return False
    first, *rest = call.args
    model = dotted(first.value) if is_plain_positional(first) else None
    if model is None or with_node.asynchronous is not None:
        return False
    for arg in rest:
        value = literal(arg.value)
        allowed = {"recurse": (True,), "writeback": (True, False)}.get(keyword(arg) or "", ())
        if arg.star or value not in allowed or not isinstance(value, bool):
            return False
    return all(_read(engine, node) for node in find_all(with_node.body, _named(model)))


def _named(model: str):
    return lambda node: isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) == model


def _read(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` (the model) starts a chain of attributes and items only read.

    The chain ends with an attribute (``model[0].linear.weight``: a parameter, not a
    module passed on) that is not called, assigned or deleted.
    """
    chain, parent = node, engine.parent(node)
    while isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is chain:
        if isinstance(parent, cst.Attribute) and parent.attr.value in NOT_READS:
            return False
        chain, parent = parent, engine.parent(parent)
    if chain is node or not isinstance(chain, cst.Attribute):
        return False  # the model itself (or a module of it), passed on or rebound
    if isinstance(parent, cst.Call) and parent.func is chain:
        # a method of a parameter that only reads it (others may change the model)
        return chain.attr.value in READ_METHODS and isinstance(chain.value, cst.Attribute)
    return not _stored(engine, chain)


def _stored(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in what its statement assigns to (an item of a target too)."""
    child, parent = node, engine.parent(node)
    while parent is not None and not isinstance(parent, (cst.IndentedBlock, cst.Module)):
        if isinstance(parent, (cst.AssignTarget, cst.Del)):
            return True
        if isinstance(parent, (cst.AugAssign, cst.AnnAssign, cst.For, cst.WithItem)):
            if child is getattr(parent, "target", None) or child is getattr(parent, "asname", None):
                return True
        child, parent = parent, engine.parent(parent)
    return False
