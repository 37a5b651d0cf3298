"""Which files of a run are one project's code, for decisions a project makes together.

FSDP401 converts a project's files together (:mod:`codemods.cli.project_fsdp1`). A
project is what a user means by one:

- the files under one project root (:func:`codemods.cli.floors.find_project_root`);
- the files with no project root, within which (as within any project) a file's
  models reach only the files imports link it to (:mod:`codemods.cli.project_reach`):
  two unrelated scripts in one folder do not decide for each other;
- a copy of someone else's code inside a project (``third_party/torch/...``, a vendored
  copy of torch's own modules) is not the project's code (:func:`vendored`).
"""

from __future__ import annotations

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


def shown(path: Path, root: Path | None) -> str:
    """``path`` relative to its project's root where it has one."""
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()
