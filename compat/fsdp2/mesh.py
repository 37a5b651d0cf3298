"""FSDP1's device and process-group arguments as the device and mesh FSDP2 shards on.

FSDP1 takes ``device_id``, ``process_group`` (one group, or an ``(intra, inter)`` pair
for hybrid sharding), ``device_mesh`` and ``sharding_strategy``; FSDP2 takes one
``mesh`` (1-D: shard over it; 2-D: replicate over dim 0, shard over dim 1) and
``reshard_after_forward``. :func:`resolve_device` and :func:`plan_sharding` make that
translation with FSDP1's own rules, and raise where FSDP1 would raise or where FSDP2
cannot do what FSDP1 does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn

from compat.fsdp import has_accelerator

SHARD_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP")
HYBRID_STRATEGIES = ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2")
NO_SHARD = "NO_SHARD"
MESH_DIM_NAMES = ("replicate", "shard")


def strategy_name(strategy: Any) -> str:
    """The name of an FSDP1 ``ShardingStrategy`` (a member, its name, or ``None``).

    Raises:
        ValueError: For anything that names no strategy.
    """
    name = getattr(strategy, "name", strategy) or "FULL_SHARD"
    if name not in (*SHARD_STRATEGIES, *HYBRID_STRATEGIES, NO_SHARD):
        raise ValueError(f"sharding_strategy={strategy!r} is no FSDP1 ShardingStrategy")
    return name


def family(name: str) -> str:
    """``"shard"``, ``"hybrid"`` or ``"replicate"``: the mesh a strategy needs."""
    if name in HYBRID_STRATEGIES:
        return "hybrid"
    return "replicate" if name == NO_SHARD else "shard"


def reshard_after_forward(name: str) -> bool:
    """FSDP2's ``reshard_after_forward`` for an FSDP1 strategy's name."""
    return name in ("FULL_SHARD", "HYBRID_SHARD")


def _handle(device_type: str) -> Any:
    """The ``torch.<type>`` module (``torch.cuda``, ``torch.cpu``, ...) FSDP1 uses."""
    return getattr(torch, device_type)


def _accelerator() -> torch.device | None:
    """The accelerator this process can use, or ``None``.

    A CUDA build names CUDA as its accelerator also on a machine without a GPU, and
    where ``CUDA_VISIBLE_DEVICES`` hides them: only an available one counts.
    """
    if not has_accelerator():
        return None
    accelerator = getattr(torch, "accelerator", None)
    return accelerator.current_accelerator() if accelerator is not None else torch.device("cuda")


def resolve_device(
    module: nn.Module,
    device_id: int | torch.device | None,
    ignored_params: set[nn.Parameter],
    device_mesh: Any = None,
) -> torch.device:
    """The device FSDP1 computes ``module`` on, which FSDP2 must also use.

    FSDP1 takes ``device_id``, else the device of the module's non-CPU parameters,
    else the current accelerator; with none, where FSDP1 raises, the bridge uses the
    CPU (FSDP2 runs there on gloo).

    Raises:
        RuntimeError: Parameters on two accelerator types (FSDP1's error).
        ValueError: A device other than the current one of its type (FSDP2 shards on
            the current device), or a ``device_mesh`` of another device type.
    """
    if device_id is not None:
        device = device_id if isinstance(device_id, torch.device) else torch.device(device_id)
    else:
        placed = [
            p.device
            for p in module.parameters()
            if p not in ignored_params and p.device.type not in ("cpu", "meta")
        ]
        if len({d.type for d in placed}) > 1:
            raise RuntimeError(
                "FSDP does not support modules with parameters on different device types: "
                f"{sorted({d.type for d in placed})}"
            )
        if placed:
            device = placed[0]
        elif device_mesh is not None:
            device = torch.device(device_mesh.device_type)
        else:
            device = _accelerator() or torch.device("cpu")
    if device.type != "cpu":
        current = _handle(device.type).current_device()
        if device.index is None:
            device = torch.device(device.type, current)
        elif device.index != current:
            raise ValueError(
                f"device_id / the module's device is {device}, but the current {device.type} "
                f"device is {current}: FSDP2 shards on the current device. Call "
                f"torch.{device.type}.set_device({device.index}) before sharding."
            )
    if device_mesh is not None and device_mesh.device_type != device.type:
        raise ValueError(
            f"device_mesh is a {device_mesh.device_type!r} mesh but the module computes on "
            f"{device}: pass a device_mesh of device type {device.type!r} or a matching device_id"
        )
    return device


@dataclass(frozen=True)
class Sharding:
    """Where each unit is sharded.

    Attributes:
        mesh: The ``mesh`` argument of every ``fully_shard`` call.
        family: ``"shard"`` (1-D), ``"hybrid"`` (2-D) or ``"replicate"`` (NO_SHARD, a
            ``(world, 1)`` mesh).
        sync_groups: The groups FSDP1's ``sync_module_states`` broadcasts over, in its
            order (``None``: the default group), each from its group rank 0.
        shard_group: The group one tensor's chunks are spread over (``None``: none).
    """

    mesh: Any
    family: str
    sync_groups: tuple[Any, ...]
    shard_group: Any


def plan_sharding(
    process_group: Any,
    strategy: str,
    device_mesh: Any,
    device: torch.device,
    has_policy: bool,
) -> Sharding:
    """FSDP1's ``process_group`` / ``device_mesh`` / ``sharding_strategy`` as an FSDP2 mesh.

    Collective where FSDP1's is: a hybrid strategy without groups builds a mesh on
    every rank of the default group, and an ``(intra, inter)`` pair exchanges its
    members over the inter-node group to recover the rank grid.

    Args:
        process_group: FSDP1's ``process_group``.
        strategy: The strategy's name (:func:`strategy_name`).
        device_mesh: FSDP1's ``device_mesh``.
        device: The device the units compute on (:func:`resolve_device`).
        has_policy: Whether an ``auto_wrap_policy`` was given.

    Raises:
        ValueError: Where FSDP1 raises, and where FSDP2 would do something else.
        TypeError: A ``process_group`` of the wrong kind.
    """
    if process_group is not None and device_mesh is not None:
        raise ValueError(
            "Cannot pass both process_group and device_mesh at the same time (FSDP1's rule)"
        )
    kind = family(strategy)
    if kind == "hybrid":
        return _hybrid(process_group, strategy, device_mesh, device, has_policy)
    if kind == "replicate":
        return _no_shard(process_group, device_mesh, device)
    if device_mesh is not None:
        if device_mesh.ndim != 1:
            raise ValueError(
                f"device_mesh is {device_mesh.ndim}-D with sharding_strategy={strategy}: FSDP1 "
                "shards over its dim 0 only, FSDP2 would shard hybrid over a 2-D mesh. Decide by "
                "hand: a hybrid strategy, or the 1-D sub-mesh FSDP1 uses (device_mesh[name])"
            )
        group = device_mesh.get_group(0)
        return Sharding(device_mesh, kind, (group,), group)
    if isinstance(process_group, (tuple, list)):
        raise TypeError(
            f"process_group=(intra, inter) needs a hybrid sharding_strategy, not {strategy}"
        )
    from torch.distributed.device_mesh import DeviceMesh

    group = process_group if process_group is not None else dist.group.WORLD
    mesh = DeviceMesh.from_group(group, device.type)
    return Sharding(mesh, kind, (process_group,), group)


def _no_shard(process_group: Any, device_mesh: Any, device: torch.device) -> Sharding:
    from torch.distributed.device_mesh import init_device_mesh

    world = dist.get_world_size()
    given = process_group if device_mesh is None else device_mesh
    if given is not None:
        if device_mesh is not None and device_mesh.ndim != 1:
            raise ValueError("sharding_strategy=NO_SHARD with a multi-dimensional device_mesh")
        group = process_group if device_mesh is None else device_mesh.get_group(0)
        if isinstance(group, (tuple, list)) or dist.get_process_group_ranks(group) != list(
            range(world)
        ):
            raise ValueError(
                "sharding_strategy=NO_SHARD over a sub-group: FSDP2 replicates over a (replicate, "
                "shard) mesh whose shard groups have one rank, and the bridge builds that only "
                "over the whole world. By hand: fully_shard(..., mesh=DeviceMesh.from_group("
                "[group, one_rank_group], device_type, mesh=[[r] for r in ranks], "
                "mesh_dim_names=('replicate', 'shard'))), or DistributedDataParallel over the group"
            )
    mesh = init_device_mesh(device.type, (world, 1), mesh_dim_names=MESH_DIM_NAMES)
    return Sharding(mesh, "replicate", (process_group,), None)


def _hybrid(
    process_group: Any, strategy: str, device_mesh: Any, device: torch.device, has_policy: bool
) -> Sharding:
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

    if device_mesh is not None:
        if device_mesh.ndim != 2:
            raise ValueError(
                f"sharding_strategy={strategy} expects a 2-D device_mesh (replicate, shard), "
                f"got ndim={device_mesh.ndim} (FSDP1's rule)"
            )
        inter, intra = device_mesh.get_group(0), device_mesh.get_group(1)
        mesh = device_mesh
        if device_mesh.mesh_dim_names is None:  # fully_shard refuses an unnamed 2-D mesh
            mesh = DeviceMesh.from_group(
                [inter, intra],
                device_mesh.device_type,
                mesh=device_mesh.mesh,
                mesh_dim_names=MESH_DIM_NAMES,
            )
    elif process_group is None:
        if not has_policy:
            raise ValueError(
                f"Manual wrapping with {strategy} requires explicit specification of process "
                "group or device_mesh (FSDP1's rule): pass process_group=(intra, inter) or a "
                "2-D device_mesh"
            )
        world = dist.get_world_size()
        per_node = _handle(device.type).device_count()
        if per_node < 1 or world % per_node:
            raise ValueError(
                f"sharding_strategy={strategy}: FSDP1 shards within groups of "
                f"torch.{device.type}.device_count()={per_node} ranks, which must divide the "
                f"world size {world}"
            )
        _refuse_single_rank_shards(strategy, per_node, world // per_node, "device_count()")
        mesh = init_device_mesh(
            device.type, (world // per_node, per_node), mesh_dim_names=MESH_DIM_NAMES
        )
        inter, intra = mesh.get_group(0), mesh.get_group(1)
    else:
        if not (
            isinstance(process_group, (tuple, list))
            and len(process_group) == 2
            and all(isinstance(g, dist.ProcessGroup) for g in process_group)
        ):
            raise ValueError(
                f"sharding_strategy={strategy} expects process_group to be None or a tuple "
                f"(intra_node_group, inter_node_group), got {type(process_group).__name__} "
                "(FSDP1's rule)"
            )
        intra, inter = process_group
        grid = _rank_grid(intra, inter)
        mesh = DeviceMesh.from_group(
            [inter, intra], device.type, mesh=grid, mesh_dim_names=MESH_DIM_NAMES
        )
    _refuse_single_rank_shards(strategy, intra.size(), inter.size(), "the shard group")
    return Sharding(mesh, "hybrid", (inter, intra), intra)


def _refuse_single_rank_shards(strategy: str, shard: int, replicas: int, source: str) -> None:
    if shard == 1 and replicas > 1:
        raise ValueError(
            f"sharding_strategy={strategy}: {source} has 1 rank, so FSDP1 would silently fall "
            f"back to NO_SHARD within it: each of the {replicas} ranks trains alone, its "
            "gradients divided by the world size. The bridge does not reproduce that. Pass "
            "process_group=(intra, inter) or a 2-D device_mesh whose shard dimension has "
            "more than one rank, or use NO_SHARD / FULL_SHARD over the world"
        )


def _rank_grid(intra: Any, inter: Any) -> list[list[int]]:
    """The global ranks as a (replica, shard) grid, from this rank's two groups.

    Row ``i`` is the intra-node group of the inter-node group's ``i``-th member (an
    ``all_gather_object`` over the inter-node group); every member of the intra-node
    group must arrive at the same grid.

    Raises:
        ValueError: If the groups do not form a grid.
    """
    me = dist.get_rank()
    shard_ranks = dist.get_process_group_ranks(intra)
    replica_ranks = dist.get_process_group_ranks(inter)
    rows: list[Any] = [None] * len(replica_ranks)
    dist.all_gather_object(rows, shard_ranks, group=inter)
    column = shard_ranks.index(me)
    flat = [rank for row in rows for rank in row]
    problem = ""
    if any(len(row) != len(shard_ranks) for row in rows):
        problem = "the intra-node groups differ in size"
    elif len(set(flat)) != len(flat):
        problem = "the intra-node groups overlap"
    elif [row[column] for row in rows] != replica_ranks:
        problem = "the inter-node group is not one column of the intra-node groups"
    grids: list[Any] = [None] * len(shard_ranks)
    dist.all_gather_object(grids, (problem, rows), group=intra)
    problems = {p for p, _ in grids if p} or (
        {"the intra-node group's members see different grids"}
        if any(g != rows for _, g in grids)
        else set()
    )
    if problems:
        raise ValueError(
            f"process_group=(intra, inter) do not form a rank grid: {'; '.join(sorted(problems))} "
            f"(rank {me}: intra {shard_ranks}, inter {replica_ranks}). Build the mesh by hand: "
            "DeviceMesh.from_group([inter, intra], device_type, mesh=grid, "
            "mesh_dim_names=('replicate', 'shard'))"
        )
    return rows


__all__ = [
    "HYBRID_STRATEGIES",
    "MESH_DIM_NAMES",
    "NO_SHARD",
    "SHARD_STRATEGIES",
    "Sharding",
    "family",
    "plan_sharding",
    "reshard_after_forward",
    "resolve_device",
    "strategy_name",
]
