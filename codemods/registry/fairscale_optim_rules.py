"""FairScale's sharded optimizer, sharded DDP and FSDP extras, and torch's answers (FSDP307-311).

FairScale's ZeRO stack (``OSS``, ``ShardedDataParallel``, ``ShardedGradScaler``) went
into torch as ``ZeroRedundancyOptimizer`` beside plain ``DistributedDataParallel``; a few
of its FSDP helpers have no torch form at all. None of these is a rename: each call needs
its arguments read: every rule here reports for a human, except the grad scaler's
(FSDP309), renamed where each argument is named. Versions are torch releases,
those of the replacements.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import COMPAT_FAIRSCALE, FAIRSCALE_FSDP_CLASSES, FAIRSCALE_NN

_DATA_PARALLEL = f"{FAIRSCALE_NN}.data_parallel"
ZERO = "torch.distributed.optim.ZeroRedundancyOptimizer"
DDP = "torch.nn.parallel.DistributedDataParallel"
#: FairScale FSDP's own state-dict methods that torch's FSDP spells otherwise (FSDP311).
FAIRSCALE_FSDP_METHODS = (
    "local_state_dict",
    "load_local_state_dict",
    "gather_full_optim_state_dict",
    "get_shard_from_optim_state_dict",
)
RULES = (
    Rule(
        code="FSDP307",
        name="fairscale-oss",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=("fairscale.optim.OSS", "fairscale.optim.oss.OSS", f"{COMPAT_FAIRSCALE}.OSS"),
        new=ZERO,
        message=(
            "FairScale's `OSS` is archived; use torch's `ZeroRedundancyOptimizer(params, "
            "optimizer_class=..., process_group=...)` with a `DistributedDataParallel` model"
        ),
        why=(
            "FairScale's optimizer-state sharding (ZeRO stage 1) became torch's "
            "`ZeroRedundancyOptimizer` (torch 1.8). The arguments differ: `optim` is "
            "`optimizer_class` (required), `group` is `process_group`; `broadcast_fp16`, "
            "`broadcast_buffer_size` and `force_broadcast_object` have no torch meaning. "
            "`consolidate_state_dict(recipient_rank=r)` is `consolidate_state_dict(to=r)`, "
            "and `state_dict(all_ranks=True)` has no torch form (the consolidated state "
            "lives on one rank). torch pairs it with `DistributedDataParallel`, so every "
            "rank holds full gradients and `OSS.clip_grad_norm` becomes "
            "`torch.nn.utils.clip_grad_norm_`. FairScale broadcast each rank's parameters "
            "packed in one flat buffer: `parameters_as_bucket_view=True` is that, and on "
            "torch 2.2 (gloo) it also keeps `destroy_process_group` after a step from hanging "
            "(the per-parameter default leaves temporaries that gloo's worker thread frees "
            "while the destroying thread holds the GIL). `compat.fairscale.OSS` runs the old "
            "call on torch's optimizer that way meanwhile."
        ),
        example=Example(
            before=(
                "import torch\n"
                "from fairscale.optim.oss import OSS\n"
                "optimizer = OSS(model.parameters(), optim=torch.optim.AdamW, lr=1e-4)\n"
            ),
            after=(
                "import torch\n"
                "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
                "optimizer = ZeroRedundancyOptimizer(\n"
                "    model.parameters(),\n"
                "    optimizer_class=torch.optim.AdamW,\n"
                "    parameters_as_bucket_view=True,\n"
                "    lr=1e-4,\n"
                ")\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="1.8",
        references=(
            "https://pytorch.org/docs/stable/distributed.optim.html",
            "https://fairscale.readthedocs.io/en/latest/api/optim/oss.html",
        ),
        cases=(
            Example.reported_only(
                "import torch\n"
                "from fairscale.optim import OSS\n"
                "class ShardedAdamW(OSS):\n"
                "    def __init__(self, params, lr=1e-3):\n"
                "        super().__init__(params, optim=torch.optim.AdamW, lr=lr)\n"
            ),
            Example.reported_only(
                "def build_optimizer(groups, args):\n"
                '    if args.precision == "fairscale":\n'
                "        from fairscale.optim.oss import OSS\n"
                "        return OSS(params=groups, optim=AdamW, lr=args.lr)\n"
                "    return AdamW(groups, lr=args.lr)\n"
            ),
        ),
        untouched=(
            (
                "import torch\n"
                "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
                "optimizer = ZeroRedundancyOptimizer(\n"
                "    model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-4\n"
                ")\n"
            ),
            "from my_project.storage import OSS\nbucket = OSS(endpoint)\n",
        ),
    ),
    Rule(
        code="FSDP308",
        name="fairscale-sharded-ddp",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=(
            f"{FAIRSCALE_NN}.ShardedDataParallel",
            f"{_DATA_PARALLEL}.ShardedDataParallel",
            f"{_DATA_PARALLEL}.sharded_ddp.ShardedDataParallel",
            f"{COMPAT_FAIRSCALE}.ShardedDataParallel",
        ),
        new=DDP,
        message=(
            "FairScale's `ShardedDataParallel` is archived; wrap the model in torch's "
            "`DistributedDataParallel` and shard the optimizer with `ZeroRedundancyOptimizer`"
        ),
        why=(
            "`ShardedDataParallel(module, sharded_optimizer)` reduced each gradient only to "
            "the rank whose `OSS` shard owns it. torch's ZeRO works beside plain "
            "`DistributedDataParallel`, which all-reduces every gradient: the same training "
            "with more communication (`ZeroRedundancyOptimizer(overlap_with_ddp=True)` and "
            "a DDP communication hook overlap the two). The optimizer argument goes; "
            "`reduce_buffer_size`, `auto_refresh_trainable` and `reduce_fp16` have no DDP "
            "meaning, and `refresh_trainable()` is not needed. `compat.fairscale` builds "
            "the DDP model from the old call."
        ),
        example=Example(
            before=(
                "from fairscale.nn.data_parallel import ShardedDataParallel as ShardedDDP\n"
                "model = ShardedDDP(model, optimizer)\n"
            ),
            after=(
                "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="1.8",
        cases=(
            Example.reported_only(
                "from fairscale.nn import ShardedDataParallel\n"
                "from fairscale.optim import OSS\n"
                "optimizer = OSS(model.parameters(), optim=torch.optim.SGD, lr=0.1)\n"
                "model = ShardedDataParallel(model, optimizer)\n"
            ),
            Example.reported_only(
                "import fairscale.nn.data_parallel as fsdp_parallel\n"
                "model = fsdp_parallel.ShardedDataParallel(\n"
                "    model, sharded_optimizer=optimizer, reduce_buffer_size=2**23\n"
                ")\n"
            ),
        ),
        untouched=(
            "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n",
            (
                "from fairscale.nn.data_parallel import FullyShardedDataParallel\n"
                "model = FullyShardedDataParallel\n"
            ),
        ),
    ),
    Rule(
        code="FSDP309",
        name="fairscale-sharded-grad-scaler",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=(
            "fairscale.optim.grad_scaler.ShardedGradScaler",
            f"{COMPAT_FAIRSCALE}.ShardedGradScaler",
        ),
        new="torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
        message=(
            "FairScale's `ShardedGradScaler` is archived; use torch's "
            "`torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler`, by keyword "
            "(torch's takes `device` first, and `backoff_factor` before `growth_factor`)"
        ),
        why=(
            "torch 1.12 added its own shard-aware grad scaler (pytorch PR 76918), which, "
            "like FairScale's, all-reduces the inf/NaN check across the process group. Its "
            "parameters are `(device='cuda', init_scale, backoff_factor, growth_factor, "
            "growth_interval, enabled, process_group)`: FairScale's `(init_scale, "
            "growth_factor, backoff_factor, ...)` passed by position land on the wrong "
            "parameters, so only a call that names every argument is renamed (unsafe: torch's "
            "scaler also handles CPU-offloaded FSDP gradients, and FairScale's checked that "
            "its optimizer was `OSS`). Beside `DistributedDataParallel` "
            "and `ZeroRedundancyOptimizer` every rank holds full gradients and "
            "`torch.amp.GradScaler` is enough. `compat.fairscale.ShardedGradScaler` builds "
            "torch's from FairScale's arguments."
        ),
        example=Example(
            before=(
                "from fairscale.optim.grad_scaler import ShardedGradScaler\n"
                "scaler = ShardedGradScaler(init_scale=2.0**14)\n"
            ),
            after=(
                "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
                "scaler = ShardedGradScaler(init_scale=2.0**14)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="1.12",
        references=("https://github.com/pytorch/pytorch/pull/76918",),
        cases=(
            Example(
                before=(
                    "from fairscale.optim.grad_scaler import ShardedGradScaler\n"
                    "scaler = ShardedGradScaler(\n"
                    "    init_scale=2.0**16,\n"
                    "    growth_interval=1000,  # steps between growths\n"
                    "    process_group=group,\n"
                    ")\n"
                ),
                after=(
                    "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
                    "scaler = ShardedGradScaler(\n"
                    "    init_scale=2.0**16,\n"
                    "    growth_interval=1000,  # steps between growths\n"
                    "    process_group=group,\n"
                    ")\n"
                ),
            ),
            Example.reported_only(
                "import fairscale.optim.grad_scaler as grad_scaler\n"
                "scaler = grad_scaler.ShardedGradScaler(2.0**16, 2.0, 0.5)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
                "scaler = ShardedGradScaler()\n"
            ),
            "from torch.amp import GradScaler\nscaler = GradScaler()\n",
        ),
    ),
    Rule(
        code="FSDP310",
        name="fairscale-auto-wrap-bn",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.REMOVAL,
        old=(
            f"{_DATA_PARALLEL}.auto_wrap_bn",
            f"{_DATA_PARALLEL}.fully_sharded_data_parallel.auto_wrap_bn",
            f"{COMPAT_FAIRSCALE}.auto_wrap_bn",
        ),
        new=None,
        message=(
            "torch has no `auto_wrap_bn`: wrap batch-norm layers in their own FSDP unit "
            "(an auto-wrap policy naming the batch-norm classes) kept in full precision"
        ),
        why=(
            "FairScale's `auto_wrap_bn` wrapped every batch-norm layer in its own FSDP "
            "instance, in fp32 and unsharded by default, so that mixed precision left "
            "the statistics exact. torch's FSDP has no such helper: list the batch-norm "
            "classes in the auto-wrap policy, and keep them in full precision with "
            "`MixedPrecision(_module_classes_to_ignore=...)` (its default ignores "
            "`_BatchNorm`) or, for FSDP2, a `fully_shard` call of their own with an fp32 "
            "`MixedPrecisionPolicy`."
        ),
        example=Example(
            before=(
                "from fairscale.nn.data_parallel import auto_wrap_bn\n"
                "model = auto_wrap_bn(model, single_rank_pg=False)\n"
            ),
            after=(
                "import torch.nn as nn\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.BatchNorm2d}))\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.0",  # ModuleWrapPolicy, which the example uses
        untouched=(
            (
                "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
                "policy = ModuleWrapPolicy({nn.BatchNorm2d})\n"
            ),
            "def auto_wrap_bn(model):\n    return model\nmodel = auto_wrap_bn(model)\n",
        ),
    ),
    Rule(
        code="FSDP311",
        name="fairscale-fsdp-state-methods",
        framework=Framework.FAIRSCALE,
        kind=ChangeKind.CALL_REWRITE,
        old=tuple(
            f"{cls}.{method}" for cls in FAIRSCALE_FSDP_CLASSES for method in FAIRSCALE_FSDP_METHODS
        ),
        new="torch.distributed.fsdp.FullyShardedDataParallel.state_dict_type",
        message=(
            "FairScale FSDP's own state-dict method: torch's FSDP reads local shards with "
            "`state_dict_type(model, StateDictType.SHARDED_STATE_DICT)` and gathers "
            "optimizer state with `FSDP.optim_state_dict(model, optim)`"
        ),
        why=(
            "FairScale's FSDP offered `local_state_dict()` / `load_local_state_dict()` and "
            "`gather_full_optim_state_dict(optim)` / `get_shard_from_optim_state_dict(sd)` "
            "as methods. torch's FSDP has none of them (an `AttributeError` once the model "
            "is torch's): it selects the state-dict form with `FSDP.state_dict_type(model, "
            "StateDictType.SHARDED_STATE_DICT)` (or `LOCAL_STATE_DICT`, deprecated) around "
            "`model.state_dict()`, and moves optimizer state with the static "
            "`FSDP.optim_state_dict(model, optim)` and "
            "`FSDP.optim_state_dict_to_load(model, optim, state)`. The formats differ, so "
            "saved checkpoints need converting too. The method is called on a model whose "
            "class the call does not spell, so it is reported in files that build a model "
            "with FairScale's FSDP."
        ),
        example=Example(
            before=(
                "from fairscale.nn import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model)\n"
                "optim_state = model.gather_full_optim_state_dict(optimizer)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model)\n"
                "optim_state = FSDP.optim_state_dict(model, optimizer)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.0",
        found_in=FAIRSCALE_FSDP_CLASSES,
        cases=(
            Example.reported_only(
                "from fairscale.nn.data_parallel import FullyShardedDataParallel\n"
                "def save(model, path):\n"
                "    torch.save(model.local_state_dict(), path)\n"
                "def load(model, path):\n"
                "    model.load_local_state_dict(torch.load(path))\n"
                "model = FullyShardedDataParallel(build_model(), flatten_parameters=True)\n"
            ),
        ),
        untouched=(
            # no FairScale FSDP in the file: some other object's method of the same name
            "state = trainer.local_state_dict()\n",
            (
                # FairScale's method where FairScale imports, torch's FSDP where it does not
                "try:\n"
                "    from fairscale.nn import FullyShardedDataParallel as FSDP\n"
                "    model = FSDP(model)\n"
                "    state = model.local_state_dict()\n"
                "except ImportError:\n"
                "    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "    model = FSDP(model)\n"
                "    state = model.state_dict()\n"
            ),
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "state = FSDP.optim_state_dict(model, optimizer)\n"
            ),
        ),
    ),
)
