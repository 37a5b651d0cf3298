"""FSDP1 constructor calls carried out with FSDP2's ``fully_shard``: the bridge.

:func:`fully_shard_like_fsdp1` takes exactly ``FullyShardedDataParallel``'s arguments
(``module`` first, the others by position or keyword) and does on FSDP2 what FSDP1's
constructor does, argument by argument; :func:`fully_shard_by_policy` is the same call
with the policy second. Each precondition is checked at run time: where FSDP2 cannot do
what FSDP1 would, the bridge raises before sharding anything, naming the argument and
what to write by hand (``docs/fsdp2.md``). Needs torch >= 2.6
(``torch.distributed.fsdp.fully_shard``), and >= 2.7 on CPU ranks.

=================================  ===================================================
FSDP1 argument                     What the bridge does on FSDP2
=================================  ===================================================
``auto_wrap_policy``               FSDP1's units (:mod:`compat.fsdp2.units`), each
                                   ``fully_shard``-ed in FSDP1's post-order, root last
``sharding_strategy``              ``FULL_SHARD`` / ``HYBRID_SHARD``:
                                   ``reshard_after_forward=True``; ``SHARD_GRAD_OP`` /
                                   ``_HYBRID_SHARD_ZERO2``: ``False``; hybrid on a 2-D
                                   (replicate, shard) mesh; ``NO_SHARD`` on a
                                   ``(world, 1)`` mesh
``process_group``                  ``DeviceMesh.from_group(pg, device_type)``;
                                   ``(intra, inter)`` with a hybrid strategy: a named
                                   2-D mesh from the two groups (checked to be a grid)
``device_mesh``                    1-D as is; 2-D only with a hybrid strategy (named if
                                   it has no names)
hybrid, no group                   shard groups of ``torch.<device>.device_count()``
                                   ranks, as FSDP1; one-rank shard groups raise
``sync_module_states=True``        per unit, before sharding: parameters and buffers
                                   broadcast from rank 0 of FSDP1's group(s)
``param_init_fn`` / meta tensors   per unit, before sharding: FSDP1's materialisation
``device_id``                      the unit's CPU tensors moved there before sharding
``mixed_precision``                ``MixedPrecisionPolicy`` per unit, FSDP1's input
                                   casting kept (:mod:`compat.fsdp2.precision`)
``cpu_offload``                    ``offload_policy=CPUOffloadPolicy()`` (nothing to do
                                   on CPU ranks)
``ignored_modules`` /              ``ignored_params`` (torch >= 2.7); nothing inside
``ignored_states``                 them becomes a unit
``backward_prefetch``,             accepted silently: FSDP2 has no such argument and
``forward_prefetch``,              they change no numbers
``limit_all_gathers``
``use_orig_params``                accepted; ``False`` is warned
                                   (:class:`BridgeDifferenceWarning`): the optimizer
                                   gets the original parameters, not flat ones
=================================  ===================================================

Layers bridged one by one and then the root (FSDP1's manual nesting) stay the units
they are; a container a policy picks is FSDP1's unit in FSDP2's terms
(:mod:`~compat.fsdp2.nesting`). Nothing of torch's is patched: the bridge changes the
class of the modules it shards only, as ``fully_shard`` does, and a bridged model
answers ``state_dict()`` as FSDP2 to code written for both generations and as FSDP1
to the rest (:mod:`~compat.fsdp2.identity`).

Without ``sync_module_states`` the ranks should start from the same values: FSDP1 and
FSDP2 keep different parts of differing tensors, so the bridge checks and warns
(:class:`RankMismatchWarning`) where they differ (harmless when weights are loaded after
sharding).

The parameters of ignored modules stay plain tensors beside the sharded DTensors: an
optimizer over all of them fails in a foreach step (the default on CUDA), so give them an
optimizer or parameter group of their own, or pass ``foreach=False``.

Modules: :mod:`~compat.fsdp2.units` (which units, in which order),
:mod:`~compat.fsdp2.mesh` (devices and meshes), :mod:`~compat.fsdp2.materialize`
(what happens to a unit's tensors before sharding), :mod:`~compat.fsdp2.precision`
(mixed precision), :mod:`~compat.fsdp2.availability` (which torch has FSDP2),
:mod:`~compat.fsdp2.bridge` (the calls), :mod:`~compat.fsdp2.fsdp1_api` (FSDP1's
methods and class-level calls on a bridged model).
"""

from compat.fsdp2.availability import fsdp2_module
from compat.fsdp2.bridge import (
    fully_shard_by_policy,
    fully_shard_like_fsdp1,
    translate_fsdp1_arguments,
)
from compat.fsdp2.differences import BridgeDifferenceWarning
from compat.fsdp2.fsdp1_api import FSDP1Api
from compat.fsdp2.materialize import RankMismatchWarning
from compat.fsdp2.units import fsdp2_unit_names

# Their public home is here: documented and doctested as compat.fsdp2's (the examples
# run only where FSDP2 runs on CPU), and pickled by this name.
for _public in (
    BridgeDifferenceWarning,
    FSDP1Api,
    RankMismatchWarning,
    fsdp2_module,
    fsdp2_unit_names,
    fully_shard_by_policy,
    fully_shard_like_fsdp1,
    translate_fsdp1_arguments,
):
    _public.__module__ = __name__
del _public

__all__ = [
    "BridgeDifferenceWarning",
    "FSDP1Api",
    "RankMismatchWarning",
    "fsdp2_module",
    "fsdp2_unit_names",
    "fully_shard_by_policy",
    "fully_shard_like_fsdp1",
    "translate_fsdp1_arguments",
]
