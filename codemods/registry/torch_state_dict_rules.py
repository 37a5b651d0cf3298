"""FSDP1's own state-dict API, deprecated for distributed checkpoint (FSDP115-FSDP118).

torch points the users of these to ``torch.distributed.checkpoint.state_dict``.
"""

from __future__ import annotations

from codemods.registry.lightning_strategy_rules import FSDP_STRATEGY
from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import COMPAT_FSDP_CLASSES, TORCH_FSDP, TORCH_FSDP_CLASSES

_CLASSES = (*TORCH_FSDP_CLASSES, *COMPAT_FSDP_CLASSES)
_DCP_STATE_DICT = "torch.distributed.checkpoint.state_dict"

#: FSDP1's optimizer-state-dict methods that torch deprecates in favour of
#: ``optim_state_dict`` / ``optim_state_dict_to_load``.
LEGACY_OPTIM_STATE_DICT_METHODS = (
    "full_optim_state_dict",
    "sharded_optim_state_dict",
    "shard_full_optim_state_dict",
    "flatten_sharded_optim_state_dict",
    "scatter_full_optim_state_dict",
)

#: The methods that take the deprecated ``optim_input`` argument.
OPTIM_INPUT_METHODS = (*LEGACY_OPTIM_STATE_DICT_METHODS, "rekey_optim_state_dict")

RULES = (
    Rule(
        code="FSDP115",
        name="fsdp-state-dict-type",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=tuple(
            f"{cls}.{method}"
            for method in ("state_dict_type", "set_state_dict_type")
            for cls in _CLASSES
        ),
        new=f"{_DCP_STATE_DICT}.get_model_state_dict",
        message=(
            "`FSDP.state_dict_type()` / `set_state_dict_type()` are deprecated: call "
            "`get_model_state_dict(model, options=StateDictOptions(full_state_dict=..., "
            "cpu_offload=...))` / `set_model_state_dict(model, state, options=...)` (and "
            "`get_optimizer_state_dict` / `set_optimizer_state_dict`) from "
            "`torch.distributed.checkpoint.state_dict` instead"
        ),
        why=(
            "The context manager switches how every FSDP module of the model answers "
            "`state_dict()`, `load_state_dict()` and `FSDP.optim_state_dict()`. torch's "
            "distributed-checkpoint functions take the same choices as `StateDictOptions` on one "
            "call, work for FSDP1, FSDP2 and plain modules alike, and are what torch now points "
            "to. They offer two full layouts: `full_state_dict=True` is "
            "`FullStateDictConfig(offload_to_cpu=False, rank0_only=False)` (the default config), "
            "and adding `cpu_offload=True` is `offload_to_cpu=True, rank0_only=True` (ranks other "
            "than 0 get an empty dict); a mixed config has no equivalent. `SHARDED_STATE_DICT` is "
            "`full_state_dict=False`. The fix rewrites a `with` block whose one statement is "
            "`x = model.state_dict()` or `model.load_state_dict(x)` under `FULL_STATE_DICT`; two "
            "gloo ranks give equal dicts (the same keys in the same order, equal tensors; a "
            "plain `dict` where `state_dict()` gave an `OrderedDict` with its `_metadata`) and "
            "an equally loaded model for each form it rewrites. Saving with `cpu_offload=True` "
            "is what torch's own code does for that "
            "config, but FSDP1 cannot run `rank0_only=True` on CPU, and FSDP1 offloads only "
            "sharded parameters: under `NO_SHARD` (which it falls back to on one GPU) it "
            "leaves them on the GPU, where the rewrite puts every tensor on the CPU as the "
            "config asks (one H200, torch 2.11: the same keys and values, on another device; "
            "`tests/test_state_dict_fix_runs.py`): that rewrite is unsafe. FSDP1's `rank0_only` "
            "means rank 0 of the model's process group, `cpu_offload=True` the global rank 0: "
            "in a file that shards on a group of its own (`process_group=` or `device_mesh=` "
            "to the wrapper, hybrid sharding) each other group's rank 0 would get an empty "
            "dict, and that save is reported, not rewritten. The rule speaks "
            "from 2.4, where torch deprecates the API, and no earlier `--target-torch` gets "
            "its fixes; that matters for the load form: "
            "torch 2.2's `set_model_state_dict` refuses an FSDP1 model that has not run a forward "
            "yet, which is when checkpoints are loaded. The rest (sharded types, optimizer state "
            "in the block, `set_state_dict_type`, which changes every later call) is reported."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "def save(model):\n"
                "    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
                "        state = model.state_dict()\n"
                "    return state\n"
            ),
            after=(
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "def save(model):\n"
                "    state = get_model_state_dict(\n"
                "        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
                "    )\n"
                "    return state\n"
            ),
        ),
        fix=FixSafety.SAFE,
        unsafe_forms=(
            "saving with `offload_to_cpu=True, rank0_only=True` (FSDP1 under `NO_SHARD` "
            "kept the parameters on the GPU; `cpu_offload=True` puts them on the CPU)"
        ),
        introduced="2.2",
        deprecated="2.4",
        references=(
            "https://pytorch.org/docs/stable/distributed.checkpoint.html"
            "#torch.distributed.checkpoint.state_dict.get_state_dict",
        ),
        warns=(
            r"FSDP\.state_dict_type\(\) and FSDP\.set_state_dict_type\(\) are being deprecated",
        ),
        cases=(
            Example(
                "import torch.distributed.fsdp as fsdp\n"
                "with fsdp.FullyShardedDataParallel.state_dict_type(\n"
                "    model, fsdp.StateDictType.FULL_STATE_DICT\n"
                "):\n"
                "    full = model.state_dict()\n",
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "full = get_model_state_dict(model, options=StateDictOptions("
                "full_state_dict=True))\n",
            ),
            Example(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "def load(model, state):\n"
                "    config = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):\n"
                "        model.load_state_dict(state)\n",
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "set_model_state_dict\n"
                "\n"
                "def load(model, state):\n"
                "    set_model_state_dict(model, state, options=StateDictOptions("
                "full_state_dict=True))\n",
            ),
            # A module-level config stays (other modules may import it).
            Example(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "save_policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "def save(model):\n"
                "    with FSDP.state_dict_type(\n"
                "        model, StateDictType.FULL_STATE_DICT, save_policy\n"
                "    ):\n"
                "        cpu_state = model.state_dict()\n"
                "    return cpu_state\n",
                "from torch.distributed.fsdp import FullStateDictConfig\n"
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "save_policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "def save(model):\n"
                "    cpu_state = get_model_state_dict(\n"
                "        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
                "    )\n"
                "    return cpu_state\n",
            ),
            # The config is changed after it is made: which values reach the call is unknown.
            Example.reported_only(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "policy.rank0_only = False\n"
                "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, policy):\n"
                "    state = model.state_dict()\n"
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp import StateDictType\n"
                "FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)\n"
            ),
            # Sharded: ShardedTensor or DTensor values depending on how FSDP was built.
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp import StateDictType\n"
                "with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):\n"
                "    state = model.state_dict()\n"
            ),
            # offload_to_cpu without rank0_only: no StateDictOptions gives that.
            Example.reported_only(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "cfg = FullStateDictConfig(offload_to_cpu=True)\n"
                "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
                "    state = model.state_dict()\n"
            ),
            # One config for two blocks: it goes with the last of them.
            Example(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "def save(model, other):\n"
                "    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
                "        state = model.state_dict()\n"
                "    with FSDP.state_dict_type(other, StateDictType.FULL_STATE_DICT, cfg):\n"
                "        extra = other.state_dict()\n"
                "    return state, extra\n",
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "def save(model, other):\n"
                "    state = get_model_state_dict(\n"
                "        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
                "    )\n"
                "    extra = get_model_state_dict(\n"
                "        other, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
                "    )\n"
                "    return state, extra\n",
            ),
            # The lines above a dropped config stay, comments and all.
            Example(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "def save(model):\n"
                "    model.eval()\n"
                "\n"
                "    # every rank gathers the whole model\n"
                "    cfg = FullStateDictConfig(offload_to_cpu=False, rank0_only=False)\n"
                "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
                "        state = model.state_dict()\n"
                "    return state\n",
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "def save(model):\n"
                "    model.eval()\n"
                "\n"
                "    # every rank gathers the whole model\n"
                "    state = get_model_state_dict(model, options=StateDictOptions("
                "full_state_dict=True))\n"
                "    return state\n",
            ),
            # One of its blocks stays (a sharded type): so does the config.
            Example(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "def save(model, kind):\n"
                "    cfg = FullStateDictConfig()\n"
                "    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
                "        state = model.state_dict()\n"
                "    with FSDP.state_dict_type(model, kind, cfg):\n"
                "        other = model.state_dict()\n"
                "    return state, other\n",
                "from torch.distributed.fsdp import FullStateDictConfig\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "def save(model, kind):\n"
                "    cfg = FullStateDictConfig()\n"
                "    state = get_model_state_dict(model, options=StateDictOptions("
                "full_state_dict=True))\n"
                "    with FSDP.state_dict_type(model, kind, cfg):\n"
                "        other = model.state_dict()\n"
                "    return state, other\n",
            ),
            # The optimizer state follows FullOptimStateDictConfig's defaults there.
            Example.reported_only(
                "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
                "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):\n"
                "    state = model.state_dict()\n"
                "    optim_state = FSDP.optim_state_dict(model, optimizer)\n"
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "from torch.distributed.fsdp import StateDictType\n"
                "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
                "    state = model.module.state_dict()\n"
            ),
            # An alias by one module-level assignment is read as `import ... as` would be.
            Example(
                "from torch.distributed import fsdp\n"
                "from torch.distributed.fsdp import StateDictType\n"
                "Sharded = fsdp.FullyShardedDataParallel\n"
                "def save(model):\n"
                "    with Sharded.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
                "        state = model.state_dict()\n"
                "    return state\n",
                "from torch.distributed import fsdp\n"
                "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                "get_model_state_dict\n"
                "\n"
                "Sharded = fsdp.FullyShardedDataParallel\n"
                "def save(model):\n"
                "    state = get_model_state_dict(model, options=StateDictOptions("
                "full_state_dict=True))\n"
                "    return state\n",
            ),
        ),
        untouched=(
            (
                "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
                "state = get_model_state_dict(model)\n"
            ),
            "with model.state_dict_type():\n    state = model.state_dict()\n",
            # Bound twice: which class a use reads is not known.
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType\n"
                "Wrapper = FullyShardedDataParallel\n"
                "def save(model):\n"
                "    with Wrapper.state_dict_type(model, StateDictType.FULL_STATE_DICT):\n"
                "        return model.state_dict()\n"
                "Wrapper = None\n"
            ),
        ),
    ),
    Rule(
        code="FSDP116",
        name="legacy-optim-state-dict",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=tuple(
            f"{cls}.{method}" for method in LEGACY_OPTIM_STATE_DICT_METHODS for cls in _CLASSES
        ),
        new=f"{_DCP_STATE_DICT}.get_optimizer_state_dict",
        message=(
            "`FSDP.full_optim_state_dict()` and its siblings are deprecated: save with "
            "`get_optimizer_state_dict(model, optim, options=StateDictOptions("
            "full_state_dict=True, cpu_offload=True))` and load with "
            "`set_optimizer_state_dict(model, optim, state, "
            "options=StateDictOptions(full_state_dict=True))`; checkpoints saved by the old "
            "methods are keyed differently"
        ),
        why=(
            "The five legacy methods each fix one layout (full or sharded, keyed by parameter "
            "ids); `FSDP.optim_state_dict` follows the model's state-dict type and keys the "
            "state by parameter names, and the distributed-checkpoint functions take the layout "
            "as `StateDictOptions`. The layouts differ, so saved checkpoints and the code that "
            "reads them need a human: the rule reports."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.full_optim_state_dict(model, optimizer)\n"
            ),
            after=(
                "from torch.distributed.checkpoint.state_dict import (\n"
                "    StateDictOptions,\n"
                "    get_optimizer_state_dict,\n"
                ")\n"
                "osd = get_optimizer_state_dict(\n"
                "    model,\n"
                "    optimizer,\n"
                "    options=StateDictOptions(full_state_dict=True, cpu_offload=True),\n"
                ")\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        deprecated="2.2",
        warns=(r"``FullyShardedDataParallel\.\{curr\}``\s*is being deprecated",),
        cases=(
            Example.reported_only(
                "import torch.distributed.fsdp as fsdp\n"
                "sharded = fsdp.FullyShardedDataParallel.scatter_full_optim_state_dict(\n"
                "    osd, model\n"
                ")\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict(model, optimizer)\n"
            ),
        ),
    ),
    Rule(
        code="FSDP117",
        name="optim-input-argument",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=tuple(f"{cls}.{method}" for method in OPTIM_INPUT_METHODS for cls in _CLASSES),
        new=TORCH_FSDP_CLASSES[0],
        argument="optim_input",
        message=(
            "`optim_input=` is deprecated: where the call passes `optim=`, remove it; "
            "otherwise pass the optimizer as `optim=` and then remove it"
        ),
        why=(
            "The FSDP optimizer-state-dict methods once needed the optimizer's parameter list "
            "(`optim_input`); since torch 1.13 they take the optimizer itself (`optim`) and, "
            "given it, read the parameters from `optim.param_groups`, so torch says the "
            "argument can be removed without changing behaviour. That holds only where `optim` "
            "is passed: without it, torch assumes `model.parameters()`. The safe fix removes "
            "`optim_input` from calls that pass `optim` (by keyword or position) and reports "
            "the others."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.full_optim_state_dict(model, optimizer, optim_input=params)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.full_optim_state_dict(model, optimizer)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="1.13",
        deprecated="1.13",
        warns=(r"The `optim_input` argument is deprecated",),
        # `optim_input` may be passed by position (the third argument of most methods)
        found_in=tuple(f"{cls}.{method}" for method in OPTIM_INPUT_METHODS for cls in _CLASSES),
        cases=(
            Example(
                "import torch.distributed.fsdp as fsdp\n"
                "sharded = fsdp.FullyShardedDataParallel.shard_full_optim_state_dict(\n"
                "    osd,\n"
                "    model,\n"
                "    optim_input=params,\n"
                "    optim=optimizer,\n"
                ")\n",
                "import torch.distributed.fsdp as fsdp\n"
                "sharded = fsdp.FullyShardedDataParallel.shard_full_optim_state_dict(\n"
                "    osd,\n"
                "    model,\n"
                "    optim=optimizer,\n"
                ")\n",
            ),
            Example(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.full_optim_state_dict(model, optimizer, params, rank0_only=False)\n",
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.full_optim_state_dict(model, optimizer, rank0_only=False)\n",
            ),
            # Without `optim`, torch would fall back to `model.parameters()`.
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.rekey_optim_state_dict(osd, key_type, model, optim_input=params)\n"
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.scatter_full_optim_state_dict(osd, model, params, optimizer)\n"
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.full_optim_state_dict(model, optim_input=params, **options)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.rekey_optim_state_dict(osd, key_type, model, optim=optimizer)\n"
            ),
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict(model, optimizer)\n"
            ),
            "osd = trainer.full_optim_state_dict(model, optimizer, optim_input=params)\n",
        ),
    ),
    Rule(
        code="FSDP118",
        name="no-shard-strategy",
        framework=Framework.TORCH,
        kind=ChangeKind.REMOVAL,
        old=(
            f"{TORCH_FSDP}.ShardingStrategy.NO_SHARD",
            f"{TORCH_FSDP}.api.ShardingStrategy.NO_SHARD",
        ),
        new=None,
        message=(
            "`ShardingStrategy.NO_SHARD` is deprecated: replicate with "
            "`torch.nn.parallel.DistributedDataParallel` instead"
        ),
        why=(
            "`NO_SHARD` makes FSDP behave as data parallelism with FSDP's overheads; torch "
            "deprecates it and points to `DistributedDataParallel`. Switching wrappers changes "
            "the module structure, state-dict keys and hooks, so it is left to a human."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import ShardingStrategy\n"
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "model = FSDP(model, sharding_strategy=ShardingStrategy.NO_SHARD)\n"
            ),
            after=(
                "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        deprecated="2.4",  # no warning in 2.2.2, one in 2.4.1 (2.3 not checked)
        warns=(r"The `NO_SHARD` sharding strategy is deprecated",),
        # Lightning's strategy takes the choice by name too: `sharding_strategy="no_shard"`
        found_in=(
            f"{TORCH_FSDP}.ShardingStrategy.NO_SHARD",
            f"{TORCH_FSDP}.api.ShardingStrategy.NO_SHARD",
            *FSDP_STRATEGY,
        ),
        cases=(
            Example.reported_only(
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                'strategy = FSDPStrategy(sharding_strategy="no_shard")\n'
            ),
            Example.reported_only(
                "import torch.distributed.fsdp as fsdp\n"
                "replicate = fsdp.ShardingStrategy.NO_SHARD\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import ShardingStrategy\n"
                "strategy = ShardingStrategy.FULL_SHARD\n"
            ),
            (
                "from lightning.pytorch.strategies import FSDPStrategy\n"
                'strategy = FSDPStrategy(sharding_strategy="SHARD_GRAD_OP")\n'
            ),
            'strategy = make_strategy(sharding_strategy="NO_SHARD")\n',
        ),
    ),
    Rule(
        code="FSDP132",
        name="optim-state-dict-to-load-order",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=tuple(f"{cls}.optim_state_dict_to_load" for cls in _CLASSES),
        new=TORCH_FSDP_CLASSES[0],
        message=(
            "`optim_state_dict_to_load` took `(optim_state_dict, model, optim)` in torch 2.0 "
            "and takes `(model, optim, optim_state_dict)` since 2.1: pass them by keyword"
        ),
        why=(
            "torch 2.1 reordered the method's positional parameters (pytorch/pytorch#96534) "
            "with no shim and no warning, so a 2.0-style call hands a dict to `model` and "
            "fails deep inside; torch's own 2.1 docstrings still showed the old order. The "
            "keyword form means the same on every release. The fix names the arguments "
            "where their names make the order certain (`osd` or `...state...`, `model`, "
            "`optim...`), in either order; a call whose names do not tell is reported. A "
            "call in the new order is reported only where the target is older than 2.1."
        ),
        example=Example(
            before=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict_to_load(optim_state_dict, model, optimizer)\n"
            ),
            after=(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict_to_load(optim_state_dict=optim_state_dict, "
                "model=model, optim=optimizer)\n"
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        references=("https://github.com/pytorch/pytorch/pull/96534",),
        cases=(
            Example(
                "import torch.distributed.fsdp as fsdp\n"
                "flat = fsdp.FullyShardedDataParallel.optim_state_dict_to_load(\n"
                '    checkpoint["optim_state"],  # saved by rank 0\n'
                "    self.model,\n"
                "    self.optim,\n"
                ")\n",
                "import torch.distributed.fsdp as fsdp\n"
                "flat = fsdp.FullyShardedDataParallel.optim_state_dict_to_load(\n"
                '    optim_state_dict=checkpoint["optim_state"],  # saved by rank 0\n'
                "    model=self.model,\n"
                "    optim=self.optim,\n"
                ")\n",
            ),
            Example(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict_to_load(osd, model, opt, True, group=pg)\n",
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict_to_load(optim_state_dict=osd, model=model, "
                "optim=opt, is_named_optimizer=True, group=pg)\n",
            ),
            # The names do not tell which order the author meant.
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "loaded = FSDP.optim_state_dict_to_load(a, b, c)\n"
            ),
            Example.reported_only(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "loaded = FSDP.optim_state_dict_to_load(*parts)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict_to_load(model, optimizer, osd)\n"
            ),
            (
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "osd = FSDP.optim_state_dict_to_load(\n"
                "    model=model, optim=optimizer, optim_state_dict=osd\n"
                ")\n"
            ),
            "osd = loader.optim_state_dict_to_load(osd, model, optimizer)\n",
        ),
    ),
)
