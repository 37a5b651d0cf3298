"""Which files of a run are one project's code, for decisions a project makes together.

FSDP401 converts a project's files together (:mod:`codemods.cli.project_fsdp1`). A
project is what a user means by one:

- the files under one project root (:func:`codemods.cli.floors.find_project_root`);
- a file with no project root is a project of its own, together with the files of the
  run it imports or that import it (:func:`loose_projects`): two unrelated scripts in one
  folder do not decide for each other;
- a copy of someone else's code inside a project (``third_party/torch/...``, a vendored
  copy of torch's own modules) is not the project's code (:func:`vendored`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

#: Folders that hold copies of other projects' code.
VENDOR_FOLDERS = frozenset(
    {"third_party", "third-party", "thirdparty", "vendor", "vendored", "_vendor", "extern"}
)
#: torch's own packages: a ``torch`` folder holding one of these below a project's top
#: is a copy of torch (``myproj/patches/torch/distributed/...``).
TORCH_PACKAGES = frozenset({"distributed", "nn", "optim", "utils", "_composable"})


def vendored(path: Path, root: Path | None) -> bool:
    """Whether ``path`` is a copy of another project's code inside its project.

    Under a vendor folder (``third_party``, ``vendor``, ...) below the project root, or
    under a ``torch`` folder that holds torch's own packages below the project's top.
    Without a root only a vendor folder counts (a checkout of torch itself is no copy).

    Example:
        >>> root = Path("/p")
        >>> vendored(Path("/p/verl/third_party/torch/distributed/checkpoint/state_dict.py"), root)
        True
        >>> vendored(Path("/p/src/lib/patches/torch/distributed/fsdp.py"), root)
        True
        >>> [vendored(Path(f"/p/{name}"), root) for name in ("torch/nn/x.py", "train.py")]
        [False, False]
    """
    try:
        parts = path.relative_to(root).parts[:-1] if root is not None else path.parts[:-1]
    except ValueError:
        parts = path.parts[:-1]
    if any(part.lower() in VENDOR_FOLDERS for part in parts):
        return True
    if root is None:
        return False
    return any(
        part == "torch"
        and index > 0
        and parts[index + 1 : index + 2] != ()
        and parts[index + 1] in TORCH_PACKAGES
        for index, part in enumerate(parts)
    )


def _imported(path: Path, tree: ast.Module) -> set[Path]:
    """The files ``tree`` (the module at ``path``) may import, by their paths.

    A module ``a.b`` is looked for as ``a/b.py`` or ``a/b/__init__.py`` from the file's
    folder and each folder above it; ``from a import b`` also as ``a/b.py``; relative
    imports from the folder their dots name.
    """
    names: list[tuple[Path, str]] = []
    bases = [path.parent, *path.parent.parents]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(base, alias.name) for alias in node.names for base in bases]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 >= len(bases):
                    continue
                starts = [bases[node.level - 1]]
            else:
                starts = bases
            module = node.module or ""
            for base in starts:
                if module:
                    names.append((base, module))
                names += [(base, f"{module}.{a.name}".strip(".")) for a in node.names]
    found = set()
    for base, module in names:
        stem = base.joinpath(*module.split("."))
        found.update({stem.with_suffix(".py"), stem / "__init__.py"})
    return found


def loose_projects(trees: dict[Path, ast.Module]) -> Iterable[tuple[Path, Path]]:
    """For files with no project root: each file and its project's key (a file of it).

    Files that import one another (directly, or through other files of ``trees``) are
    one project; any other file is its own.

    Example:
        >>> trees = {
        ...     Path("/s/train.py"): ast.parse("from helpers import shard"),
        ...     Path("/s/helpers.py"): ast.parse("import torch"),
        ...     Path("/s/other.py"): ast.parse("import torch"),
        ... }
        >>> sorted((p.name, k.name) for p, k in loose_projects(trees))
        [('helpers.py', 'helpers.py'), ('other.py', 'other.py'), ('train.py', 'helpers.py')]
    """
    group = {path: path for path in trees}

    def find(path: Path) -> Path:
        while group[path] != path:
            group[path] = group[group[path]]
            path = group[path]
        return path

    for path, tree in trees.items():
        for other in _imported(path, tree) & group.keys():
            first, second = sorted((find(path), find(other)))
            group[second] = first
    return [(path, find(path)) for path in trees]
