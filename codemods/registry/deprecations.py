"""The triage of every deprecation warning the census finds in torch's and Lightning's FSDP area.

Each entry is one warning: a pattern matching its text in every release that has it, the
package it lives in, the first and last release of the measured matrix whose *source*
has it, and either the registry rule that answers it or why none does. The release
columns are measured, not recalled: ``python .ci/census_releases.py CACHE`` scans the
unpacked releases in ``CACHE`` and says where this table disagrees with them.
``tests/test_census.py`` requires every warning the installed releases have to match
exactly one entry, and every ``answered_by`` rule to name the warning in its ``warns``.

Plain data: importing this module needs neither torch nor Lightning.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from codemods.registry.named_tuple import NamedTuple

#: The torch releases of the validation matrix (tox.ini's ``matrix`` label).
TORCH_RELEASES = (
    "1.13.1",
    "2.0.1",
    "2.1.2",
    "2.2.2",
    "2.4.1",
    "2.6.0",
    "2.9.1",
    "2.11.0",
    "2.13.0",
    "2.15.0",
)
#: The Lightning releases measured: the last patch of each minor release since 1.9.
LIGHTNING_RELEASES = ("1.9.5", "2.0.9", "2.1.4", "2.2.5", "2.3.3", "2.4.0", "2.5.6", "2.6.6")


class Deprecation(NamedTuple):
    """One deprecation warning of torch or Lightning, and what answers it.

    Attributes:
        package: The census area it lives in (``torch.distributed.fsdp``).
        message: Its text as the census renders it in the newest release that has it.
        pattern: A regular expression (``re.search``) matching its text in every release.
        first: The first measured release whose source has it.
        last: The last measured release that has it, if a later one dropped it.
        answered_by: The code of the rule that answers it.
        out_of_scope: Why no rule answers it.
        scope: A regular expression the enclosing class/function must match, where two
            warnings share one text.
    """

    package: str
    message: str
    pattern: str
    first: str
    last: str | None = None
    answered_by: str | None = None
    out_of_scope: str | None = None
    scope: str | None = None

    @property
    def framework(self) -> str:
        """``torch`` or ``lightning``: whose releases ``first`` and ``last`` count."""
        return self.package.split(".", 1)[0]

    def matches(self, package: str, message: str, scope: str = "") -> bool:
        """Whether a warning found in ``package`` with this text (and scope) is this one."""
        return (
            package == self.package
            and re.search(self.pattern, message) is not None
            and (self.scope is None or re.search(self.scope, scope) is not None)
        )


_FSDP = "torch.distributed.fsdp"
_DCP = "torch.distributed.checkpoint"
_TENSOR = "torch.distributed.tensor"
_MESH = "torch.distributed.device_mesh"
_CKPT = "torch.utils.checkpoint"
_REENTRANT = (
    r"(please pass in use_reentrant=True or use_reentrant=False explicitly"
    r"|the use_reentrant parameter should be passed explicitly)"
)
_TWO_ARGUMENT_FN = (
    " that takes two arguments (inputs, device_mesh), please use {0} that takes in "
    "(module, inputs, device_mesh) instead!"
)
_FAIRSCALE_SHARDED = (
    "PyTorch Lightning's sharded implementation using FairScale has been deprecated in v1.9.0 "
    "and will be removed in v2.0.0. You can try using the `Trainer(strategy='fsdp_native')` "
    "instead. The difference is that native FSDP uses PyTorch's implementation and the current "
    "strategy uses FairScale's implementation (which was upstreamed to PyTorch). After "
    "removal, `strategy='fsdp'` will use the native version by default."
)

DEPRECATIONS: tuple[Deprecation, ...] = (
    # torch.distributed.fsdp ---------------------------------------------------------------
    Deprecation(
        package=_FSDP,
        message=(
            "FSDP.state_dict_type() and FSDP.set_state_dict_type() are being deprecated. Please "
            "use APIs, get_state_dict() and set_state_dict(), which can support different "
            "parallelisms, FSDP1, FSDP2, DDP. API doc: https://pytorch.org/docs/stable/"
            "distributed.checkpoint.html#torch.distributed.checkpoint.state_dict.get_state_dict "
            ".Tutorial: https://pytorch.org/tutorials/recipes/distributed_checkpoint_recipe.html ."
        ),
        pattern=r"^FSDP\.state_dict_type\(\) and FSDP\.set_state_dict_type\(\) are being",
        first="2.4.1",
        answered_by="FSDP115",
    ),
    Deprecation(
        package=_FSDP,
        message=(
            "``FullyShardedDataParallel.{curr}``is being deprecated and is replaced by "
            "``FullyShardedDataParallel.{new}``. ``FullyShardedDataParallel.{curr}`` may be "
            "removed after PyTorch 2.2."
        ),
        pattern=r"^``FullyShardedDataParallel\.\{curr\}`` ?is being deprecated and is replaced by",
        first="2.0.1",
        answered_by="FSDP116",
    ),
    Deprecation(
        package=_FSDP,
        message=(
            "The `optim_input` argument is deprecated and will be removed after PyTorch 1.13. "
            "You may remove it from your code without changing its functionality."
        ),
        pattern=r"^The `optim_input` argument is deprecated",
        first="1.13.1",
        answered_by="FSDP117",
    ),
    Deprecation(
        package=_FSDP,
        message=(
            "The `NO_SHARD` sharding strategy is deprecated. If having issues, please use "
            "`DistributedDataParallel` instead."
        ),
        pattern=r"^The `NO_SHARD` sharding strategy is deprecated",
        first="2.4.1",
        answered_by="FSDP118",
    ),
    Deprecation(
        package=_FSDP,
        message="Use `set_gradient_divide_factor` instead",
        pattern=r"^Use `set_gradient_divide_factor` instead",
        first="2.9.1",
        answered_by="FSDP125",
    ),
    # torch.distributed.checkpoint ---------------------------------------------------------
    Deprecation(
        package=_DCP,
        message=(
            "`save_state_dict` is deprecated and will be removed in future versions.Please use "
            "`save` instead."
        ),
        pattern=r"^['`]save_state_dict['`] is deprecated",
        first="2.2.2",
        answered_by="FSDP120",
    ),
    Deprecation(
        package=_DCP,
        message=(
            "`load_state_dict` is deprecated and will be removed in future versions. Please use "
            "`load` instead."
        ),
        pattern=r"^['`]load_state_dict['`] is deprecated",
        first="2.2.2",
        answered_by="FSDP121",
    ),
    Deprecation(
        package=_DCP,
        message=(
            "Getting submodules only model/optim state_dict is deprecated and will be removed in "
            "2.5. This feature can be achieved by manually filtering out the state_dict returned "
            "from get_state_dict."
        ),
        pattern=r"^Getting submodules only model/optim state_dict is deprecated",
        first="2.4.1",
        answered_by="FSDP127",
    ),
    Deprecation(
        package=_DCP,
        message=(
            "Passing model_state_dict as a ``Dict[nn.Module, Dict[str, Any]]``is deprecated and "
            "will be removed in 2.5. If you need this feature, please preprocess the "
            "model_state_dict to achieve the same functionality."
        ),
        pattern=r"^Passing model_state_dict as a ``Dict\[nn\.Module, Dict\[str, Any\]\]`` ?is",
        first="2.4.1",
        answered_by="FSDP128",
    ),
    Deprecation(
        package=_DCP,
        message=(
            "`synchronize_staging` is deprecated and will be removed in future versions.Please "
            "use staging_future from AsyncSaveResponse instead."
        ),
        pattern=r"^`synchronize_staging` is deprecated",
        first="2.9.1",
        answered_by="FSDP129",
    ),
    Deprecation(
        package=_DCP,
        message=(
            "DefaultSavePlanner's `dedup_replicated_tensors` argument is being deprecated, and no "
            "longer has any effect. Please remove this argument from your call."
        ),
        pattern=r"^DefaultSavePlanner's `dedup_replicated_tensors` argument is being deprecated",
        first="2.4.1",
        out_of_scope=(
            "logged, not warned; the argument of a custom save planner has had no effect since "
            "2.4, so code passing it behaves the same on every release (a removal rule could "
            "tidy it, nothing breaks without one)"
        ),
    ),
    Deprecation(
        package=_DCP,
        message=(
            "torch.distributed.checkpoint._fsspec_filesystem is deprecated and will be removed "
            "in a future release. Please use torch.distributed.checkpoint.fsspec_filesystem "
            "instead."
        ),
        pattern=r"^torch\.distributed\.checkpoint\._fsspec_filesystem is deprecated",
        first="2.15.0",
        out_of_scope=(
            "private module (`_fsspec_filesystem`); its public home "
            "`torch.distributed.checkpoint.fsspec_filesystem` is the documented import"
        ),
    ),
    Deprecation(
        package="torch.distributed._shard.checkpoint",
        message=(
            "`torch.distributed._shard.checkpoint` will be deprecated, use "
            "`torch.distributed.checkpoint` instead"
        ),
        pattern=r"^`?torch\.distributed\._shard\.checkpoint`? will be deprecated",
        first="2.0.1",
        answered_by="FSDP122",
    ),
    # torch.distributed.tensor (and its old home _tensor) --------------------------------
    *(
        Deprecation(
            package=package,
            message=f"Deprecating {fn}{_TWO_ARGUMENT_FN.format(fn)}",
            pattern=rf"^Deprecating {fn} that takes two arguments",
            first=first,
            last=last,
            answered_by="FSDP126",
        )
        for fn in ("input_fn", "output_fn")
        for package, first, last in (
            ("torch.distributed._tensor", "2.4.1", "2.4.1"),
            (_TENSOR, "2.6.0", None),
        )
    ),
    Deprecation(
        package=_TENSOR,
        message="Please use `distribute_tensor` with `src_data_rank=None` instead.",
        pattern=r"^Please use `distribute_tensor` with `src_data_rank=None` instead",
        first="2.9.1",
        out_of_scope="private function (`torch.distributed.tensor._api._shard_tensor`)",
    ),
    Deprecation(
        package=_TENSOR,
        message="TupleStrategy.childs is deprecated, use TupleStrategy.children instead.",
        pattern=r"^TupleStrategy\.childs is deprecated",
        first="2.9.1",
        out_of_scope=(
            "attribute of DTensor's internal sharding-propagation class "
            "(`torch.distributed.tensor._op_schema.TupleStrategy`), not FSDP user code"
        ),
    ),
    Deprecation(
        package=_TENSOR,
        message=(
            "DTensor is synchronizing RNG states of every rank with the state from rank 0. This "
            "behavior is deprecated. Please call `torch.manual_seed()` on every rank that "
            "participates in SPMD DTensor Operations with the same seed. If using Pipeline "
            "Parallelism, each pipeline state would use a different seed, but all ranks "
            "belonging to one pipeline stage would use the same seed."
        ),
        pattern=r"^DTensor is synchronizing RNG states of every rank with the state from rank 0",
        first="2.9.1",
        out_of_scope=(
            "logged at run time when ranks were seeded differently: a property of the run, "
            "not of any spelling in the source"
        ),
    ),
    Deprecation(
        package=_TENSOR,
        message="{func_name} is deprecated and will be removed soon. {extra_msg}",
        pattern=r"^\{func_name\} is deprecated and will be removed soon",
        first="2.2.2",
        last="2.6.0",
        out_of_scope=(
            "private helper of tensor parallelism (`tensor.parallel._utils._deprecate_warnings`): "
            "in 2.2 it warned only for `parallelize_module(tp_mesh_dim=...)`, later releases "
            "never call it; tensor parallelism is not FSDP"
        ),
    ),
    # torch.distributed.device_mesh ----------------------------------------------------------
    Deprecation(
        package=_MESH,
        message=(
            "This get_root_mesh API will be deprecated soon.Please use `get_root_mesh` inside "
            "DeviceMesh instead."
        ),
        pattern=r"^This get_root_mesh API will be deprecated soon",
        first="2.11.0",
        out_of_scope=(
            "method of the internal `_MeshEnv` (`torch.distributed.device_mesh._mesh_resources`)"
        ),
    ),
    Deprecation(
        package=_MESH,
        message=(
            "This _get_all_submeshes API will be deprecated soon.Please use `_get_all_submeshes` "
            "inside DeviceMesh instead."
        ),
        pattern=r"^This _get_all_submeshes API will be deprecated soon",
        first="2.11.0",
        out_of_scope="private method of the internal `_MeshEnv`",
    ),
    Deprecation(
        package=_MESH,
        message=(
            "Slicing a flattened dim from root mesh will be deprecated in PT 2.11. Users need to "
            "bookkeep the flattened mesh directly."
        ),
        pattern=r"^Slicing a flattened dim from root mesh will be deprecated",
        first="2.11.0",
        out_of_scope=(
            "whether `mesh[name]` names a flattened dimension depends on how the mesh was built "
            "at run time; nothing in the source says so"
        ),
    ),
    # torch.distributed._composable -------------------------------------------------------
    Deprecation(
        package="torch.distributed._composable",
        message=(
            "`torch.distributed._composable.fully_shard` is being deprecated. You can continue to "
            "use the wrapper based FSDP. See usage in: https://github.com/pytorch/pytorch/blob/"
            "main/torch/distributed/fsdp/fully_sharded_data_parallel.py. "
            "`torch.distributed._composable.fully_shard` will be removed after PyTorch 2.5."
        ),
        pattern=r"^`torch\.distributed\._composable\.fully_shard` is being deprecated",
        first="2.4.1",
        last="2.4.1",
        answered_by="FSDP134",
    ),
    # torch.utils.checkpoint ---------------------------------------------------------------
    Deprecation(
        package=_CKPT,
        message=(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In "
            "a future release, calling checkpoint without use_reentrant will raise an exception. "
            "use_reentrant=False is recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
            "differences between the two variants."
        ),
        pattern=rf"^torch\.utils\.checkpoint: {_REENTRANT}",
        first="2.1.2",
        answered_by="FSDP124",
    ),
    Deprecation(
        package=_CKPT,
        message=(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In a future release, we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants."
        ),
        pattern=rf"^torch\.utils\.checkpoint\.checkpoint_sequential: {_REENTRANT}",
        first="2.2.2",
        answered_by="FSDP124",
    ),
    Deprecation(
        package=_CKPT,
        message=(
            "A saved_tensors_hooks context (e.g. save_on_cpu) is active around a selective "
            "activation checkpoint region. Tensors that SAC saves currently bypass these hooks, "
            "but a future release will route them through the hooks like any other saved tensor. "
            "Silence this warning and choose the behavior explicitly by passing "
            "respect_saved_tensors_hooks=True|False to torch.utils.checkpoint.checkpoint."
        ),
        pattern=r"^A saved_tensors_hooks context \(e\.g\. save_on_cpu\) is active around",
        first="2.15.0",
        out_of_scope=(
            "a behaviour change announced only when selective activation checkpointing runs "
            "inside saved_tensors_hooks; which of True/False is right is the user's choice, "
            "and the argument does not exist before 2.15"
        ),
    ),
    # Lightning --------------------------------------------------------------------------------
    Deprecation(
        package="lightning.fabric",
        message=(
            "`FSDPStrategy(activation_checkpointing={activation_checkpointing})` is deprecated, "
            "use `FSDPStrategy(activation_checkpointing_policy={set(classes)})` instead."
        ),
        pattern=r"^`FSDPStrategy\(activation_checkpointing=\{activation_checkpointing\}\)` is",
        first="2.1.4",
        answered_by="FSDP208",
    ),
    Deprecation(
        package="lightning.pytorch",
        message=(
            "You have overridden `{name}.configure_sharded_model` which is deprecated. Please "
            "override the `configure_model` hook instead. Instantiation with the newer hook will "
            "be created on the device right away and have the right data type depending on the "
            "precision setting in the Trainer."
        ),
        pattern=r"^You have overridden `\{name\}\.configure_sharded_model` which is deprecated",
        first="2.1.4",
        answered_by="FSDP207",
    ),
    Deprecation(
        package="lightning.pytorch",
        message=_FAIRSCALE_SHARDED,
        pattern=r"^PyTorch Lightning's sharded implementation using FairScale has been deprecated",
        scope=r"^DDPFullyShardedStrategy\.",
        first="1.9.5",
        last="1.9.5",
        answered_by="FSDP202",
    ),
    Deprecation(
        package="lightning.pytorch",
        message=_FAIRSCALE_SHARDED,
        pattern=r"^PyTorch Lightning's sharded implementation using FairScale has been deprecated",
        scope=r"^FullyShardedNativeMixedPrecisionPlugin\.",
        first="1.9.5",
        last="1.9.5",
        answered_by="FSDP212",
    ),
)


def matching(package: str, message: str, scope: str = "") -> list[Deprecation]:
    """The entries a warning found in ``package`` with this text and scope matches.

    Example:
        >>> found = matching("torch.distributed.fsdp", "Use `set_gradient_divide_factor` instead")
        >>> [entry.answered_by for entry in found]
        ['FSDP125']
    """
    return [entry for entry in DEPRECATIONS if entry.matches(package, message, scope)]
