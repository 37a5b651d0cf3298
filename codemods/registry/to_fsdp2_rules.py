"""FSDP1 to FSDP2 (FSDP4xx): opt-in, unsafe rewrites of FSDP1 wrapping to ``fully_shard``.

torch has not deprecated FSDP1, so the family is advice: it runs only when selected
(``--extend-select FSDP4``). Its fixes are unsafe: parameters become DTensors and
checkpoints change layout, so migrate applies them only with ``--unsafe-fixes``.
"""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import TORCH_FSDP_CLASSES

_IMPORT = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
_WRAP = "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
_MODEL = "from model import Block, Head\n"

RULES = (
    Rule(
        code="FSDP401",
        name="fsdp1-wrapper-to-fully-shard",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=TORCH_FSDP_CLASSES,
        new="torch.distributed.fsdp.fully_shard",
        message=(
            "FSDP2 replaces the FSDP1 wrapper: call `fully_shard` on each unit of the "
            "policy, descendants first, then on the root"
        ),
        why=(
            "FSDP2 (`fully_shard`, torch 2.4 under `torch.distributed._composable.fsdp`, "
            "public in 2.6) shards each parameter as a DTensor, composes with tensor "
            "parallelism and is where FSDP development continues; torch's FSDP docs ask "
            "FSDP1 users to move. It has no `auto_wrap_policy`: the units are the modules "
            "one calls `fully_shard` on, children before parents. The fix does that for a "
            "policy that names its classes and translates the arguments "
            "(`sharding_strategy` to `reshard_after_forward`, with a mesh of FSDP1's "
            "ranks for `NO_SHARD` and the hybrid strategies, `MixedPrecision` to "
            "`MixedPrecisionPolicy`, `CPUOffload` to `CPUOffloadPolicy`); a call with an "
            "argument that has no certain translation (`sync_module_states=True`, "
            "`param_init_fn`, a process group, "
            "`ignored_modules`, a model built on the meta device) stays FSDP1, reported "
            "with a recipe (`--fsdp2-bridge` "
            "rewrites it to one call of compat's FSDP1 bridge instead). "
            "`isinstance(x, FSDP)` and a "
            "function's annotations naming the FSDP1 "
            "class become `FSDPModule`, the class every `fully_shard`-ed module takes on, "
            "and `FSDP.fsdp_modules(model)` the `FSDPModule` instances in "
            "`model.modules()`; on the wrapped model, `with model.no_sync():` becomes "
            "`set_requires_gradient_sync(False)` before a `try` whose `finally` turns it "
            "back on. "
            "Where the project's releases start before torch 2.4 (no FSDP2), the FSDP1 "
            "call stays beside the FSDP2 code, under `if HAS_FSDP2:` set by whether "
            "FSDP2's import succeeds (the dual stack of fairseq2, verl and accelerate). "
            "A file is converted whole or not at all, and a project's files together: a "
            "file that checks FSDP1's class but wraps nothing converts with its "
            "project's calls, or keeps them all FSDP1. Opt-in: torch has not "
            "deprecated FSDP1. Unsafe: parameters become DTensors and sharded checkpoints "
            "change layout (full state dicts keep their keys)."
        ),
        example=Example(
            before=(
                _IMPORT + _WRAP + _MODEL + "\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block, Head}))\n"
            ),
            after=(
                "from torch.distributed.fsdp import fully_shard\n" + _MODEL + "\n"
                "for submodule in reversed(list(model.modules())):  "
                "# descendants before ancestors\n"
                "    if isinstance(submodule, (Block, Head)) and submodule is not model:\n"
                "        fully_shard(submodule)\n"
                "model = fully_shard(model)\n"
            ),
        ),
        fix=FixSafety.UNSAFE,
        introduced="2.4",
        opt_in=True,
        dual_stack=True,
        references=(
            "https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",
            "https://github.com/pytorch/torchtitan/blob/main/docs/fsdp.md",
        ),
        cases=(
            Example(
                before=(
                    "import functools\n"
                    "import torch\n"
                    "import torch.distributed.fsdp as fsdp\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    + _MODEL
                    + "\n"
                    "policy = functools.partial(\n"
                    "    transformer_auto_wrap_policy, transformer_layer_cls={Block}\n"
                    ")\n"
                    "\n"
                    "\n"
                    "def shard(model):\n"
                    "    # one unit per block\n"
                    "    return fsdp.FullyShardedDataParallel(\n"
                    "        model,\n"
                    "        auto_wrap_policy=policy,\n"
                    "        sharding_strategy=fsdp.ShardingStrategy.SHARD_GRAD_OP,\n"
                    "        mixed_precision=fsdp.MixedPrecision(\n"
                    "            param_dtype=torch.bfloat16, reduce_dtype=torch.float32\n"
                    "        ),\n"
                    "        use_orig_params=True,\n"
                    "    )\n"
                ),
                after=(
                    "import functools\n"
                    "import torch\n"
                    # New imports go beside the package's own, before the project's.
                    "from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n"
                    "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
                    + _MODEL
                    + "\n"
                    "policy = functools.partial(\n"
                    "    transformer_auto_wrap_policy, transformer_layer_cls={Block}\n"
                    ")\n"
                    "\n"
                    "\n"
                    "def shard(model):\n"
                    "    # one unit per block\n"
                    "    mp_policy = MixedPrecisionPolicy(\n"
                    "        param_dtype=torch.bfloat16, reduce_dtype=torch.float32\n"
                    "    )\n"
                    # FSDP1 casts the inputs at the root only: the units get a policy
                    # that does not cast theirs.
                    "    # as FSDP1: the root casts the floating inputs, the units below it "
                    "do not\n"
                    "    unit_mp_policy = MixedPrecisionPolicy(\n"
                    "        param_dtype=torch.bfloat16,\n"
                    "        reduce_dtype=torch.float32,\n"
                    "        cast_forward_inputs=False,\n"
                    "    )\n"
                    "    for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "        if isinstance(submodule, Block) and submodule is not model:\n"
                    "            fully_shard(\n"
                    "                submodule,\n"
                    "                reshard_after_forward=False,\n"
                    "                mp_policy=unit_mp_policy,\n"
                    "            )\n"
                    "    return fully_shard(model, reshard_after_forward=False, "
                    "mp_policy=mp_policy)\n"
                ),
            ),
            # FSDP2 has no NO_SHARD, and a hybrid strategy's ranks come from the run's
            # device count: a helper written once in the file builds FSDP1's ranks as
            # a mesh, and another says whether a strategy chosen at run time reshards.
            Example(
                before=(
                    _IMPORT + "from torch.distributed.fsdp import ShardingStrategy\n\n"
                    'strategy = {"ddp": ShardingStrategy.NO_SHARD, "fsdp": '
                    "ShardingStrategy.FULL_SHARD}\n"
                    "model = FSDP(model, sharding_strategy=strategy[mode], "
                    'device_id=torch.device("cuda"))\n'
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n"
                    "from torch.distributed.fsdp import ShardingStrategy\n"
                    "import torch\n"
                    "\n"
                    'strategy = {"ddp": ShardingStrategy.NO_SHARD, "fsdp": '
                    "ShardingStrategy.FULL_SHARD}\n"
                    "\n"
                    "\n"
                    "def reshards_like_fsdp1(strategy):\n"
                    '    """Whether FSDP1\'s ``strategy`` (None: FULL_SHARD) reshards after '
                    'forward."""\n'
                    '    return getattr(strategy, "name", "FULL_SHARD") in ("FULL_SHARD", '
                    '"HYBRID_SHARD")\n'
                    "\n"
                    "\n"
                    "def mesh_like_fsdp1(strategy, module, device=None, mesh=None, "
                    "group=None):\n"
                    '    """The FSDP2 mesh over the ranks FSDP1\'s ``strategy`` shards and '
                    "replicates on.\n"
                    "\n"
                    "    FULL_SHARD and SHARD_GRAD_OP shard over ``mesh`` or ``group`` "
                    "(None: every rank);\n"
                    "    the hybrid ones over the 2-D ``mesh``, the ``(intra, inter)`` "
                    "pair of groups, or\n"
                    "    groups of ``device_count()`` consecutive ranks, replicated "
                    "across; NO_SHARD keeps\n"
                    "    a whole replica on each rank.\n"
                    '    """\n'
                    '    kind = getattr(strategy, "name", "FULL_SHARD")\n'
                    '    hybrid = kind in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2")\n'
                    '    if kind != "NO_SHARD" and not hybrid and group is None:\n'
                    "        return mesh\n"
                    '    dist, names = torch.distributed, ("replicate", "shard")\n'
                    "    from_group = dist.device_mesh.DeviceMesh.from_group\n"
                    "    init_mesh = dist.device_mesh.init_device_mesh\n"
                    "    if device is not None:\n"
                    "        device_type = torch.device(device).type\n"
                    "    else:  # FSDP1's choice: where the module's parameters are, else "
                    "the accelerator\n"
                    "        types = [p.device.type for p in module.parameters()]\n"
                    '        types = [t for t in types if t not in ("cpu", "meta")]\n'
                    '        accelerator = "cuda" if torch.cuda.is_available() else "cpu"\n'
                    "        device_type = types[0] if types else accelerator\n"
                    "    if hybrid and mesh is not None:\n"
                    "        if mesh.mesh_dim_names:\n"
                    "            return mesh\n"
                    "        groups = [mesh.get_group(0), mesh.get_group(1)]  # FSDP2 "
                    "needs named dimensions\n"
                    "        return from_group(groups, device_type, mesh.mesh, "
                    "mesh_dim_names=names)\n"
                    "    world = dist.get_world_size()\n"
                    "    if hybrid and group is None:  # FSDP1's groups of "
                    "`device_count()` consecutive ranks\n"
                    "        count = getattr(torch, device_type).device_count()\n"
                    "        shape = (world // count, count)\n"
                    "        return init_mesh(device_type, shape, mesh_dim_names=names)\n"
                    "    if hybrid:  # FSDP1's (intra-node, inter-node) pair: the grid of "
                    "ranks they form\n"
                    "        intra, inter = group\n"
                    "        rows = [None] * world\n"
                    "        dist.all_gather_object(rows, "
                    "dist.get_process_group_ranks(intra))\n"
                    "        replicas = dist.get_process_group_ranks(inter)\n"
                    "        grid = torch.tensor([rows[rank] for rank in replicas])\n"
                    "        me = dist.get_rank()\n"
                    "        column = rows[me].index(me)  # this rank's place in its shard "
                    "group\n"
                    "        if grid[:, column].tolist() != replicas:\n"
                    '            raise ValueError("the intra-node and inter-node groups '
                    'form no grid")\n'
                    "        return from_group([inter, intra], device_type, grid, "
                    "mesh_dim_names=names)\n"
                    "    if mesh is not None:\n"
                    "        group = mesh.get_group(0)  # as FSDP1 reads a mesh without a "
                    "hybrid strategy\n"
                    '    if kind != "NO_SHARD":\n'
                    "        return from_group(group, device_type)\n"
                    "    if group is None:  # NO_SHARD: every rank a replica, shards of "
                    "one rank\n"
                    "        shape = (world, 1)\n"
                    "        return init_mesh(device_type, shape, mesh_dim_names=names)\n"
                    "    alone = dist.new_group([dist.get_rank()], "
                    "use_local_synchronization=True)\n"
                    "    grid = torch.tensor(dist.get_process_group_ranks(group)).unsqueeze(1)\n"
                    "    return from_group([group, alone], device_type, grid, "
                    "mesh_dim_names=names)\n"
                    "\n"
                    "\n"
                    "strategy_ = strategy[mode]\n"
                    "model = fully_shard(\n"
                    "    model,\n"
                    "    reshard_after_forward=reshards_like_fsdp1(strategy_),\n"
                    "    mesh=mesh_like_fsdp1(strategy_, model, "
                    'device=torch.device("cuda")),\n'
                    ")\n"
                ),
            ),
            Example.reported_only(
                # One call has a plain FSDP2 form, the other has none: the file is
                # converted whole or not at all, so both stay FSDP1.
                _IMPORT + _WRAP + _MODEL + "\n"
                "encoder = FSDP(encoder, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                "decoder = FSDP(decoder, ignored_modules=[decoder.head])\n"
            ),
            Example(
                before=(
                    # On the wrapped model, later in its scope: FSDP1's methods are rewritten.
                    "import torch\n" + _IMPORT + _WRAP + _MODEL + "\n"
                    "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                    "model.clip_grad_norm_(1.0)\n"
                    "torch.save(model.state_dict(), 'model.pt')\n"
                ),
                after=(
                    "import torch\n"
                    "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                    "get_model_state_dict\n"
                    "from torch.distributed.fsdp import fully_shard\n" + _MODEL + "\n"
                    "for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "    if isinstance(submodule, Block) and submodule is not model:\n"
                    "        fully_shard(submodule)\n"
                    "model = fully_shard(model)\n"
                    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                    "torch.save(get_model_state_dict(model, "
                    "options=StateDictOptions(full_state_dict=True)), 'model.pt')\n"
                ),
            ),
            Example(
                before=(
                    # A unit check anywhere in a file that converts, before the call too.
                    _IMPORT + _WRAP + _MODEL + "\n\n"
                    "def units(model):\n"
                    "    return [m for m in model.modules() if isinstance(m, FSDP)]\n"
                    "\n\n"
                    "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                    "assert isinstance(model, (FSDP, Head))\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FSDPModule, fully_shard\n" + _MODEL + "\n\n"
                    "def units(model):\n"
                    "    return [m for m in model.modules() if isinstance(m, FSDPModule)]\n"
                    "\n\n"
                    "for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "    if isinstance(submodule, Block) and submodule is not model:\n"
                    "        fully_shard(submodule)\n"
                    "model = fully_shard(model)\n"
                    "assert isinstance(model, (FSDPModule, Head))\n"
                ),
            ),
            Example(
                before=(
                    # FSDP1's list of its modules: the FSDPModule instances on FSDP2.
                    _IMPORT + _WRAP + _MODEL + "\n"
                    "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                    "units = FSDP.fsdp_modules(model)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FSDPModule, fully_shard\n" + _MODEL + "\n"
                    "for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "    if isinstance(submodule, Block) and submodule is not model:\n"
                    "        fully_shard(submodule)\n"
                    "model = fully_shard(model)\n"
                    "units = [submodule for submodule in model.modules() "
                    "if isinstance(submodule, FSDPModule)]\n"
                ),
            ),
            Example.reported_only(
                # `FSDPModule` means something else here: the file stays FSDP1 as a whole.
                _IMPORT + _WRAP + _MODEL + "from mylib import FSDPModule\n\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                "assert isinstance(model, FSDP)\n"
            ),
            Example(
                before=(
                    # no_sync on the wrapped model: FSDP2's switch, turned back on after.
                    _IMPORT + _WRAP + _MODEL + "\n"
                    "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                    "with model.no_sync():\n"
                    "    loss.backward()\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n" + _MODEL + "\n"
                    "for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "    if isinstance(submodule, Block) and submodule is not model:\n"
                    "        fully_shard(submodule)\n"
                    "model = fully_shard(model)\n"
                    "model.set_requires_gradient_sync(False)\n"
                    "try:\n"
                    "    loss.backward()\n"
                    "finally:\n"
                    "    model.set_requires_gradient_sync(True)\n"
                ),
            ),
            Example.reported_only(
                # FSDP2's ignored parameters stay plain tensors beside DTensors: an
                # optimizer over both fails in a foreach step, so the call is left to a
                # human, and the finding says how to write it.
                _IMPORT + _WRAP + _MODEL + "\n"
                "model = FSDP(\n"
                "    model, auto_wrap_policy=ModuleWrapPolicy({Block}), "
                "ignored_modules=[model.head]\n"
                ")\n"
            ),
            Example.reported_only(
                # A no_sync context kept for later has no certain FSDP2 spelling.
                _IMPORT + _WRAP + _MODEL + "\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                "context = model.no_sync()\n"
            ),
            Example(
                # A sharded block loses its `with` (FSDP2's state dicts are sharded).
                before=(
                    _IMPORT + "from torch.distributed.fsdp import StateDictType\n\n"
                    "model = FSDP(model)\n"
                    "with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):\n"
                    "    state = {'model': model.state_dict(), "
                    "'optim': FSDP.optim_state_dict(model, optim)}\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\nfrom torch.distributed."
                    "checkpoint.state_dict import get_optimizer_state_dict\n\n"
                    "model = fully_shard(model)\nstate = {'model': model.state_dict(), "
                    "'optim': get_optimizer_state_dict(model, optim)}\n"
                ),
            ),
            Example(
                # A full block reading the optimizer's state too: both DCP reads, with
                # each config's options (rank 0's CPU copy; `{}` on other ranks).
                before=(
                    _IMPORT + "from torch.distributed.fsdp import FullOptimStateDictConfig, "
                    "FullStateDictConfig\nfrom torch.distributed.fsdp import StateDictType\n\n"
                    "model = FSDP(model)\n"
                    "with FSDP.state_dict_type(\n    model,\n    StateDictType.FULL_STATE_DICT,\n"
                    "    FullStateDictConfig(offload_to_cpu=True, rank0_only=True),\n"
                    "    FullOptimStateDictConfig(offload_to_cpu=True, rank0_only=True),\n):\n"
                    "    state = model.state_dict()\n"
                    "    optim_state = FSDP.optim_state_dict(model, optim)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n"
                    "from torch.distributed.checkpoint.state_dict import StateDictOptions, "
                    "get_model_state_dict, get_optimizer_state_dict\n\n"
                    "model = fully_shard(model)\nstate = get_model_state_dict(\n"
                    "    model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n"
                    ")\noptim_state = get_optimizer_state_dict(\n    model, optim, "
                    "options=StateDictOptions(full_state_dict=True, cpu_offload=True)\n)\n"
                ),
            ),
            Example(
                # A sharded type set for the state-dict calls after it: FSDP2's already is.
                before=(
                    _IMPORT + "from torch.distributed.fsdp import StateDictType\n\n"
                    "model = FSDP(model)\n"
                    "FSDP.set_state_dict_type(model, StateDictType.SHARDED_STATE_DICT)\n"
                    "state = model.state_dict()\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n\n"
                    "model = fully_shard(model)\nstate = model.state_dict()\n"
                ),
            ),
            Example(
                # A summon block that only reads parameters: each unit unsharded for it.
                before=(
                    "import torch\n" + _IMPORT + "\n"
                    "model = FSDP(model)\nwith FSDP.summon_full_params(model):\n"
                    "    torch.save(model.weight.detach().clone(), 'weight.pt')\n"
                ),
                after=(
                    "import torch\nfrom torch.distributed.fsdp import FSDPModule, fully_shard\n"
                    "import contextlib\n\n\n@contextlib.contextmanager\n"
                    "def summon_full_params_like_fsdp1(module):\n"
                    '    """FSDP1\'s ``summon_full_params(module)`` on FSDP2, to read: each unit '
                    'gathered in it."""\n'
                    "    units = [unit for unit in module.modules() "
                    "if isinstance(unit, FSDPModule)]\n"
                    "    for unit in units:\n        unit.unshard()\n    try:\n        yield\n"
                    "    finally:\n        for unit in reversed(units):\n"
                    "            unit.reshard()\n\n\n"
                    "model = fully_shard(model)\nwith summon_full_params_like_fsdp1(model):\n"
                    "    torch.save(model.weight.detach().clone(), 'weight.pt')\n"
                ),
            ),
            Example(
                # An import only a dropped argument used goes with it.
                before=(
                    "import torch\n" + _IMPORT + _WRAP + _MODEL + "\n"
                    "model = FSDP(\n"
                    "    model,\n"
                    "    auto_wrap_policy=ModuleWrapPolicy({Block}),\n"
                    "    device_id=torch.cuda.current_device(),\n"
                    ")\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n" + _MODEL + "\n"
                    "for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "    if isinstance(submodule, Block) and submodule is not model:\n"
                    "        fully_shard(submodule)\n"
                    "model = fully_shard(model)\n"
                ),
            ),
            Example.reported_only(
                # FSDP1's flat parameters exist on no FSDP2 model, the bridge's included.
                _IMPORT + _WRAP + _MODEL + "\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                "flat = model.params\n"
            ),
            Example.reported_only(
                # An FSDP1 attribute read where the file takes a value for an FSDP1 model:
                # the annotation would become FSDPModule, the read would find nothing.
                _IMPORT + _WRAP + _MODEL + "\n\n"
                "def group_of(module: FSDP):\n"
                "    return module.process_group\n"
                "\n\n"
                "model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
            ),
            Example.reported_only(
                # A call of the file's own FSDP1 subclass: FSDP2 has no class to subclass.
                _IMPORT + "\n\n"
                "class ShardedModel(FSDP):\n"
                "    pass\n"
                "\n\n"
                "model = ShardedModel(model)\n"
            ),
            Example.reported_only(
                # FSDP1's private modules act on FSDP1's own state, which no FSDP2 unit has.
                "import torch\n" + _IMPORT + "\n"
                "model = FSDP(model)\n"
                "for unit in FSDP.fsdp_modules(model):\n"
                "    torch.distributed.fsdp._runtime_utils._reshard(unit, unit._handle, True)\n"
            ),
            Example.reported_only(
                # FSDP2's units have none of FSDP1's attributes that the loop reads.
                _IMPORT + "\n"
                "model = FSDP(model)\n"
                "for unit in FSDP.fsdp_modules(model):\n"
                "    print(unit.sharding_strategy)\n"
            ),
            Example(
                # FSDP1's unit wraps the module it shards; FSDP2 shards it in place.
                before=(
                    _IMPORT + "\n"
                    "model = FSDP(model)\n"
                    "for unit in FSDP.fsdp_modules(model):\n"
                    "    print(type(unit.module))\n"
                ),
                after=(
                    "from torch.distributed.fsdp import FSDPModule, fully_shard\n\n"
                    "model = fully_shard(model)\n"
                    "for unit in [submodule for submodule in model.modules() "
                    "if isinstance(submodule, FSDPModule)]:\n"
                    "    print(type(unit))\n"
                ),
            ),
            Example.reported_only(
                # `fully_shard` is the old composable API here: plain code would rebind it.
                "from torch.distributed._composable import fully_shard\n" + _IMPORT + "\n"
                "model = FSDP(model)\n"
                "other = fully_shard(other)\n"
            ),
            Example.reported_only(
                # LOCAL_STATE_DICT is FSDP1's flat shards: plain FSDP2 has no such state dict.
                _IMPORT + "from torch.distributed.fsdp import StateDictType\n\n"
                "model = FSDP(model)\n"
                "FSDP.set_state_dict_type(model, StateDictType.LOCAL_STATE_DICT)\n"
            ),
            Example(
                # `**kwargs` built in the function: its keys read as the call's keywords
                # (the entries then unread go), one set on some paths only read back from
                # the dict at run time.
                before=(
                    _IMPORT + _WRAP + _MODEL + "\n\n"
                    "def shard(model, mesh=None):\n"
                    "    fsdp_kwargs = dict(auto_wrap_policy=ModuleWrapPolicy({Block}))\n"
                    "    if mesh is not None:\n"
                    '        fsdp_kwargs["device_mesh"] = mesh\n'
                    "    return FSDP(model, **fsdp_kwargs)\n"
                ),
                after=(
                    "from torch.distributed.fsdp import fully_shard\n" + _MODEL + "\n\n"
                    "def shard(model, mesh=None):\n"
                    "    fsdp_kwargs = dict()\n"
                    "    if mesh is not None:\n"
                    '        fsdp_kwargs["device_mesh"] = mesh\n'
                    '    mesh_ = fsdp_kwargs.get("device_mesh")\n'
                    "    for submodule in reversed(list(model.modules())):  "
                    "# descendants before ancestors\n"
                    "        if isinstance(submodule, Block) and submodule is not model:\n"
                    "            fully_shard(submodule, mesh=mesh_)\n"
                    "    return fully_shard(model, mesh=mesh_)\n"
                ),
            ),
            Example.reported_only(
                # A framework's keywords, kept on the object: unknown statically.
                _IMPORT + "\n\n"
                "class Strategy:\n"
                "    def wrap(self, model):\n"
                "        return FSDP(model, **self.fsdp_kwargs)\n"
            ),
        ),
        untouched=(
            (
                "from torch.distributed.fsdp import fully_shard\n"
                "for block in model.blocks:\n"
                "    fully_shard(block)\n"
                "fully_shard(model)\n"
            ),
            (
                "from torch.distributed.fsdp import ShardingStrategy\n"
                "strategy = ShardingStrategy.FULL_SHARD\n"
            ),
            ("from fairscale.nn import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n"),
            (
                # a unit check with no wrapper call in the file: nothing to convert
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
                "def units(model):\n"
                "    return [m for m in model.modules() if isinstance(m, FSDP)]\n"
            ),
            (
                "try:\n"
                "    from torch.distributed.fsdp import fully_shard\n"
                "except ImportError:\n"
                "    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
            ),
        ),
    ),
)
