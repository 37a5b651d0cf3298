"""The bridge: an FSDP1 constructor call carried out with FSDP2's ``fully_shard``.

:func:`fully_shard_like_fsdp1` takes exactly ``FullyShardedDataParallel``'s arguments
and does what FSDP1's constructor does, unit by unit, on FSDP2; see the package
docstring (:mod:`compat.fsdp2`) for the table.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn as nn

import compat.fsdp2.materialize as mat
from compat.fsdp2.availability import fsdp2_module, require_bridge
from compat.fsdp2.differences import warn_differences
from compat.fsdp2.fsdp1_methods import flat_alignment, group_rank, keep_fsdp1_methods
from compat.fsdp2.mesh import (
    Sharding,
    family,
    plan_sharding,
    reshard_after_forward,
    resolve_device,
    strategy_name,
)
from compat.fsdp2.nesting import PRECISION_ATTRIBUTE, nest, presharded_units, shard_target
from compat.fsdp2.precision import (
    buffer_casts,
    cast_buffers,
    check_mixed_precision,
    mp_policy,
    run_in_full_precision,
)
from compat.fsdp2.units import (
    Unit,
    child_kwargs,
    fsdp1_units,
    fsdp2_unit_names,  # noqa: F401 - the examples use it
    resolve_ignored,
)
from compat.policies import normalize_policy

try:  # FSDP1's own default, so that the signature is FSDP1's exactly
    from torch.distributed.fsdp import BackwardPrefetch

    _BACKWARD_PRE: Any = BackwardPrefetch.BACKWARD_PRE
except ImportError:  # pragma: no cover - a torch without torch.distributed
    _BACKWARD_PRE = "BACKWARD_PRE"

#: Per-unit arguments a ``CustomPolicy`` may change; the others must stay the root's.
_PER_UNIT = frozenset(
    {
        "sharding_strategy",
        "mixed_precision",
        "cpu_offload",
        "param_init_fn",
        "sync_module_states",
        "backward_prefetch",
        "forward_prefetch",
        "limit_all_gathers",
        "use_orig_params",
    }
)


def fully_shard_like_fsdp1(
    module: nn.Module,
    process_group: Any = None,
    sharding_strategy: Any = None,
    cpu_offload: Any = None,
    auto_wrap_policy: Any = None,
    backward_prefetch: Any = _BACKWARD_PRE,
    mixed_precision: Any = None,
    ignored_modules: Any = None,
    param_init_fn: Callable[[nn.Module], None] | None = None,
    device_id: int | torch.device | None = None,
    sync_module_states: bool = False,
    forward_prefetch: bool = False,
    limit_all_gathers: bool = True,
    use_orig_params: bool = False,
    ignored_states: Any = None,
    device_mesh: Any = None,
) -> nn.Module:
    """``FullyShardedDataParallel(module, ...)``, carried out with FSDP2's ``fully_shard``.

    Takes FSDP1's constructor arguments, positions included, and does what FSDP1 does
    with them: the same units in the same order, each materialised, moved and
    broadcast as FSDP1 does before it is sharded, on the mesh and with the precision
    FSDP1's arguments mean. Where FSDP2 cannot do what FSDP1 does, it raises before
    sharding anything and says what to write by hand (``docs/fsdp2.md``, "Finishing a
    bridged call by hand").

    Args:
        module: The model, sharded in place.
        process_group: A group (1-D mesh over it), or ``(intra, inter)`` with a hybrid
            strategy (2-D mesh over the two).
        sharding_strategy: ``FULL_SHARD`` (default), ``SHARD_GRAD_OP``, ``HYBRID_SHARD``,
            ``_HYBRID_SHARD_ZERO2`` or ``NO_SHARD`` (a member or its name).
        cpu_offload: ``CPUOffload(offload_params=True)`` offloads (``CPUOffloadPolicy``).
        auto_wrap_policy: Any policy FSDP1 takes (or :func:`compat.policies.normalize_policy`).
        backward_prefetch: Accepted; FSDP2 prefetches by itself (no change in numbers).
        mixed_precision: FSDP1's ``MixedPrecision`` (:mod:`compat.fsdp2.precision`).
        ignored_modules: Modules left out of sharding (``ignored_params``, torch >= 2.7).
        param_init_fn: Initialises each module of a unit holding meta tensors.
        device_id: The device to compute on; the module is moved there unit by unit.
        sync_module_states: Broadcast each unit's tensors from rank 0 before sharding.
        forward_prefetch: Accepted; no change in numbers.
        limit_all_gathers: Accepted; no change in numbers.
        use_orig_params: Accepted; FSDP2 always keeps the original parameters.
        ignored_states: Ignored parameters or modules (instead of ``ignored_modules``).
        device_mesh: A 1-D mesh, or a 2-D one with a hybrid strategy.

    Returns:
        ``module``, now the root FSDP2 unit, which keeps the FSDP1 methods FSDP1 code
        calls on it (:class:`compat.fsdp2.fsdp1_methods.FSDP1Methods`: ``state_dict``
        full by default for FSDP1 code, ``clip_grad_norm_``, ``no_sync``). Submodules
        bridged (or ``fully_shard``-ed) before it stay their own units, as FSDP1's
        manual nesting.

    Raises:
        ImportError: torch < 2.6 (no ``torch.distributed.fsdp.fully_shard``), or CPU
            ranks on torch < 2.7.
        ValueError, TypeError, NotImplementedError, RuntimeError, AttributeError: Where
            FSDP1 itself raises (an ``auto_wrap_policy`` around modules sharded already),
            or where FSDP2 cannot reproduce what FSDP1 would do; the message names the
            argument.

    Warns:
        BridgeDifferenceWarning: With ``use_orig_params=False``: the optimizer gets the
            original parameters where FSDP1 gave it flat ones.

    Example:
        >>> import torch
        >>> import torch.distributed as dist
        >>> import torch.nn as nn
        >>> from torch.distributed.fsdp import ShardingStrategy
        >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> model = fully_shard_like_fsdp1(
        ...     model,
        ...     auto_wrap_policy={nn.Linear},
        ...     sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
        ...     device_id=torch.device("cpu"),
        ...     sync_module_states=True,
        ...     use_orig_params=True,
        ... )
        >>> fsdp2_unit_names(model)
        ['', '0', '2']
        >>> dist.destroy_process_group()
    """
    policy = normalize_policy(auto_wrap_policy)
    inner = presharded_units(module, policy)  # FSDP1's manual nesting: wrapped by hand
    ignored, ignored_params = resolve_ignored(module, ignored_modules, ignored_states)
    device = resolve_device(module, device_id, ignored_params, device_mesh)
    fsdp2 = require_bridge(device)
    if ignored_params and "ignored_params" not in inspect.signature(fsdp2.fully_shard).parameters:
        raise NotImplementedError(
            "ignored_modules / ignored_states need fully_shard(ignored_params=) (torch >= 2.7)"
        )
    _refuse_dtensors(module, ignored_params, inner)
    strategy = strategy_name(sharding_strategy)
    root_kwargs = {
        "process_group": process_group,
        "sharding_strategy": sharding_strategy,
        "cpu_offload": cpu_offload,
        "backward_prefetch": backward_prefetch,
        "mixed_precision": mixed_precision,
        "ignored_modules": ignored_modules,
        "param_init_fn": param_init_fn,
        "device_id": device_id,
        "sync_module_states": sync_module_states,
        "forward_prefetch": forward_prefetch,
        "limit_all_gathers": limit_all_gathers,
        "use_orig_params": use_orig_params,
        "ignored_states": ignored_states,
        "device_mesh": device_mesh,
    }
    units = fsdp1_units(module, policy, root_kwargs, ignored, ignored_params)
    base = child_kwargs(root_kwargs, ignored_params)
    for unit in units:
        _check_unit_arguments(unit, base, strategy)
    plans = [_plan(index, units, ignored_params, device, inner) for index in range(len(units))]
    casts = buffer_casts(units, [plan.ignored_buffers for plan in plans])
    sharding = plan_sharding(process_group, strategy, device_mesh, device, policy is not None)
    # Where FSDP1 broadcasts nothing, both FSDPs trust the ranks to agree: check they do.
    trusted = [
        p for plan in plans if not plan.unit.kwargs.get("sync_module_states") for p in plan.params
    ]
    mat.check_same_on_ranks(module, trusted, sharding.shard_group, device)
    precision_classes = tuple(getattr(mixed_precision, "_module_classes_to_ignore", ()) or ())
    if policy is not None and mixed_precision is not None and precision_classes:
        run_in_full_precision(module, precision_classes)
    synced: set[int] = set()
    for plan, cast in zip(plans, casts):
        _prepare(module, plan, ignored_params, device, sharding, synced)
        cast_buffers(cast)
        target = shard_target(plan.unit.name, plan.unit.module, plan.params)
        if target is not None:  # None: a container FSDP1's unit of which holds nothing
            arguments = _fully_shard_arguments(plan.unit, sharding, device, ignored_params)
            fsdp2.fully_shard(target, **arguments)
    nest(inner)
    # FSDP1's code calls FSDP1's methods on the model it wrapped, often far from here.
    group = sharding.sync_groups[0] if sharding.family == "replicate" else sharding.shard_group
    aligned = flat_alignment(module, use_orig_params, mixed_precision)
    keep_fsdp1_methods(module, group_rank(group), aligned)
    object.__setattr__(module, PRECISION_ATTRIBUTE, mixed_precision)
    warn_differences(use_orig_params, mixed_precision, stacklevel=2)
    return module


def _refuse_dtensors(
    module: nn.Module, ignored_params: set[nn.Parameter], inner: list[nn.Module]
) -> None:
    from torch.distributed.tensor import DTensor

    sharded = {id(p) for unit in inner for p in unit.parameters()}
    found = [
        name
        for name, p in module.named_parameters()
        if p not in ignored_params and id(p) not in sharded and isinstance(p, DTensor)
    ]
    if found:
        raise NotImplementedError(
            f"parameter {found[0]!r} is already a DTensor (tensor parallel?): FSDP1 and FSDP2 "
            "compose with it differently. By hand: fully_shard(..., mesh=<the data-parallel "
            "mesh>) after parallelize_module"
        )


def _check_unit_arguments(unit: Unit, base: dict[str, Any], strategy: str) -> None:
    """Raise for per-unit arguments (a ``CustomPolicy``'s) the bridge cannot honour."""
    check_mixed_precision(unit.kwargs.get("mixed_precision"))
    if unit.is_root:
        return
    for key in sorted((set(unit.kwargs) | set(base)) - _PER_UNIT):
        if unit.kwargs.get(key) is not base.get(key):
            raise NotImplementedError(
                f"the auto_wrap_policy gives unit {unit.name!r} its own {key}: FSDP2 units of "
                "one model share one mesh, device and ignored parameters. By hand: fully_shard "
                "that module yourself"
            )
    own = strategy_name(unit.kwargs.get("sharding_strategy"))
    if family(own) != family(strategy):
        raise NotImplementedError(
            f"the auto_wrap_policy gives unit {unit.name!r} sharding_strategy={own} under a "
            f"{strategy} root: FSDP2 units of one model share one mesh. By hand: fully_shard "
            "that module with the mesh you want"
        )


@dataclass
class _UnitPlan:
    """One unit with what is known of it before anything is sharded."""

    unit: Unit
    earlier: set[nn.Module]  # the units before it, sharded by the time it is
    params: list[nn.Parameter]  # the parameters it shards
    ignored_buffers: set[int]  # ids of the buffers of the ignored modules it sees


def _plan(
    index: int,
    units: list[Unit],
    ignored_params: set[nn.Parameter],
    device: torch.device,
    inner: list[nn.Module],
) -> _UnitPlan:
    """Plan one unit and raise now what its preparation would raise later."""
    unit = units[index]
    earlier = {u.module for u in units[:index]} | set(inner)
    params = mat.managed_params(unit.module, ignored_params, earlier)
    mat.check_single_device(unit.module, params, unit.kwargs.get("device_id"), device)
    if mat.needs_materializing(unit.module, params, unit.ignored_modules, skip=earlier):
        mat.check_materializable(
            unit.name, unit.module, unit.ignored_modules, earlier, unit.kwargs.get("param_init_fn")
        )
    ignored_buffers = {id(b) for m in unit.ignored_modules for b in m.buffers()}
    return _UnitPlan(unit, earlier, params, ignored_buffers)


def _prepare(
    root: nn.Module,
    plan: _UnitPlan,
    ignored_params: set[nn.Parameter],
    device: torch.device,
    sharding: Sharding,
    synced: set[int],
) -> None:
    """What FSDP1's constructor does to a unit before flattening and sharding it."""
    unit, kwargs = plan.unit, plan.unit.kwargs
    params = plan.params
    materialize = mat.needs_materializing(unit.module, params, unit.ignored_modules)
    if materialize:
        mat.materialize(
            unit.name,
            unit.module,
            unit.ignored_modules,
            plan.earlier,
            kwargs.get("param_init_fn"),
            device,
        )
        params = mat.managed_params(unit.module, ignored_params, plan.earlier)
    if kwargs.get("device_id") is not None:
        mat.move_to_device(unit.module, ignored_params, plan.ignored_buffers, plan.earlier, device)
    if kwargs.get("sync_module_states"):
        mat.broadcast_from_rank0(unit.module, params, sharding.sync_groups, synced, device)
    elif materialize:  # new values: the ranks must still agree
        mat.check_same_on_ranks(root, params, sharding.shard_group, device, stacklevel=5)


def _fully_shard_arguments(
    unit: Unit, sharding: Sharding, device: torch.device, ignored_params: set[nn.Parameter]
) -> dict[str, Any]:
    kwargs = unit.kwargs
    strategy = strategy_name(kwargs.get("sharding_strategy"))
    arguments: dict[str, Any] = {
        "mesh": sharding.mesh,
        "reshard_after_forward": reshard_after_forward(strategy),
        "mp_policy": mp_policy(kwargs.get("mixed_precision"), unit.is_root),
    }
    offload = kwargs.get("cpu_offload")
    if (offload is True or getattr(offload, "offload_params", False)) and device.type != "cpu":
        arguments["offload_policy"] = fsdp2_module().CPUOffloadPolicy()
    if ignored_params:
        arguments["ignored_params"] = set(ignored_params)
    return arguments


def fully_shard_by_policy(model: nn.Module, policy: Any = None, **fsdp1_kwargs: Any) -> nn.Module:
    """Shard ``model`` with FSDP2 as FSDP1 would have wrapped it with ``policy``.

    The policy-first spelling of :func:`fully_shard_like_fsdp1`: ``policy`` is FSDP1's
    ``auto_wrap_policy`` (also accepted under that name), the other FSDP1 arguments
    follow as keywords.

    Args:
        model: The model to shard, in place.
        policy: An FSDP1 auto-wrap policy in any form :func:`compat.policies.normalize_policy`
            accepts (classes, ``ModuleWrapPolicy``, size-based with its threshold,
            ``CustomPolicy``, a policy callable); ``None`` shards the root only.
        **fsdp1_kwargs: FSDP1 ``FullyShardedDataParallel`` arguments.

    Returns:
        ``model``, now an FSDP2 module, with the selected submodules FSDP2 units.

    Raises:
        TypeError: ``policy`` given twice, or an argument FSDP1 does not take.
        ValueError: If ``model`` or one of its submodules is already an FSDP2 unit.

    Example:
        >>> import torch.distributed as dist
        >>> import torch.nn as nn
        >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> _ = fully_shard_by_policy(
        ...     model, nn.Linear, sharding_strategy="SHARD_GRAD_OP", use_orig_params=True
        ... )
        >>> fsdp2_unit_names(model)
        ['', '0', '2']
        >>> dist.destroy_process_group()
    """
    if "auto_wrap_policy" in fsdp1_kwargs:
        if policy is not None:
            raise TypeError(
                "fully_shard_by_policy() got the policy twice (policy, auto_wrap_policy)"
            )
        policy = fsdp1_kwargs.pop("auto_wrap_policy")
    _check_names(fsdp1_kwargs, "fully_shard_by_policy")
    return fully_shard_like_fsdp1(model, auto_wrap_policy=policy, **fsdp1_kwargs)


def _check_names(kwargs: dict[str, Any], function: str, also: tuple[str, ...] = ()) -> None:
    known = set(inspect.signature(fully_shard_like_fsdp1).parameters) - {"module", *also}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")


def translate_fsdp1_arguments(**fsdp1_kwargs: Any) -> dict[str, Any]:
    """The ``fully_shard`` arguments the bridge gives the root unit for these FSDP1 ones.

    Only what becomes a ``fully_shard`` argument: ``sharding_strategy``,
    ``process_group``, ``device_mesh``, ``device_id`` (the mesh's device type),
    ``mixed_precision``, ``cpu_offload``, ``ignored_modules`` / ``ignored_states`` (as
    modules or parameters). ``mesh`` is left out where it is the default group's
    (``fully_shard``'s own default). ``offload_policy`` is given for CPU offloading
    (the bridge leaves it out on CPU ranks, where there is nothing to offload). The
    arguments that change nothing in FSDP2 (``backward_prefetch``, ``forward_prefetch``,
    ``limit_all_gathers``, ``use_orig_params``) are accepted.

    Raises:
        TypeError: An argument FSDP1 does not take, or ``auto_wrap_policy`` (the units
            are :func:`fully_shard_like_fsdp1`'s to choose).
        ValueError: ``sync_module_states=True`` or a ``param_init_fn``: steps before
            ``fully_shard``, not arguments of it (use :func:`fully_shard_like_fsdp1`);
            and every error of the mesh translation.
        NotImplementedError: Ignored modules on torch < 2.7, and what
            :func:`compat.fsdp2.precision.check_mixed_precision` refuses.
    """
    _check_names(fsdp1_kwargs, "translate_fsdp1_arguments", ("auto_wrap_policy",))
    for step in ("sync_module_states", "param_init_fn"):
        if fsdp1_kwargs.get(step):
            raise ValueError(
                f"{step} is a step before fully_shard, not an argument of it: call "
                "compat.fsdp2.fully_shard_like_fsdp1, which does it unit by unit"
            )
    fsdp2 = fsdp2_module()
    strategy = strategy_name(fsdp1_kwargs.get("sharding_strategy"))
    precision = fsdp1_kwargs.get("mixed_precision")
    check_mixed_precision(precision)
    out: dict[str, Any] = {}
    process_group, mesh = fsdp1_kwargs.get("process_group"), fsdp1_kwargs.get("device_mesh")
    device_id = fsdp1_kwargs.get("device_id")
    explicit = process_group is not None or mesh is not None or device_id is not None
    if explicit or family(strategy) != "shard":
        device = resolve_device(nn.Module(), device_id, set(), mesh)
        out["mesh"] = plan_sharding(process_group, strategy, mesh, device, True).mesh
    out["reshard_after_forward"] = reshard_after_forward(strategy)
    offload = fsdp1_kwargs.get("cpu_offload")
    if offload is True or getattr(offload, "offload_params", False):
        out["offload_policy"] = fsdp2.CPUOffloadPolicy()
    if precision is not None:
        out["mp_policy"] = mp_policy(precision, is_root=True)
    given = fsdp1_kwargs.get("ignored_states", fsdp1_kwargs.get("ignored_modules"))
    if given:
        if "ignored_params" not in inspect.signature(fsdp2.fully_shard).parameters:
            raise NotImplementedError(
                f"ignored_modules needs fully_shard(ignored_params=) (torch >= 2.7); "
                f"installed torch {torch.__version__}"
            )
        items = [given] if isinstance(given, nn.Module) else list(given)
        out["ignored_params"] = {
            p
            for item in items
            for p in ([item] if isinstance(item, nn.Parameter) else item.parameters())
        }
    return out


__all__ = ["fully_shard_by_policy", "fully_shard_like_fsdp1", "translate_fsdp1_arguments"]
