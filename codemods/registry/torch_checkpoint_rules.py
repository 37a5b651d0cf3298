"""torch's distributed checkpoint (DCP) API changes (FSDP120-FSDP122, FSDP127-FSDP129)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule
from codemods.registry.names import DCP

#: DCP's first home (torch 1.13); since 2.0 a module alias of ``torch.distributed.checkpoint``.
SHARD_DCP = "torch.distributed._shard.checkpoint"

_MODULE_RULES = (
    Rule(
        code="FSDP122",
        name="shard-checkpoint-module",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(SHARD_DCP,),
        new=DCP,
        message=(
            "import distributed checkpointing from `torch.distributed.checkpoint`, not the "
            "private `torch.distributed._shard.checkpoint`"
        ),
        why=(
            "Distributed checkpointing arrived as `torch.distributed._shard.checkpoint` in "
            "torch 1.13 and moved to `torch.distributed.checkpoint` in 2.0. The old path is "
            "an alias of the new module kept for backward compatibility, and importing it "
            "warns (DeprecationWarning) on every release since."
        ),
        example=Example(
            before=(
                "from torch.distributed._shard.checkpoint import FileSystemWriter\n"
                'writer = FileSystemWriter("ckpt")\n'
            ),
            after=(
                "from torch.distributed.checkpoint import FileSystemWriter\n"
                'writer = FileSystemWriter("ckpt")\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.0",
        deprecated="2.0",
        references=(
            "https://github.com/pytorch/pytorch/issues/86620",
            "https://github.com/pytorch/pytorch/pull/88698",
        ),
        warns=(r"`torch\.distributed\._shard\.checkpoint` will be deprecated",),
        cases=(
            Example(
                before=(
                    "from torch.distributed._shard.checkpoint import (\n"
                    "    FileSystemReader,\n"
                    "    FileSystemWriter,  # one folder per step\n"
                    ")\n"
                    'reader, writer = FileSystemReader("a"), FileSystemWriter("b")\n'
                ),
                after=(
                    "from torch.distributed.checkpoint import (\n"
                    "    FileSystemReader,\n"
                    "    FileSystemWriter,  # one folder per step\n"
                    ")\n"
                    'reader, writer = FileSystemReader("a"), FileSystemWriter("b")\n'
                ),
            ),
        ),
        untouched=(
            "from torch.distributed.checkpoint import FileSystemWriter\n"
            'writer = FileSystemWriter("ckpt")\n',
            "try:\n"
            "    import torch.distributed.checkpoint as dcp\n"
            "except ImportError:\n"
            "    import torch.distributed._shard.checkpoint as dcp\n",
            'MODULE = "torch.distributed._shard.checkpoint"\n',
        ),
    ),
)


#: Where DCP's functions are reachable: the package, its modules, and the old package.
def _dcp_paths(module: str, name: str) -> tuple[str, ...]:
    return tuple(
        f"{root}{suffix}.{name}" for root in (DCP, SHARD_DCP) for suffix in ("", f".{module}")
    )


_SAVE_BEFORE = (
    "import torch.distributed.checkpoint as dcp\n"
    'dcp.save_state_dict(state, dcp.FileSystemWriter("ckpt"))\n'
)
_LOAD_BEFORE = (
    "import torch.distributed.checkpoint as dcp\n"
    'dcp.load_state_dict(state, dcp.FileSystemReader("ckpt"))\n'
)
_SIGNATURE_WHY = (
    "Only the state dict stays positional: `{new}(state_dict, *, checkpoint_id=None, "
    "{io}=None, planner=None, process_group=None, no_dist=False, ...)`. The fix names "
    "each positional argument after the old parameter and drops a literal "
    "`coordinator_rank=0`; the new API has no `coordinator_rank` (rank 0 always "
    "coordinates), so a call with another rank, or with `*args`/`**kwargs`, is left "
    "for a human. `{new}` also accepts `Stateful` values (it calls their "
    "`state_dict()`{extra}) and, where the process group is not initialized, "
    "runs on one process instead of failing."
)
CHECKPOINT_RULES = (
    Rule(
        code="FSDP120",
        name="dcp-save-state-dict",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=_dcp_paths("state_dict_saver", "save_state_dict"),
        new=f"{DCP}.save",
        message=(
            "`torch.distributed.checkpoint.save_state_dict` is deprecated: call "
            "`save(state_dict, storage_writer=...)` (keyword-only after the state dict)"
        ),
        why=(
            "torch 2.2 replaced `save_state_dict` with `save`, which can also find the "
            "storage from a `checkpoint_id` path, and deprecated the old function "
            "(FutureWarning); it is to be removed. "
            + _SIGNATURE_WHY.format(new="save", io="storage_writer", extra="")
        ),
        example=Example(
            before=_SAVE_BEFORE,
            after=(
                "import torch.distributed.checkpoint as dcp\n"
                'dcp.save(state, storage_writer=dcp.FileSystemWriter("ckpt"))\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.2",
        deprecated="2.2",
        references=(
            "https://github.com/pytorch/pytorch/pull/113867",
            "https://pytorch.org/docs/stable/distributed.checkpoint.html",
        ),
        warns=(r"`save_state_dict` is deprecated and will be removed",),
        cases=(
            Example(
                before=(
                    "from torch.distributed.checkpoint import FileSystemWriter, save_state_dict\n"
                    "save_state_dict(\n"
                    '    state_dict={"model": model.state_dict()},\n'
                    '    storage_writer=FileSystemWriter("ckpt"),\n'
                    "    coordinator_rank=0,\n"
                    ")\n"
                ),
                after=(
                    "from torch.distributed.checkpoint import FileSystemWriter, save\n"
                    "save(\n"
                    '    state_dict={"model": model.state_dict()},\n'
                    '    storage_writer=FileSystemWriter("ckpt"),\n'
                    ")\n"
                ),
            ),
            Example(
                before=(
                    "from torch.distributed._shard.checkpoint import save_state_dict\n"
                    "save_state_dict(state, writer, group, 0, False, planner)\n"
                ),
                after=(
                    "from torch.distributed.checkpoint import save\n"
                    "save(state, storage_writer=writer, process_group=group, no_dist=False, "
                    "planner=planner)\n"
                ),
            ),
            Example.reported_only(
                "from torch.distributed.checkpoint import save_state_dict\n"
                "save_state_dict(state, writer, coordinator_rank=leader)\n"
            ),
            Example.reported_only(
                "from torch.distributed.checkpoint import save_state_dict\n"
                "save_state_dict(state, *io_args)\n"
            ),
            Example.reported_only(
                "from torch.distributed.checkpoint import FileSystemWriter, save_state_dict\n"
                "def save(model, path):\n"
                "    save_state_dict(model.state_dict(), FileSystemWriter(path))\n"
            ),
        ),
        untouched=(
            'import torch.distributed.checkpoint as dcp\ndcp.save(state, checkpoint_id="ckpt")\n',
            "def save_state_dict(state, path):\n"
            "    torch.save(state, path)\n"
            'save_state_dict(model.state_dict(), "model.pt")\n',
            "model.load_state_dict(torch.load(path))\noptimizer.load_state_dict(state)\n",
        ),
    ),
    Rule(
        code="FSDP121",
        name="dcp-load-state-dict",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=_dcp_paths("state_dict_loader", "load_state_dict"),
        new=f"{DCP}.load",
        message=(
            "`torch.distributed.checkpoint.load_state_dict` is deprecated: call "
            "`load(state_dict, storage_reader=...)` (keyword-only after the state dict)"
        ),
        why=(
            "torch 2.2 replaced `load_state_dict` with `load`, which can also find the "
            "storage from a `checkpoint_id` path, and deprecated the old function "
            "(FutureWarning); it is to be removed. Both load in place into the tensors "
            "of the state dict passed. "
            + _SIGNATURE_WHY.format(
                new="load", io="storage_reader", extra=" and `load_state_dict()` after"
            )
        ),
        example=Example(
            before=_LOAD_BEFORE,
            after=(
                "import torch.distributed.checkpoint as dcp\n"
                'dcp.load(state, storage_reader=dcp.FileSystemReader("ckpt"))\n'
            ),
        ),
        fix=FixSafety.SAFE,
        introduced="2.2",
        deprecated="2.2",
        references=(
            "https://github.com/pytorch/pytorch/pull/113867",
            "https://github.com/Lightning-AI/pytorch-lightning/pull/19298",
        ),
        warns=(r"`load_state_dict` is deprecated and will be removed",),
        cases=(
            Example(
                before=(
                    "from functools import partial\n"
                    "from torch.distributed.checkpoint.state_dict_loader import load_state_dict\n"
                    "restore = partial(load_state_dict, storage_reader=reader, no_dist=True)\n"
                ),
                after=(
                    "from functools import partial\n"
                    "from torch.distributed.checkpoint import load\n"
                    "restore = partial(load, storage_reader=reader, no_dist=True)\n"
                ),
            ),
            Example.reported_only(
                "from torch.distributed.checkpoint import load_state_dict\n"
                "load_state_dict(state, reader, **options)\n"
            ),
        ),
        untouched=(
            'import torch.distributed.checkpoint as dcp\ndcp.load(state, checkpoint_id="ckpt")\n',
            "model.load_state_dict(state)\n",
        ),
    ),
)

STATE_DICT_API = f"{DCP}.state_dict"


def _state_dict_api(*names: str) -> tuple[str, ...]:
    return tuple(f"{module}.{name}" for module in (STATE_DICT_API,) for name in names)


STATE_DICT_RULES = (
    Rule(
        code="FSDP127",
        name="state-dict-submodules",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=_state_dict_api("get_state_dict", "get_model_state_dict", "get_optimizer_state_dict"),
        new=f"{STATE_DICT_API}.get_model_state_dict",
        argument="submodules",
        message=(
            "`get_state_dict(..., submodules=...)` is deprecated: get the whole state dict "
            "and keep the submodules' keys"
        ),
        why=(
            "torch 2.4 deprecated getting the state dict of some submodules only "
            "(FutureWarning, announced for removal in 2.5, and still accepted in 2.13). The "
            "recipe: call without `submodules`, then keep the entries whose keys start "
            "with each submodule's qualified name plus a dot (the names come from "
            "`model.named_modules()`); the old default `keep_submodule_prefixes=True` kept "
            "those full keys, `False` stripped the prefix. Optimizer state is keyed by "
            "parameter names the same way. A human applies it: which keys a submodule "
            "owns depends on the model."
        ),
        example=Example(
            before=(
                "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
                "state = get_model_state_dict(model, submodules={model.encoder})\n"
            ),
            after=(
                "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
                "state = {\n"
                "    key: value\n"
                "    for key, value in get_model_state_dict(model).items()\n"
                '    if key.startswith("encoder.")\n'
                "}\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        deprecated="2.4",
        references=(
            "https://github.com/pytorch/pytorch/pull/127793",
            "https://pytorch.org/docs/stable/distributed.checkpoint.html",
        ),
        warns=(r"Getting submodules only model/optim state_dict is deprecated",),
        cases=(
            Example.reported_only(
                "import torch.distributed.checkpoint.state_dict as dsd\n"
                "model_sd, optim_sd = dsd.get_state_dict(\n"
                "    model, optimizer, submodules={model.head}, options=options\n"
                ")\n"
            ),
        ),
        untouched=(
            "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
            "state = get_model_state_dict(model, options=options)\n",
            "state = get_model_state_dict(model, submodules={model.encoder})\n",
        ),
    ),
    Rule(
        code="FSDP128",
        name="module-keyed-state-dict",
        framework=Framework.TORCH,
        kind=ChangeKind.CALL_REWRITE,
        old=_state_dict_api("set_state_dict", "set_model_state_dict"),
        new=f"{STATE_DICT_API}.set_model_state_dict",
        message=(
            "a model state dict keyed by modules is deprecated: key it by parameter name, "
            "with each submodule's prefix"
        ),
        why=(
            "torch 2.4 deprecated passing `{submodule: state_dict}` to `set_state_dict` / "
            "`set_model_state_dict` (FutureWarning, announced for removal in 2.5, still "
            "accepted in 2.13). The recipe: merge the parts into one dict keyed by "
            "qualified names, prefixing each key with the submodule's name from "
            "`model.named_modules()`, and pass `StateDictOptions(strict=False)` where only "
            "part of the model is loaded. Found where the call holds the dict display; "
            "a dict built elsewhere is not followed."
        ),
        example=Example(
            before=(
                "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
                "set_model_state_dict(model, {model.encoder: encoder_state}, options=options)\n"
            ),
            after=(
                "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
                'state = {f"encoder.{key}": value for key, value in encoder_state.items()}\n'
                "set_model_state_dict(model, state, options=options)\n"
            ),
        ),
        fix=FixSafety.MANUAL,
        introduced="2.2",
        deprecated="2.4",
        references=("https://github.com/pytorch/pytorch/pull/127793",),
        warns=(r"Passing model_state_dict as a ``Dict\[nn\.Module, Dict\[str, Any\]\]``",),
        cases=(
            Example.reported_only(
                "from torch.distributed.checkpoint.state_dict import set_state_dict\n"
                "set_state_dict(\n"
                "    model,\n"
                "    optimizer,\n"
                "    model_state_dict={model.backbone: backbone, model.layers[0]: first},\n"
                "    optim_state_dict=optim_state,\n"
                ")\n"
            ),
        ),
        untouched=(
            "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
            'set_model_state_dict(model, {"encoder.weight": weight})\n',
            "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
            "set_model_state_dict(model, {WEIGHT_KEY: weight})\n",
            "from torch.distributed.checkpoint.state_dict import set_model_state_dict\n"
            "set_model_state_dict(model, state_by_module)\n",
        ),
    ),
)

RULES = CHECKPOINT_RULES + _MODULE_RULES + STATE_DICT_RULES
