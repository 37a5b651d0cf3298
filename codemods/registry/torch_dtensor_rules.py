"""DTensor and device mesh homes, activation checkpointing (FSDP123, FSDP124, FSDP130, FSDP131)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import CHECKPOINT_WRAPPER

CHECKPOINT = "torch.utils.checkpoint"

#: DTensor's private home (torch 2.0-2.4); an alias package of the public one since 2.5.
PRIVATE_DTENSOR = "torch.distributed._tensor"
DTENSOR = "torch.distributed.tensor"
#: What ``torch.distributed.tensor`` exports (its ``__all__`` from 2.5 to 2.13).
PUBLIC_DTENSOR_NAMES = (
    "DTensor",
    "distribute_tensor",
    "distribute_module",
    "Shard",
    "Replicate",
    "Partial",
    "Placement",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "zeros",
)
#: The private modules the public names were also imported from (``api`` held the class
#: and the distribute functions, ``placement_types`` the placements), and submodules
#: that kept their name under the public package.
_API_NAMES = ("DTensor", "distribute_tensor", "distribute_module")
_PLACEMENTS = ("Shard", "Replicate", "Partial", "Placement")
PRIVATE_PUBLIC_NAMES = (
    *(f"{PRIVATE_DTENSOR}.{name}" for name in PUBLIC_DTENSOR_NAMES),
    *(f"{PRIVATE_DTENSOR}.api.{name}" for name in _API_NAMES),
    *(f"{PRIVATE_DTENSOR}.placement_types.{name}" for name in _PLACEMENTS),
    f"{PRIVATE_DTENSOR}.experimental",
)
DEVICE_MESH = "torch.distributed.device_mesh"
PRIVATE_DEVICE_MESH_NAMES = tuple(
    f"{module}.{name}"
    for module in (PRIVATE_DTENSOR, f"{PRIVATE_DTENSOR}.device_mesh")
    for name in ("init_device_mesh", "DeviceMesh")
)

_DTENSOR_RULES = (
    Rule(
        code="FSDP123",
        name="private-dtensor-module",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=PRIVATE_PUBLIC_NAMES,
        new=DTENSOR,
        keeps_name=True,
        message=(
            "import DTensor's public names from `torch.distributed.tensor`, not the private "
            "`torch.distributed._tensor`"
        ),
        why=(
            "DTensor was developed under the private `torch.distributed._tensor` package "
            "(torch 2.0-2.4) and became public as `torch.distributed.tensor` in torch 2.5; "
            "the private package is now a shim that re-exports the public names and is to be "
            "removed. The fix moves only the names the public package exports (`DTensor`, "
            "`distribute_tensor`, `distribute_module`, the placements and the factory "
            "functions, and the `experimental` submodule), and only where the target torch "
            "has them (2.5). Names only the private package has are FSDP130's, the device "
            "mesh FSDP131's."
        ),
        example=Example(
            before=(
                "from torch.distributed._tensor import DTensor, Replicate, Shard\n"
                "weight = DTensor.from_local(local, mesh, [Shard(0)])\n"
                "bias = DTensor.from_local(local_bias, mesh, [Replicate()])\n"
            ),
            after=(
                "from torch.distributed.tensor import DTensor, Replicate, Shard\n"
                "weight = DTensor.from_local(local, mesh, [Shard(0)])\n"
                "bias = DTensor.from_local(local_bias, mesh, [Replicate()])\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.5",
        references=(
            "https://github.com/pytorch/pytorch/pull/133113",
            "https://github.com/pytorch/pytorch/pull/133881",
            "https://pytorch.org/docs/stable/distributed.tensor.html",
        ),
        cases=(
            Example(
                before=(
                    "from torch.distributed._tensor.placement_types import Shard\n"
                    "from torch.distributed._tensor.api import distribute_tensor\n"
                    "sharded = distribute_tensor(tensor, mesh, [Shard(0)])\n"
                ),
                after=(
                    "from torch.distributed.tensor import Shard\n"
                    "from torch.distributed.tensor import distribute_tensor\n"
                    "sharded = distribute_tensor(tensor, mesh, [Shard(0)])\n"
                ),
            ),
        ),
        untouched=(
            "from torch.distributed.tensor import DTensor, Shard\n"
            "weight = DTensor.from_local(local, mesh, [Shard(0)])\n",
            "try:\n"
            "    from torch.distributed.tensor import DTensor\n"
            "except ImportError:\n"
            "    from torch.distributed._tensor import DTensor\n",
        ),
    ),
    Rule(
        code="FSDP130",
        name="private-dtensor-internals",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(PRIVATE_DTENSOR,),
        new=DTENSOR,
        message=(
            "`torch.distributed._tensor` is a private alias package to be removed, and this "
            "name is not part of the public `torch.distributed.tensor`"
        ),
        why=(
            "torch 2.5 made DTensor public as `torch.distributed.tensor` and kept "
            "`torch.distributed._tensor` only as a shim for the names it exported. Anything "
            "else imported from the private package (`DTensorSpec`, `_Partial`, `_utils`, "
            "`ops`, the whole package as a module) is an implementation detail: it may be "
            "under another private module of `torch.distributed.tensor` today and gone "
            "tomorrow, so a human picks the replacement (often a public API: "
            "`DTensor.placements`, `DTensor.to_local()`, `Partial`)."
        ),
        example=Example(
            before=(
                "from torch.distributed._tensor.placement_types import DTensorSpec\n"
                "spec = weight._spec\n"
                "assert isinstance(spec, DTensorSpec)\n"
            ),
            after="placements = weight.placements\n",
        ),
        fix=FixSafety.MANUAL,
        introduced="2.5",
        references=("https://github.com/pytorch/pytorch/pull/133881",),
        cases=(
            Example.reported_only(
                "import torch.distributed._tensor as dt\nlocal = dt.DTensor.to_local(weight)\n"
            ),
            Example.reported_only(
                "from torch.distributed._tensor._utils import compute_local_shape\n"
                "shape = compute_local_shape(global_shape, mesh, placements)\n"
            ),
        ),
        untouched=(
            "from torch.distributed.tensor import Partial\nplacement = Partial()\n",
            "from torch.distributed.tensor._dtensor_spec import DTensorSpec\n",
        ),
    ),
    Rule(
        code="FSDP131",
        name="private-device-mesh",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=PRIVATE_DEVICE_MESH_NAMES,
        new=DEVICE_MESH,
        keeps_name=True,
        message=(
            "import `DeviceMesh` and `init_device_mesh` from `torch.distributed.device_mesh`, "
            "not the private `torch.distributed._tensor`"
        ),
        why=(
            "The device mesh began inside DTensor's private package and became public as "
            "`torch.distributed.device_mesh` in torch 2.2; the private names remain only "
            "as re-exports of the public ones."
        ),
        example=Example(
            before=(
                "from torch.distributed._tensor import init_device_mesh\n"
                'mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))\n'
            ),
            after=(
                "from torch.distributed.device_mesh import init_device_mesh\n"
                'mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.2",
        references=("https://pytorch.org/docs/stable/distributed.html#devicemesh",),
        cases=(
            Example(
                before=(
                    "from torch.distributed._tensor.device_mesh import DeviceMesh\n"
                    'mesh = DeviceMesh("cpu", [0, 1])\n'
                ),
                after=(
                    "from torch.distributed.device_mesh import DeviceMesh\n"
                    'mesh = DeviceMesh("cpu", [0, 1])\n'
                ),
            ),
        ),
        untouched=(
            "from torch.distributed.device_mesh import init_device_mesh\n"
            'mesh = init_device_mesh("cpu", (2,))\n',
        ),
    ),
)

_ACTIVATION_RULES = (
    Rule(
        code="FSDP124",
        name="checkpoint-without-use-reentrant",
        framework=Framework.TORCH,
        kind=ChangeKind.DEFAULT_CHANGE,
        old=(f"{CHECKPOINT}.checkpoint", f"{CHECKPOINT}.checkpoint_sequential"),
        new=f"{CHECKPOINT}.checkpoint",
        argument="use_reentrant",
        message=(
            "pass `use_reentrant` to `torch.utils.checkpoint`: `False` is recommended, "
            "`True` keeps today's behaviour (the fix writes `True`; with `--unsafe-fixes`, "
            "`False`: the non-reentrant implementation, which recomputes otherwise)"
        ),
        why=(
            "`checkpoint` and `checkpoint_sequential` without `use_reentrant` warn on every "
            "call (since torch 2.1) and use the reentrant implementation. The warning in "
            "torch 2.13 still says that torch 2.9 raises an exception when the argument "
            "is missing, but 2.13 itself warns and falls back to `use_reentrant=True`; the "
            "default may still change to `False`. The safe fix states `use_reentrant=True`, "
            "which keeps behaviour on every release. With `--unsafe-fixes` the fix writes "
            "`use_reentrant=False` instead (torch's recommendation; this is the form the "
            "rule's examples show): the non-reentrant implementation supports keyword "
            "arguments, inputs that do not require grad, nested checkpoints and "
            "`torch.autograd.grad`, but it differs in how it recomputes (state changed "
            "between forward and backward, early stop) and must be tested. The same holds "
            "for `checkpoint_wrapper(m, checkpoint_fn=checkpoint)`, which passes its extra "
            "keywords to `checkpoint`."
        ),
        example=Example(
            before=(
                "from torch.utils.checkpoint import checkpoint\n"
                "hidden = checkpoint(block, hidden, mask)\n"
            ),
            after=(
                "from torch.utils.checkpoint import checkpoint\n"
                "hidden = checkpoint(block, hidden, mask, use_reentrant=False)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="1.11",
        deprecated="2.1",
        references=(
            "https://github.com/pytorch/pytorch/pull/100551",
            "https://github.com/pytorch/pytorch/pull/116710",
            "https://pytorch.org/docs/stable/checkpoint.html",
        ),
        warns=(
            r"torch\.utils\.checkpoint: the use_reentrant parameter should be passed explicitly",
            r"torch\.utils\.checkpoint\.checkpoint_sequential: the use_reentrant parameter "
            r"should be passed explicitly",
            # torch 2.1-2.3's wording of the same warning
            r"torch\.utils\.checkpoint: please pass in use_reentrant=True or use_reentrant=False",
        ),
        cases=(
            Example(
                before=(
                    "import torch.utils.checkpoint\n"
                    "out = torch.utils.checkpoint.checkpoint_sequential(\n"
                    "    model.layers,  # one segment per two layers\n"
                    "    4,\n"
                    "    x,\n"
                    ")\n"
                ),
                after=(
                    "import torch.utils.checkpoint\n"
                    "out = torch.utils.checkpoint.checkpoint_sequential(\n"
                    "    model.layers,  # one segment per two layers\n"
                    "    4,\n"
                    "    x,\n"
                    "    use_reentrant=False,\n"
                    ")\n"
                ),
            ),
            Example(
                before=(
                    "import torch\n"
                    "def forward(self, *inputs):\n"
                    "    return torch.utils.checkpoint.checkpoint(self.block, *inputs)\n"
                ),
                after=(
                    "import torch\n"
                    "def forward(self, *inputs):\n"
                    "    return torch.utils.checkpoint.checkpoint(self.block, *inputs, "
                    "use_reentrant=False)\n"
                ),
            ),
            Example(
                before=(
                    "import functools\n"
                    "from torch.utils.checkpoint import checkpoint\n"
                    "ckpt = functools.partial(checkpoint, preserve_rng_state=False)\n"
                ),
                after=(
                    "import functools\n"
                    "from torch.utils.checkpoint import checkpoint\n"
                    "ckpt = functools.partial(checkpoint, preserve_rng_state=False, "
                    "use_reentrant=False)\n"
                ),
            ),
            Example(
                before=(
                    "from functools import partial\n"
                    f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                    "from torch.utils.checkpoint import checkpoint\n"
                    "wrapper = partial(checkpoint_wrapper, checkpoint_fn=checkpoint)\n"
                ),
                after=(
                    "from functools import partial\n"
                    f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
                    "from torch.utils.checkpoint import checkpoint\n"
                    "wrapper = partial(checkpoint_wrapper, checkpoint_fn=checkpoint, "
                    "use_reentrant=False)\n"
                ),
            ),
        ),
        untouched=(
            "from torch.utils.checkpoint import checkpoint\n"
            "hidden = checkpoint(block, hidden, use_reentrant=False)\n",
            "from torch.utils.checkpoint import checkpoint_sequential\n"
            "out = checkpoint_sequential(layers, 2, x, True)\n",
            "from torch.utils.checkpoint import checkpoint\n"
            "hidden = checkpoint(block, hidden, **checkpoint_kwargs)\n",
            f"from {CHECKPOINT_WRAPPER} import checkpoint_wrapper\n"
            "wrapped = checkpoint_wrapper(block)\n",
            "from deepspeed.checkpointing import checkpoint\nhidden = checkpoint(block, hidden)\n",
            "from torch.utils.checkpoint import checkpoint\n"
            "if torch_version >= (2, 1):\n"
            "    hidden = checkpoint(block, hidden, use_reentrant=False)\n",
        ),
    ),
)


RULES = _DTENSOR_RULES + _ACTIVATION_RULES
