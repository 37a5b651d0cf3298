"""Units made before the bridge's call (FSDP1's manual nesting), and container units.

FSDP1 code often wraps by hand: each layer, then the root
(``layer = FSDP(layer)`` for each, then ``model = FSDP(model)``). FSDP1's root then
leaves the already-wrapped layers alone (they keep their own parameters) and manages
the rest; with an ``auto_wrap_policy`` it refuses them instead. On the bridge the
layers are FSDP2 units already (an earlier :func:`~compat.fsdp2.fully_shard_like_fsdp1`
or ``fully_shard`` call), and the root call does the same: :func:`presharded_units`
lists them, the root manages what they do not hold, and each loses the root's input
casting it had as a model of its own (:func:`nest`), as FSDP1's inner units cast
their inputs only with ``cast_forward_inputs``.

A policy may also select a container (``nn.ModuleList``, ``nn.ModuleDict``) whose
``forward`` is never called: FSDP1 wraps it, and FSDP2 refuses it.
:func:`shard_target` gives FSDP1's unit in FSDP2's terms: nothing where the container
holds no parameters of its own (the units inside hold them all, so FSDP1's unit holds
nothing), else the modules inside that hold its parameters, sharded as one group
(``fully_shard([a, b])``), which gathers them when any of them runs.
"""

from __future__ import annotations

from typing import Any

import torch.nn as nn

from compat.features import import_fsdp_module
from compat.fsdp2.availability import fsdp2_module

#: Where a bridged unit keeps the FSDP1 ``MixedPrecision`` it was given.
PRECISION_ATTRIBUTE = "_fsdp1_mixed_precision"


def presharded_units(module: nn.Module, policy: Any) -> list[nn.Module]:
    """The FSDP2 units inside ``module`` before the root call, outermost first.

    Raises:
        ValueError: ``module`` is an FSDP2 unit itself (shard a model once), holds FSDP1
            units, or holds FSDP2 units while an ``auto_wrap_policy`` is given (FSDP1
            refuses auto wrapping around wrapped modules too).
    """
    unit_class = fsdp2_module().FSDPModule
    if isinstance(module, unit_class):
        names = [name for name, sub in module.named_modules() if isinstance(sub, unit_class)]
        listed = ", ".join(repr(name or "(the root)") for name in names)
        raise ValueError(f"already FSDP2 units: {listed}; shard a model once (its root last)")
    fsdp1 = import_fsdp_module().FullyShardedDataParallel
    wrapped = [name for name, sub in module.named_modules() if isinstance(sub, fsdp1)]
    if wrapped:
        raise ValueError(
            f"already FSDP1 units: {', '.join(repr(n or '(the root)') for n in wrapped)}; "
            "the bridge shards a plain module"
        )
    units = [(name, sub) for name, sub in module.named_modules() if isinstance(sub, unit_class)]
    if units and policy is not None:
        listed = ", ".join(repr(name) for name, _ in units)
        raise ValueError(
            f"auto_wrap_policy on a model whose modules {listed} are FSDP2 units already: "
            "FSDP1 refuses auto wrapping around wrapped modules too. Either wrap the "
            "layers by hand and the root without a policy (FSDP1's manual nesting), or "
            "give the root the policy alone"
        )
    outermost: list[nn.Module] = []
    for _, sub in units:
        if not any(sub in set(outer.modules()) for outer in outermost):
            outermost.append(sub)
    return outermost


def nest(units: list[nn.Module]) -> None:
    """FSDP1's input casting for units that are no longer roots.

    A unit the bridge made as a model of its own casts its inputs as FSDP1's root does
    (``cast_root_forward_inputs``); under a root, FSDP1's unit casts them only with
    ``cast_forward_inputs``. A unit made by ``fully_shard`` itself keeps its policy.
    """
    from compat.fsdp2.precision import mp_policy

    for unit in units:
        precision = getattr(unit, PRECISION_ATTRIBUTE, None)
        if precision is None:
            continue
        state = unit._get_fsdp_state()  # type: ignore[operator]
        state._mp_policy = mp_policy(precision, is_root=False)


def is_container(module: nn.Module) -> bool:
    """Whether FSDP2 refuses ``module`` as a unit: a container without a ``forward``."""
    containers = (nn.ModuleList, nn.ModuleDict)
    return isinstance(module, containers) and type(module).forward is nn.Module.forward


def shard_target(
    name: str, module: nn.Module, params: list[nn.Parameter]
) -> nn.Module | list[nn.Module] | None:
    """What ``fully_shard`` takes for FSDP1's unit ``module`` managing ``params``.

    The module itself, unless it is a container FSDP2 refuses (:func:`is_container`):
    then None where it manages no parameters, else the largest modules inside it that
    hold them and are called (not containers), as one group.

    Raises:
        NotImplementedError: A parameter held by a container's own parameter list or
            dict (never called: FSDP2 would never gather it).
    """
    if not is_container(module):
        return module
    if not params:
        return None
    wanted = {id(p) for p in params}
    group: list[nn.Module] = []

    def visit(current: nn.Module, where: str) -> None:
        for child_name, child in current.named_children():
            inside = f"{where}.{child_name}" if where else child_name
            if not any(id(p) in wanted for p in child.parameters()):
                continue
            if is_container(child):
                visit(child, inside)
            elif isinstance(child, (nn.ParameterList, nn.ParameterDict)):
                raise NotImplementedError(
                    f"auto_wrap_policy picks the container {name!r}, whose {inside!r} holds "
                    "parameters no forward gathers on FSDP2. By hand: make the module that "
                    "uses them a unit (or leave them to its parent)"
                )
            else:
                group.append(child)

    visit(module, name)
    return group


__all__ = ["PRECISION_ATTRIBUTE", "is_container", "nest", "presharded_units", "shard_target"]
