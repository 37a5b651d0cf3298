"""The known causes of a difference between an FSDP1 run and its FSDP2 port.

Each cause is a port bug or a deliberate FSDP2 behaviour seen in real ports (torchtune,
fairseq2, torchtitan, verl, accelerate); a finding of the port checker names the one it
recognises, with what to write instead. Plain data: no torch.

Example:
    >>> CAUSES["left-on-meta"].title
    'a child left on meta'
    >>> sorted(CAUSES) == sorted(c.code for c in CAUSES.values())
    True
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    """One known cause of a difference.

    Attributes:
        code: A short stable name (``left-on-meta``), used in reports and JSON.
        title: What went wrong, in a few words.
        why: Why it happens.
        fix: What to write instead.
    """

    code: str
    title: str
    why: str
    fix: str


_ALL = (
    Cause(
        "left-on-meta",
        "a child left on meta",
        "tensors are still on the meta device after setup: a per-unit init that materialises "
        "only the unit's own tensors (to_empty(recurse=False), fairseq2's first port) leaves "
        "the unit's children on meta, and the first forward fails",
        "materialise the whole model after the last fully_shard (model.to_empty(device=...), "
        "then every module's own init), and check that no parameter or buffer is_meta",
    ),
    Cause(
        "non-persistent-buffer",
        "a non-persistent buffer left as to_empty garbage",
        "a buffer registered with persistent=False is in no state dict, so loading weights "
        "after to_empty leaves it uninitialised memory (a RoPE cache: torchtune's rope_init, "
        "verl's rotary_emb)",
        "recompute such buffers after to_empty (e.g. a rope_init()), or broadcast every buffer "
        "from rank 0",
    ),
    Cause(
        "missed-broadcast",
        "a missed rank-0 broadcast",
        "the port agrees with the reference on rank 0's part and differs elsewhere: FSDP1's "
        "sync_module_states broadcast rank 0's parameters and buffers, fully_shard "
        "communicates nothing and keeps each rank's own values",
        "before fully_shard, dist.broadcast(t.detach(), src=0) every parameter and buffer; or "
        "load rank 0's full state dict with StateDictOptions(full_state_dict=True, "
        "broadcast_from_rank0=True) and broadcast the buffers",
    ),
    Cause(
        "root-arguments",
        "the root sharded without the units' arguments",
        "fully_shard calls of one model got different mesh, mp_policy or offload_policy "
        "(torchtune's first FSDP2 recipe: a bare fully_shard(model) after units with "
        "offload), so the root's own parameters run another configuration",
        "pass the same mesh, mp_policy and offload_policy to every fully_shard call of the "
        "model, the root included (only reshard_after_forward, and cast_forward_inputs for "
        "FSDP1's root-only casting, may differ)",
    ),
    Cause(
        "unit-filter",
        "a unit filter that matched nothing",
        "the port has only the root unit where the reference had more: the test that picks "
        "units (a name such as 'layers.<i>' against 'decoder.layers.<i>', a class) matched "
        "no module, so the whole model is one unit",
        "fix the filter, and assert that more than one module is an FSDPModule",
    ),
    Cause(
        "optimizer-before-sharding",
        "an optimizer built before sharding",
        "fully_shard replaces each parameter by a new DTensor parameter, so an optimizer "
        "built earlier holds tensors that are no longer the model's: it steps them and the "
        "model never changes",
        "build the optimizer from model.parameters() after the last fully_shard",
    ),
    Cause(
        "optimizer-groups",
        "other optimizer groups",
        "the optimizer's groups hold other parameters or hyperparameters: code that groups "
        "parameters per module (weight decay off for norms and biases) sees FSDP1's flat "
        "parameters with use_orig_params=False and the original ones on FSDP2",
        "build the groups from the original parameter names (model.named_parameters() after "
        "fully_shard), as the FSDP1 code meant them",
    ),
    Cause(
        "tied-weights-split",
        "tied weights split across units",
        "one parameter is used by modules of two different units: FSDP2 refuses it at the "
        "first forward (or the weights are untied and drift apart)",
        "put the modules that share the parameter in one unit (fully_shard([embedding, "
        "head]) or leave both to the root), as torchtitan does for tied embeddings",
    ),
    Cause(
        "input-casting",
        "per-unit input casting",
        "MixedPrecisionPolicy casts every unit's floating inputs to param_dtype by default "
        "(cast_forward_inputs=True), where FSDP1 casts at the root only: an fp32 input a unit "
        "gets from its parent (positions, a RoPE table, timesteps) is rounded",
        "give the units below the root MixedPrecisionPolicy(..., cast_forward_inputs=False) "
        "and the root cast_forward_inputs=True",
    ),
    Cause(
        "accumulation-dtype",
        "gradients accumulated in another dtype",
        "with a low-precision param_dtype, FSDP2 accumulates unsharded gradients across "
        "micro-batches (set_requires_gradient_sync(False)) in reduce_dtype (fp32), FSDP1's "
        "no_sync in param_dtype: the updates differ slightly",
        "accept it (FSDP2's is the more precise), or reduce every micro-batch (no "
        "accumulation without synchronisation)",
    ),
    Cause(
        "state-dict-kind",
        "state_dict() returns DTensor shards",
        "an FSDP1 model's state_dict() gives full tensors by default, an FSDP2 model's gives "
        "DTensor shards: torch.save(model.state_dict()) now writes one rank's shards",
        "save with get_model_state_dict(model, options=StateDictOptions(full_state_dict=True,"
        " cpu_offload=True)) or with torch.distributed.checkpoint",
    ),
)

#: Every known cause by its code.
CAUSES: dict[str, Cause] = {cause.code: cause for cause in _ALL}

__all__ = ["CAUSES", "Cause"]
