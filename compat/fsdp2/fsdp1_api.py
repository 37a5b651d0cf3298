"""FSDP1's model API kept on a bridged model: state-dict types, optimizer state and more.

A model sharded by :func:`compat.fsdp2.fully_shard_like_fsdp1` is an FSDP2 model, but
code written for FSDP1 goes on calling FSDP1's methods on it, often far from the
wrapper call (``self.model.clip_grad_norm_(1.0)`` in a trainer, ``model.state_dict()``
in a checkpoint helper). The bridge therefore gives its root the FSDP1 methods such code
uses (:class:`FSDP1Methods`), and :class:`FSDP1Api` holds FSDP1's class-level calls
(``FSDP.state_dict_type(model, ...)``, ``FSDP.optim_state_dict(model, optim)``) for such
a model. Each does what FSDP1 does, in FSDP2's terms:

=================================  ===================================================
FSDP1                              On a bridged model
=================================  ===================================================
``model.state_dict()``             the state-dict type set on the model (FSDP1's
                                   default: a full state dict on every rank, on the
                                   device): ``get_model_state_dict``
``model.load_state_dict(sd)``      the same type: ``set_model_state_dict``
``FULL_STATE_DICT``                full tensors; ``offload_to_cpu`` moves them to the
                                   CPU, ``rank0_only`` leaves the other ranks of
                                   FSDP1's group an empty dict
``SHARDED_STATE_DICT``             each rank's dim-0 chunk of every tensor, the rows
                                   FSDP1's ``ShardedTensor`` holds, as a ``DTensor``
                                   (FSDP1's form on a device mesh);
                                   ``torch.distributed.checkpoint`` saves both alike
``LOCAL_STATE_DICT``               FSDP1's flat layout, written from the whole
                                   parameters and read back into their rows
                                   (:mod:`compat.fsdp2.local_state`)
``FSDP.optim_state_dict``          ``get_optimizer_state_dict`` of the same type, keyed
                                   by parameter name as FSDP1's
``FSDP.sharded_optim_state_dict``  ``get_optimizer_state_dict`` of this rank's rows
``FSDP.full_optim_state_dict``     the full state, on the CPU, on rank 0 (or all)
``FSDP.optim_state_dict_to_load``  ``set_optimizer_state_dict`` (FSDP1's sharded
                                   rows, from ``load_sharded_optimizer_state_dict``,
                                   as the parameters' ``DTensor`` rows); returns the
                                   loaded optimizer's own state dict, so the
                                   ``optim.load_state_dict(...)`` after it changes
                                   nothing
``scatter_full_optim_state_dict``  rank 0's full state (``full_optim_state_dict``'s)
                                   broadcast, each rank's rows as ``DTensor`` s, keyed
                                   for ``optim.load_state_dict`` by position (in
                                   ``optim``'s groups, else ``model.parameters()``)
``shard_full_optim_state_dict``    the same from a full state every rank holds
``FSDP.summon_full_params``        each unit unsharded for the block, written back
                                   row by row after it (FSDP1's defaults only)
``model.clip_grad_norm_``          ``torch.nn.utils.clip_grad_norm_`` over the DTensor
                                   gradients (reduced across ranks as FSDP1 did)
``model.no_sync()``                ``set_requires_gradient_sync(False)`` for the block
=================================  ===================================================

The calls on a real FSDP1 model go to FSDP1's own, so code that mixes both keeps working.
So does ``summon_full_params`` on a module that holds no bridged root (an inner unit, a
plain module), as before the rewrite: FSDP1's own finds no FSDP1 unit there and does
nothing, which code written for both generations counts on.
FSDP1's own class calls (``FullyShardedDataParallel.state_dict_type`` and the others
above) are torch's, untouched: the bridge patches nothing of torch's for the process.
They do not take a bridged model (they find no FSDP1 unit in it: ``set_state_dict_type``
does nothing, the ``state_dict_type`` context fails as it ends); code that calls them on
one must call :class:`FSDP1Api`'s (the rewrite does so in the files it converts).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Callable

import torch
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel, StateDictType

from compat.fsdp.fallbacks import map_tensors
from compat.fsdp2.fsdp1_methods import (
    SETTINGS_ATTRIBUTE,
    fsdp1_answers,
    holds_fsdp1,
    own_copy,
    roots_for,
    same,
    settings_of_type,
)
from compat.fsdp2.fsdp1_rows import full_state_as_rows, rows_as_dtensors


class FSDP1Api:
    """FSDP1's class-level calls (``FSDP.state_dict_type(model, ...)``, ...) for bridged models.

    Each takes FSDP1's arguments. On a real FSDP1 model it calls FSDP1's own; on a model
    the bridge made it does what FSDP1 does (see the module's table).
    """

    @staticmethod
    def set_state_dict_type(
        module: nn.Module,
        state_dict_type: Any,
        state_dict_config: Any = None,
        optim_state_dict_config: Any = None,
    ) -> torch.distributed.fsdp.StateDictSettings:
        """FSDP1's ``set_state_dict_type``: returns the settings it replaced."""
        if holds_fsdp1(module):
            return _fsdp1_call("set_state_dict_type")(
                module, state_dict_type, state_dict_config, optim_state_dict_config
            )
        settings = settings_of_type(state_dict_type, state_dict_config, optim_state_dict_config)
        roots = roots_for(module, "set_state_dict_type")
        previous = roots[0]._fsdp1_settings()
        for root in roots:
            object.__setattr__(root, SETTINGS_ATTRIBUTE, settings)
        return previous

    @staticmethod
    def get_state_dict_type(module: nn.Module) -> torch.distributed.fsdp.StateDictSettings:
        """FSDP1's ``get_state_dict_type``."""
        if holds_fsdp1(module):
            return _fsdp1_call("get_state_dict_type")(module)
        return roots_for(module, "get_state_dict_type")[0]._fsdp1_settings()

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(
        module: nn.Module,
        state_dict_type: Any,
        state_dict_config: Any = None,
        optim_state_dict_config: Any = None,
    ) -> Iterator[None]:
        """FSDP1's ``state_dict_type`` context: the type for the block, then the old one."""
        if holds_fsdp1(module):
            with _fsdp1_call("state_dict_type")(
                module, state_dict_type, state_dict_config, optim_state_dict_config
            ):
                yield
            return
        previous = FSDP1Api.set_state_dict_type(
            module, state_dict_type, state_dict_config, optim_state_dict_config
        )
        try:
            yield
        finally:
            for root in roots_for(module, "state_dict_type"):
                object.__setattr__(root, SETTINGS_ATTRIBUTE, previous)

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(
        module: nn.Module,
        recurse: bool = True,
        writeback: bool = True,
        rank0_only: bool = False,
        offload_to_cpu: bool = False,
        with_grads: bool = False,
    ) -> Iterator[None]:
        """FSDP1's ``summon_full_params``: the whole parameters in place for the block.

        Each FSDP2 unit is unsharded (its parameters become the full tensors), and
        resharded after the block; with ``writeback`` (FSDP1's default) what the block
        wrote into them is kept. Where ranks write different values, each keeps its own
        part, as with FSDP1, but the parts differ: FSDP1 keeps a slice of its flattened
        parameters, the bridge its rows of each parameter.
        """
        if fsdp1_answers(module):
            with _fsdp1_call("summon_full_params")(
                module, recurse, writeback, rank0_only, offload_to_cpu, with_grads
            ):
                yield
            return
        if rank0_only or offload_to_cpu or with_grads:
            raise NotImplementedError(
                "FSDP1Api.summon_full_params on a bridged model takes FSDP1's defaults only "
                "(rank0_only, offload_to_cpu and with_grads False): for a copy, use "
                "get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))"
            )
        from torch.distributed.fsdp import FSDPModule
        from torch.distributed.tensor import DTensor, distribute_tensor

        roots_for(module, "summon_full_params")
        units = [
            m for m in (module.modules() if recurse else [module]) if isinstance(m, FSDPModule)
        ]
        sharded = {n: p for n, p in module.named_parameters() if isinstance(p, DTensor)}
        for unit in units:
            unit.unshard()
        try:
            yield
        finally:
            full = {}
            if writeback:  # this rank's full values, as the block left them
                full = {n: p.detach().clone() for n, p in module.named_parameters() if n in sharded}
            for unit in units:
                unit.reshard()
            with torch.no_grad():
                for name, value in full.items():
                    param = sharded[name]
                    mine = distribute_tensor(
                        value, param.device_mesh, param.placements, src_data_rank=None
                    )
                    param.to_local().copy_(mine.to_local())

    @staticmethod
    def optim_state_dict(
        model: nn.Module,
        optim: torch.optim.Optimizer,
        optim_state_dict: dict[str, Any] | None = None,
        group: Any = None,
    ) -> dict[str, Any]:
        """FSDP1's ``optim_state_dict``: the optimizer's state of the model's type."""
        if holds_fsdp1(model):
            return _fsdp1_call("optim_state_dict")(model, optim, optim_state_dict, group)
        if optim_state_dict is not None or group is not None:
            raise NotImplementedError(
                "FSDP1Api.optim_state_dict on a bridged model takes no optim_state_dict= "
                "or group=: it reads the optimizer itself, over the model's own group"
            )
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        root = roots_for(model, "optim_state_dict")[0]
        return root._fsdp1_state(
            lambda options: get_optimizer_state_dict(model, optim, options=options), True
        )

    @staticmethod
    def full_optim_state_dict(
        model: nn.Module,
        optim: torch.optim.Optimizer,
        optim_input: Any = None,
        rank0_only: bool = True,
        group: Any = None,
    ) -> dict[str, Any]:
        """FSDP1's legacy ``full_optim_state_dict``: the whole state, on the CPU, on rank 0.

        With ``rank0_only=False`` every rank gets it. FSDP1 asks the default group's rank.
        """
        if holds_fsdp1(model):
            return _fsdp1_call("full_optim_state_dict")(
                model, optim, optim_input, rank0_only, group
            )
        if optim_input is not None or group is not None:
            raise NotImplementedError(
                "FSDP1Api.full_optim_state_dict on a bridged model takes no optim_input= or "
                "group=: it reads the optimizer itself, over the model's own group"
            )
        import torch.distributed as dist
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_optimizer_state_dict,
        )

        roots_for(model, "full_optim_state_dict")
        options = StateDictOptions(full_state_dict=True)
        state = get_optimizer_state_dict(model, optim, options=options)
        if rank0_only and dist.get_rank() != 0:
            return {}
        return map_tensors(state, lambda tensor: tensor.detach().cpu().clone())

    @staticmethod
    def sharded_optim_state_dict(
        model: nn.Module, optim: torch.optim.Optimizer, group: Any = None
    ) -> dict[str, Any]:
        """FSDP1's ``sharded_optim_state_dict``: this rank's rows of the optimizer state."""
        if holds_fsdp1(model):
            return _fsdp1_call("sharded_optim_state_dict")(model, optim, group)
        if group is not None:
            raise NotImplementedError(
                "FSDP1Api.sharded_optim_state_dict on a bridged model takes no group="
            )
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_optimizer_state_dict,
        )

        state = get_optimizer_state_dict(model, optim, options=StateDictOptions())
        return map_tensors(state, own_copy)

    @staticmethod
    def scatter_full_optim_state_dict(
        full_optim_state_dict: dict[str, Any] | None,
        model: nn.Module,
        optim_input: Any = None,
        optim: torch.optim.Optimizer | None = None,
        group: Any = None,
    ) -> dict[str, Any]:
        """FSDP1's legacy ``scatter_full_optim_state_dict``: rank 0's full state, to load.

        Rank 0 of the default group gives the state (``full_optim_state_dict``'s); every
        rank gets its part of it, keyed for ``optim.load_state_dict`` by position in
        ``optim``'s groups, or in ``model.parameters()`` without ``optim``, as FSDP1.
        """
        if holds_fsdp1(model):
            return _fsdp1_call("scatter_full_optim_state_dict")(
                full_optim_state_dict, model, optim_input, optim, group
            )
        if optim_input is not None or group is not None:
            raise NotImplementedError(
                "FSDP1Api.scatter_full_optim_state_dict on a bridged model takes no "
                "optim_input= or group=: pass optim="
            )
        import torch.distributed as dist

        roots_for(model, "scatter_full_optim_state_dict")
        box = [full_optim_state_dict if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return full_state_as_rows(model, optim, box[0] or {})

    @staticmethod
    def shard_full_optim_state_dict(
        full_optim_state_dict: dict[str, Any],
        model: nn.Module,
        optim_input: Any = None,
        optim: torch.optim.Optimizer | None = None,
    ) -> dict[str, Any]:
        """FSDP1's legacy ``shard_full_optim_state_dict``: every rank's full state, to load."""
        if holds_fsdp1(model):
            return _fsdp1_call("shard_full_optim_state_dict")(
                full_optim_state_dict, model, optim_input, optim
            )
        if optim_input is not None:
            raise NotImplementedError(
                "FSDP1Api.shard_full_optim_state_dict on a bridged model takes no "
                "optim_input=: pass optim="
            )
        roots_for(model, "shard_full_optim_state_dict")
        return full_state_as_rows(model, optim, full_optim_state_dict)

    @staticmethod
    def optim_state_dict_to_load(
        model: nn.Module,
        optim: torch.optim.Optimizer,
        optim_state_dict: dict[str, Any],
        is_named_optimizer: bool = False,
        load_directly: bool = False,
        group: Any = None,
    ) -> dict[str, Any]:
        """FSDP1's ``optim_state_dict_to_load``: loads it and returns ``optim``'s own state.

        The state is loaded into ``optim`` here (torch's ``set_optimizer_state_dict``
        does both steps at once); what is returned is the optimizer's own state dict,
        so the ``optim.load_state_dict(...)`` that FSDP1 code does next changes nothing.
        """
        if holds_fsdp1(model):
            return _fsdp1_call("optim_state_dict_to_load")(
                model, optim, optim_state_dict, is_named_optimizer, load_directly, group
            )
        if is_named_optimizer or group is not None:
            raise NotImplementedError(
                "FSDP1Api.optim_state_dict_to_load on a bridged model takes no "
                "is_named_optimizer= or group="
            )
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_optimizer_state_dict,
        )

        root = roots_for(model, "optim_state_dict_to_load")[0]
        settings = root._fsdp1_settings()
        full = settings.state_dict_type == StateDictType.FULL_STATE_DICT
        rank0_only = full and getattr(settings.optim_state_dict_config, "rank0_only", False)
        options = StateDictOptions(full_state_dict=full, broadcast_from_rank0=rank0_only)
        state = map_tensors(optim_state_dict, same)  # a new structure: torch changes it
        if not full:
            state = rows_as_dtensors(model, state)
        set_optimizer_state_dict(model, optim, state, options=options)
        return optim.state_dict()


#: FSDP1's class calls :class:`FSDP1Api` takes (FSDP1's own names).
CLASS_CALLS = tuple(name for name in vars(FSDP1Api) if not name.startswith("_"))


def _fsdp1_call(name: str) -> Callable[..., Any]:
    """FSDP1's own ``FullyShardedDataParallel.<name>``."""
    return getattr(FullyShardedDataParallel, name)
