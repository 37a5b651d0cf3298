"""How a module spells FSDP1's class and FSDP2's, read with ``ast`` (for FSDP401's run).

Shared by the survey of a run's FSDP1 checks (:mod:`codemods.cli.project_fsdp1`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from codemods.cli.fsdp2_dispatch import fsdp2_answers
from codemods.cli.shared_walks import walk

#: The modules FSDP1's class is imported from.
FSDP_MODULES = ("torch.distributed.fsdp", "torch.distributed.fsdp.fully_sharded_data_parallel")
CLASS = "FullyShardedDataParallel"

#: FSDP2's homes, and its class (every ``fully_shard``-ed module is one).
FSDP2_HOMES = ("torch.distributed.fsdp", "torch.distributed._composable.fsdp")
FSDP2_CLASS = "FSDPModule"


def class_spellings(
    tree: ast.Module, modules: tuple[str, ...] = FSDP_MODULES, name: str = CLASS
) -> set[str]:
    """The dotted spellings of torch's FSDP1 class (or ``name`` of ``modules``) in a module."""
    found = {f"{module}.{name}" for module in modules}
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in modules and not node.level:
            found.update(a.asname or a.name for a in node.names if a.name == name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    found.add(f"{alias.asname}.{name}")
    return found


def fsdp2_spellings(tree: ast.Module) -> set[str]:
    """FSDP2's class in a module: torch's, and a project's re-export under any name.

    verl imports ``from verl.utils.fsdp_utils import FSDPModule as FSDP2``.
    """
    found = class_spellings(tree, FSDP2_HOMES, FSDP2_CLASS)
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.update(a.asname for a in node.names if a.name == FSDP2_CLASS and a.asname)
    return found


def is_fsdp2(name: str | None, fsdp2: set[str]) -> bool:
    """Whether a class's dotted name is FSDP2's class (torch's, or a project's re-export)."""
    return name in fsdp2 or (name or "").rpartition(".")[2] == FSDP2_CLASS


def classes(kinds: ast.expr | None) -> list[ast.expr]:
    """The classes of an ``isinstance`` class argument: a tuple's, a ``A | B`` union's."""
    if isinstance(kinds, ast.Tuple):
        return [part for element in kinds.elts for part in classes(element)]
    if isinstance(kinds, ast.BinOp) and isinstance(kinds.op, ast.BitOr):
        return [*classes(kinds.left), *classes(kinds.right)]
    return [] if kinds is None else [kinds]


def versions(trees: Iterable[ast.Module]) -> dict[str, object]:
    """What the ``fsdp_version(model)``-like functions of ``trees`` answer for FSDP2 models.

    A name defined with different answers answers nothing.
    """
    found: dict[str, object] = {}
    clashes: set[str] = set()
    for tree in trees:
        fsdp2 = functools.partial(is_fsdp2, fsdp2=fsdp2_spellings(tree))
        for name, answer in fsdp2_answers(tree, class_spellings(tree).__contains__, fsdp2).items():
            if found.setdefault(name, answer) != answer:
                clashes.add(name)
    return {name: answer for name, answer in found.items() if name not in clashes}
