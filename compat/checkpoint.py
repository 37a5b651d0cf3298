"""Distributed checkpoint (``torch.distributed.checkpoint``) old and new, from one place.

- :func:`save_state_dict` / :func:`load_state_dict`, the functions torch 2.2 deprecated
  for ``save`` / ``load`` (FSDP120, FSDP121): each warns at the user's line, then calls
  torch's own where the installed torch has it, or :func:`save_state_dict_with_save` /
  :func:`load_state_dict_with_load` (the old parameters mapped onto ``save`` / ``load``)
  where it does not.
- :func:`save` / :func:`load` as torch 2.4 and later spell them (``checkpoint_id=``,
  keyword-only storage): torch's own there; on torch 2.0 to 2.3 (no ``save`` before 2.2,
  no ``checkpoint_id`` before 2.4) :func:`save_with_save_state_dict` /
  :func:`load_with_load_state_dict`, so code already migrated runs there too.
- Every other name of ``torch.distributed.checkpoint`` (``FileSystemWriter``,
  ``FileSystemReader``, the planners, ...) is torch's, read through this module.

Example:
    >>> import tempfile, torch
    >>> from compat.checkpoint import load, save
    >>> folder = tempfile.mkdtemp()
    >>> _ = save({"w": torch.ones(2)}, checkpoint_id=folder)  # no process group: no_dist
    >>> target = {"w": torch.zeros(2)}
    >>> load(target, checkpoint_id=folder)
    >>> target["w"].tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import importlib
import inspect
import os
import types
from typing import Any

import torch.distributed as dist

from compat._torch import require_torch
from compat.deprecation import warn_deprecated

require_torch()


def _import_dcp() -> types.ModuleType:
    try:
        module = importlib.import_module("torch.distributed.checkpoint")
        module.FileSystemReader  # noqa: B018 - the drop-in's stand-in on torch 1.13 has none
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            "compat.checkpoint needs torch.distributed.checkpoint (torch >= 2.0, with "
            "torch.distributed; torch 1.13 has it only as torch.distributed._shard.checkpoint)"
        ) from exc
    return module


_dcp = _import_dcp()
FileSystemReader = _dcp.FileSystemReader
FileSystemWriter = _dcp.FileSystemWriter


def _old_arguments(
    function: Any,
    process_group: Any,
    coordinator_rank: int,
    no_dist: bool,
    planner: Any,
) -> dict[str, Any]:
    """The keywords of ``save``/``load`` that carry the old function's arguments."""
    parameters = inspect.signature(function).parameters
    arguments: dict[str, Any] = {"process_group": process_group, "planner": planner}
    if "coordinator_rank" in parameters:  # torch 2.2 and 2.3
        arguments["coordinator_rank"] = coordinator_rank
    # Elsewhere rank 0 coordinates: another coordinator writes the same checkpoint.
    if "no_dist" in parameters:
        arguments["no_dist"] = no_dist
    elif no_dist and dist.is_available() and dist.is_initialized():
        # save/load of torch 2.4 to 2.6 infer no_dist from the process group.
        raise ValueError(
            f"{function.__module__}.{function.__name__} of this torch has no no_dist=: it "
            "runs without collectives only where no process group is initialised"
        )
    return arguments


def save_state_dict_with_save(
    state_dict: dict[str, Any],
    storage_writer: Any,
    process_group: Any = None,
    coordinator_rank: int = 0,
    no_dist: bool = False,
    planner: Any = None,
) -> Any:
    """The old ``save_state_dict(...)`` done by torch's ``save``; returns its metadata."""
    arguments = _old_arguments(_dcp.save, process_group, coordinator_rank, no_dist, planner)
    return _dcp.save(state_dict, storage_writer=storage_writer, **arguments)


def load_state_dict_with_load(
    state_dict: dict[str, Any],
    storage_reader: Any,
    process_group: Any = None,
    coordinator_rank: int = 0,
    no_dist: bool = False,
    planner: Any = None,
) -> None:
    """The old ``load_state_dict(...)`` done by torch's ``load``, in place."""
    arguments = _old_arguments(_dcp.load, process_group, coordinator_rank, no_dist, planner)
    _dcp.load(state_dict, storage_reader=storage_reader, **arguments)


def save_state_dict(
    state_dict: dict[str, Any],
    storage_writer: Any,
    process_group: Any = None,
    coordinator_rank: int = 0,
    no_dist: bool = False,
    planner: Any = None,
) -> Any:
    """``torch.distributed.checkpoint.save_state_dict(...)``, with FSDP120's warning."""
    warn_deprecated("FSDP120")
    own = getattr(_dcp, "save_state_dict", None) or save_state_dict_with_save
    return own(state_dict, storage_writer, process_group, coordinator_rank, no_dist, planner)


def load_state_dict(
    state_dict: dict[str, Any],
    storage_reader: Any,
    process_group: Any = None,
    coordinator_rank: int = 0,
    no_dist: bool = False,
    planner: Any = None,
) -> None:
    """``torch.distributed.checkpoint.load_state_dict(...)``, with FSDP121's warning."""
    warn_deprecated("FSDP121")
    own = getattr(_dcp, "load_state_dict", None) or load_state_dict_with_load
    own(state_dict, storage_reader, process_group, coordinator_rank, no_dist, planner)


def _storage(given: Any, checkpoint_id: str | os.PathLike | None, cls: type, role: str) -> Any:
    if given is not None:
        return given
    if checkpoint_id is None:
        raise ValueError(f"pass checkpoint_id= (a folder) or {role}=")
    return cls(checkpoint_id)


def save_with_save_state_dict(
    state_dict: dict[str, Any],
    *,
    checkpoint_id: str | os.PathLike | None = None,
    storage_writer: Any = None,
    planner: Any = None,
    process_group: Any = None,
    no_dist: bool = False,
) -> Any:
    """Torch 2.4's ``save(...)`` done by ``save_state_dict`` (torch 2.0 to 2.3).

    Without ``no_dist`` it runs without collectives where no process group is initialised,
    as ``save`` does.
    """
    writer = _storage(storage_writer, checkpoint_id, FileSystemWriter, "storage_writer")
    no_dist = no_dist or not (dist.is_available() and dist.is_initialized())
    return _dcp.save_state_dict(
        state_dict, writer, process_group=process_group, no_dist=no_dist, planner=planner
    )


def load_with_load_state_dict(
    state_dict: dict[str, Any],
    *,
    checkpoint_id: str | os.PathLike | None = None,
    storage_reader: Any = None,
    planner: Any = None,
    process_group: Any = None,
    no_dist: bool = False,
) -> None:
    """Torch 2.4's ``load(...)`` done by ``load_state_dict`` (torch 2.0 to 2.3), in place."""
    reader = _storage(storage_reader, checkpoint_id, FileSystemReader, "storage_reader")
    no_dist = no_dist or not (dist.is_available() and dist.is_initialized())
    _dcp.load_state_dict(
        state_dict, reader, process_group=process_group, no_dist=no_dist, planner=planner
    )


def _current(name: str, stand_in: Any) -> Any:
    own = getattr(_dcp, name, None)
    if own is not None and "checkpoint_id" in inspect.signature(own).parameters:
        return own
    return stand_in


save = _current("save", save_with_save_state_dict)
load = _current("load", load_with_load_state_dict)


def __getattr__(name: str) -> Any:
    # The rest of torch.distributed.checkpoint (planners, storage classes, ...), as torch has it.
    try:
        return getattr(_dcp, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


__all__ = [
    "FileSystemReader",
    "FileSystemWriter",
    "load",
    "load_state_dict",
    "load_state_dict_with_load",
    "load_with_load_state_dict",
    "save",
    "save_state_dict",
    "save_state_dict_with_save",
    "save_with_save_state_dict",
]
