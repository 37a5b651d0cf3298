"""torch's distributed checkpoint (DCP) API changes (FSDP120-FSDP122)."""

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
        warns=(r"`?torch\.distributed\._shard\.checkpoint`? will be deprecated",),  # 2.0: no `
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
            Example(
                before=(
                    "import torch.distributed._shard.checkpoint as dist_cp\n"
                    'writer = dist_cp.FileSystemWriter("ckpt")\n'
                ),
                after=(
                    "import torch.distributed.checkpoint as dist_cp\n"
                    'writer = dist_cp.FileSystemWriter("ckpt")\n'
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
            "torch 2.2 replaced `load_state_dict` with `load`, which can also find the storage "
            "from a `checkpoint_id` path, and deprecated the old function (FutureWarning); it is "
            "to be removed. Both load in place into the tensors of the state dict passed; until "
            "torch 2.3, `load` did not write back top-level values that are not tensors (a step "
            "counter), so the fix is offered for a target of torch 2.4 or later. "
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
        introduced="2.4",
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

RULES = CHECKPOINT_RULES + _MODULE_RULES
