"""FSDP1's composable prototype and private API, which have no FSDP2 form (FSDP134-FSDP137).

All are reported for a human. The composable ``fully_shard`` prototype is gone from
torch; the others still run on FSDP1 but hold a model to it, so they are opt-in
(``--extend-select``), in the spirit of the FSDP4xx family.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import TORCH_FSDP, TORCH_FSDP_CLASSES

COMPOSABLE_FULLY_SHARD = "torch.distributed._composable.fully_shard"
#: FSDP1's private modules (torch 2.13's, and ``flat_param``, their name before 2.1).
FSDP1_PRIVATE_MODULES = tuple(
    f"{TORCH_FSDP}.{name}"
    for name in (
        "_common_utils",
        "_debug_utils",
        "_dynamo_utils",
        "_exec_order_utils",
        "_flat_param",
        "_fsdp_extensions",
        "_init_utils",
        "_limiter_utils",
        "_optim_utils",
        "_runtime_utils",
        "_shard_utils",
        "_state_dict_utils",
        "_trace_utils",
        "_traversal_utils",
        "_unshard_param_utils",
        "_wrap_utils",
        "flat_param",
    )
)
#: Attributes of FSDP1's wrapper and its state that FSDP2's modules do not have.
FSDP1_PRIVATE_ATTRIBUTES = (
    "_fsdp_wrapped_module",
    "_flat_param",
    "_handle",
    "_handles",
    "_lazy_init",
    "_is_root",
    "_exec_order_data",
)

_FSDP_IMPORT = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"

RULES = (
    Rule(
        code="FSDP134",
        name="composable-fully-shard-prototype",
        framework=Framework.TORCH,
        kind=ChangeKind.REMOVAL,
        old=(COMPOSABLE_FULLY_SHARD,),
        new=None,
        message=(
            "`torch.distributed._composable.fully_shard` (FSDP1's composable prototype) was "
            "removed in torch 2.6: use `FullyShardedDataParallel`, or FSDP2's "
            "`torch.distributed.fsdp.fully_shard`"
        ),
        why=(
            "The composable `fully_shard` of torch 2.0 to 2.5 applied FSDP1 (flat "
            "parameters) in place. torch 2.4 deprecated it (a warning at the call) and 2.6 "
            "removed the module, so the import fails. It is not FSDP2's `fully_shard` "
            "(`torch.distributed._composable.fsdp`, now `torch.distributed.fsdp`): its "
            "arguments (`policy`, `strategy`, `mixed_precision=MixedPrecision(...)`) are "
            "FSDP1's. The nearest form is the `FullyShardedDataParallel` wrapper with "
            "`auto_wrap_policy=` and `sharding_strategy=`, which wraps the module instead "
            "of changing it in place; FSDP2 shards per parameter and takes other arguments. "
            "Which one is the user's choice."
        ),
        example=Example(
            before=(
                "from torch.distributed._composable import fully_shard\n"
                "fully_shard(model, policy=ModuleWrapPolicy({Block}))\n"
            ),
            after=(
                _FSDP_IMPORT + "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        deprecated="2.4",
        removed="2.6",
        warns=(r"^`torch\.distributed\._composable\.fully_shard` is being deprecated",),
        cases=(
            Example.reported_only(
                "import torch.distributed._composable as composable\n"
                "composable.fully_shard(model, strategy=ShardingStrategy.SHARD_GRAD_OP)\n"
            ),
            Example.reported_only(
                "from torch.distributed._composable.fully_shard import fully_shard\n"
                "fully_shard(model)\n"
            ),
        ),
        untouched=(
            "from torch.distributed._composable.fsdp import fully_shard\nfully_shard(model)\n",
            "from torch.distributed.fsdp import fully_shard\nfully_shard(model)\n",
            "from torch.distributed._composable import checkpoint, replicate\nreplicate(model)\n",
        ),
    ),
    Rule(
        code="FSDP135",
        name="fsdp1-wrapper-partial",
        framework=Framework.TORCH,
        kind=ChangeKind.REMOVAL,
        old=TORCH_FSDP_CLASSES,
        new=None,
        message=(
            "`partial(FullyShardedDataParallel, ...)` hands FSDP1's wrapper class to other "
            "code: FSDP2 has no wrapper class, so that code must call `fully_shard` itself"
        ),
        why=(
            "A `functools.partial` of FSDP1's class is the wrapper other code applies to "
            "modules: `enable_wrap(wrapper_cls=...)`, `_recursive_wrap`, a framework's "
            "`wrapper_cls` setting. FSDP2's `fully_shard` changes a module in place and "
            "returns it, and is applied to the chosen submodules before the root, so the "
            "code receiving the wrapper needs rewriting, not just its argument; FSDP401 "
            "does not convert such code."
        ),
        example=Example(
            before=(
                "import functools\n" + _FSDP_IMPORT + "from torch.distributed.fsdp.wrap import "
                "enable_wrap, wrap\n"
                "wrapper = functools.partial(FSDP, limit_all_gathers=True)\n"
                "with enable_wrap(wrapper_cls=wrapper):\n"
                "    block = wrap(block)\n"
            ),
            after=("from torch.distributed.fsdp import fully_shard\nfully_shard(block)\n"),
        ),
        fix=FixSafety.MANUAL,
        opt_in=True,
        cases=(
            Example.reported_only(
                "from functools import partial\n"
                "import torch.distributed.fsdp as fsdp\n"
                "config.wrapper_cls = partial(\n"
                "    fsdp.FullyShardedDataParallel,\n"
                "    sharding_strategy=fsdp.ShardingStrategy.SHARD_GRAD_OP,\n"
                ")\n"
            ),
        ),
        untouched=(
            _FSDP_IMPORT + "model = FSDP(model, limit_all_gathers=True)\n",
            (
                "import functools\n"
                "from fairscale.nn import FullyShardedDataParallel as FSDP\n"
                "wrapper = functools.partial(FSDP, flatten_parameters=True)\n"
            ),
        ),
    ),
    Rule(
        code="FSDP136",
        name="fsdp1-private-modules",
        framework=Framework.TORCH,
        kind=ChangeKind.REMOVAL,
        old=FSDP1_PRIVATE_MODULES,
        new=None,
        message=(
            "FSDP1's private modules (`torch.distributed.fsdp._runtime_utils`, ...) act on "
            "FSDP1's own state, change between releases, and have no FSDP2 form"
        ),
        why=(
            "Functions such as `_runtime_utils._lazy_init`, `_reshard` or "
            "`_common_utils._get_module_fsdp_state` read FSDP1's flat-parameter handles. "
            "They are private: names move and signatures change from one torch to the next "
            "(`flat_param` became `_flat_param` in torch 2.1, so importing the old name "
            "fails since), and FSDP2 modules have none of that state. Replace the call with "
            "a public API (`FSDP.state_dict_type`, `summon_full_params`, or FSDP2's "
            "`FSDPModule` methods) before moving on."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp._runtime_utils import _lazy_init\n"
                "_lazy_init(model, model)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "with FSDP.summon_full_params(model):\n"
                "    pass\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        opt_in=True,
        cases=(
            Example.reported_only(
                "from torch.distributed.fsdp.flat_param import FlatParameter\n"
                "flat = [p for p in model.parameters() if isinstance(p, FlatParameter)]\n"
            ),
            Example.reported_only(
                "import torch.distributed.fsdp._traversal_utils as traversal_utils\n"
                "states = traversal_utils._get_fsdp_states(model)\n"
            ),
        ),
        untouched=(
            "from torch.distributed.fsdp._fully_shard import FSDPModule\n",
            "from torch.distributed.fsdp.api import ShardingStrategy\n",
            "from my_project.fsdp._runtime_utils import setup\n",
        ),
    ),
    Rule(
        code="FSDP137",
        name="fsdp1-private-attributes",
        framework=Framework.TORCH,
        kind=ChangeKind.REMOVAL,
        old=tuple(f"{TORCH_FSDP_CLASSES[0]}.{name}" for name in FSDP1_PRIVATE_ATTRIBUTES),
        new=None,
        message=(
            "a private attribute of FSDP1's wrapper (`_fsdp_wrapped_module`, `_flat_param`, "
            "`_handle`, ...): FSDP2 modules have none of them"
        ),
        why=(
            "FSDP1 wraps each unit in a `FullyShardedDataParallel` module whose private "
            "attributes (the wrapped module, the flat parameter and its handle, the lazy "
            "initialisation) code sometimes reaches into. They change between releases and "
            "do not exist on FSDP2, which shards modules in place: the wrapped module is the "
            "module itself and each parameter is a `DTensor`. Reported in files that use "
            "FSDP1's class or private modules, where the attribute most likely is FSDP1's."
        ),
        example=Example(
            before=(_FSDP_IMPORT + "model = FSDP(model)\ninner = model._fsdp_wrapped_module\n"),
            after=(
                "from torch.distributed.fsdp import fully_shard\n"
                "model = fully_shard(model)\n"
                "inner = model\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        opt_in=True,
        found_in=(*TORCH_FSDP_CLASSES, *FSDP1_PRIVATE_MODULES),
        cases=(
            Example.reported_only(
                _FSDP_IMPORT + "def flat_numel(model: FSDP) -> int:\n"
                "    return sum(h.flat_param.numel() for h in model._handles)\n"
            ),
        ),
        untouched=(
            "inner = model._fsdp_wrapped_module\n",
            _FSDP_IMPORT + "model = FSDP(model)\nmodule = model.module\n",
        ),
    ),
)
