"""FSDP2 and DTensor module methods and hooks (FSDP125, FSDP126)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP
from codemods.registry.torch_dtensor_rules import DTENSOR, PRIVATE_DTENSOR

#: ``fully_shard`` where torch 2.4-2.5 (private) and 2.6+ (public) have it.
FULLY_SHARD = (f"{TORCH_FSDP}.fully_shard", f"{COMPOSABLE_FSDP}.fully_shard")

RULES = (
    Rule(
        code="FSDP125",
        name="fsdp2-reduce-scatter-divide-factor",
        framework=Framework.TORCH,
        kind=ChangeKind.METHOD_RENAME,
        old=tuple(f"{name}.set_reduce_scatter_divide_factor" for name in FULLY_SHARD),
        new=f"{FULLY_SHARD[0]}.set_gradient_divide_factor",
        message=("FSDP2's `set_reduce_scatter_divide_factor` is now `set_gradient_divide_factor`"),
        why=(
            "`FSDPModule.set_reduce_scatter_divide_factor` (torch 2.5) was renamed "
            "`set_gradient_divide_factor` in torch 2.8 (the factor divides the whole gradient "
            "reduction, not only the reduce-scatter); the old name remains as an alias, "
            "documented as replaced, and warns (DeprecationWarning) in torch 2.15. `FSDPModule` "
            "is what `fully_shard` returns, so the receiver's type is known only where the file "
            "shards it: the fix renames calls on `fully_shard(...)`'s result and on a name bound "
            "or sharded in place by a `fully_shard` call earlier in the same block (function or "
            "loop body) with no assignment in between. Other uses of such a name are reported; a "
            "receiver the file does not shard is not found."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import fully_shard\n"
                "model = fully_shard(model, mesh=mesh)\n"
                "model.set_reduce_scatter_divide_factor(ep_degree)\n"
            ),
            after=(
                "from torch.distributed.fsdp import fully_shard\n"
                "model = fully_shard(model, mesh=mesh)\n"
                "model.set_gradient_divide_factor(ep_degree)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.8",
        references=(
            "https://github.com/pytorch/pytorch/pull/129286",
            "https://github.com/pytorch/pytorch/issues/155903",
        ),
        warns=(r"Use `set_gradient_divide_factor` instead",),
        cases=(
            Example(
                before=(
                    "from torch.distributed._composable.fsdp import fully_shard\n"
                    "def shard_experts(experts, mesh, ep):\n"
                    "    for expert in experts:\n"
                    "        fully_shard(expert, mesh=mesh)\n"
                    "    fully_shard(experts, mesh=mesh)\n"
                    "    experts.set_reduce_scatter_divide_factor(ep)\n"
                ),
                after=(
                    "from torch.distributed._composable.fsdp import fully_shard\n"
                    "def shard_experts(experts, mesh, ep):\n"
                    "    for expert in experts:\n"
                    "        fully_shard(expert, mesh=mesh)\n"
                    "    fully_shard(experts, mesh=mesh)\n"
                    "    experts.set_gradient_divide_factor(ep)\n"
                ),
            ),
            Example(
                before=(
                    "from torch.distributed.fsdp import fully_shard\n"
                    "fully_shard(model).set_reduce_scatter_divide_factor(2.0)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n"
                    "fully_shard(model).set_gradient_divide_factor(2.0)\n"
                ),
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import fully_shard\n"
                "def build(model, shard):\n"
                "    if shard:\n"
                "        model = fully_shard(model)\n"
                "    model.set_reduce_scatter_divide_factor(4)\n"
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import fully_shard\n"
                "model = fully_shard(model)\n"
                "model = ema_copy(model)\n"
                "model.set_reduce_scatter_divide_factor(4)\n"
            ),
        ),
        untouched=(
            "from torch.distributed.fsdp import fully_shard\n"
            "model = fully_shard(model)\n"
            "model.set_gradient_divide_factor(4)\n",
            "from torch.distributed.fsdp import fully_shard\n"
            "fully_shard(block)\n"
            "other.set_reduce_scatter_divide_factor(4)\n",
        ),
    ),
    Rule(
        code="FSDP126",
        name="distribute-module-two-argument-hooks",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=(
            f"{DTENSOR}.distribute_module",
            f"{DTENSOR}._api.distribute_module",
            f"{PRIVATE_DTENSOR}.distribute_module",
            f"{PRIVATE_DTENSOR}.api.distribute_module",
        ),
        new=f"{DTENSOR}.distribute_module",
        message=(
            "`distribute_module`'s `input_fn`/`output_fn` take the module first: "
            "`fn(module, inputs, device_mesh)`"
        ),
        why=(
            "torch 2.3 passes the module to `input_fn` and `output_fn` as their first "
            "argument, so that they can read its attributes, and warns (FutureWarning) "
            "where the function takes the old two arguments, `(inputs, device_mesh)` "
            "(`(outputs, device_mesh)` for `output_fn`). The recipe: add a first "
            "parameter, `module` (unused where the function does not need it); a "
            "function that accepts three arguments fails before 2.3, so code that must "
            "run there keeps the old form. Found where the function is visible: a lambda "
            "in the call or a `def` of the file."
        ),
        example=Example(
            before=(
                "from torch.distributed.tensor import distribute_module\n"
                "def shard_inputs(inputs, device_mesh):\n"
                "    return inputs\n"
                "distribute_module(model, mesh, input_fn=shard_inputs)\n"
            ),
            after=(
                "from torch.distributed.tensor import distribute_module\n"
                "def shard_inputs(module, inputs, device_mesh):\n"
                "    return inputs\n"
                "distribute_module(model, mesh, input_fn=shard_inputs)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.3",
        deprecated="2.3",
        references=("https://github.com/pytorch/pytorch/pull/120895",),
        warns=(
            r"Deprecating input_fn that takes two arguments \(inputs, device_mesh\)",
            r"Deprecating output_fn that takes two arguments \(inputs, device_mesh\)",
        ),
        cases=(
            Example.reported_only(
                "from torch.distributed._tensor import distribute_module\n"
                "distribute_module(\n"
                "    model, mesh, None, None, lambda outputs, mesh: outputs.to_local()\n"
                ")\n"
            ),
        ),
        untouched=(
            "from torch.distributed.tensor import distribute_module\n"
            "distribute_module(model, mesh, input_fn=lambda mod, inputs, mesh: inputs)\n",
            "from torch.distributed.tensor import distribute_module\n"
            "distribute_module(model, mesh, input_fn=hooks.prepare_inputs)\n",
            "from torch.distributed.tensor import distribute_module\n"
            "def prepare(*args):\n"
            "    return args[-2]\n"
            "distribute_module(model, mesh, input_fn=prepare)\n",
        ),
    ),
)
