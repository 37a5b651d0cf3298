"""torch's distributed checkpoint (DCP) API changes (FSDP120-FSDP122, FSDP127-FSDP129)."""

from __future__ import annotations

from codemods.registry.model import ChangeKind, Example, FixSafety, Framework, Rule

DCP = "torch.distributed.checkpoint"
#: DCP's first home (torch 1.13); since 2.0 a module alias of ``torch.distributed.checkpoint``.
SHARD_DCP = "torch.distributed._shard.checkpoint"

RULES = (
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
