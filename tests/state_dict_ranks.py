"""The per-rank work of tests/test_state_dict_runs.py (module-level, so ranks can pickle it)."""

from __future__ import annotations

import os
from typing import Any

import torch

from tests.state_dicts import (
    caught_codes,
    fsdp_model,
    full_parameters,
    native_sharded_fsdp1,
    optimizer,
    plain,
    step,
    trained,
)

#: The legacy optimizer methods torch may drop; DCP itself never calls them.
OPTIM_METHODS = (
    "full_optim_state_dict",
    "sharded_optim_state_dict",
    "shard_full_optim_state_dict",
    "scatter_full_optim_state_dict",
    "flatten_sharded_optim_state_dict",
    "rekey_optim_state_dict",
)


def legacy_and_migrated(rank: int, world_size: int) -> dict[str, Any]:
    """The same trained model's state dicts, the legacy way through compat and the current way."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType

    from compat.fsdp import FSDP

    model, optim = trained()
    on_gpu = next(model.parameters()).is_cuda
    out: dict[str, Any] = {"on_gpu": on_gpu, "reference": full_parameters(model)}
    with caught_codes() as legacy_codes:
        config = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
            out["legacy_full"] = plain(model.state_dict())
        out["legacy_full_optim"] = plain(FSDP.full_optim_state_dict(model, optim))
        params = list(model.parameters())
        out["legacy_full_optim_input"] = plain(
            FSDP.full_optim_state_dict(model, optim, optim_input=params)
        )
        with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
            out["legacy_sharded"] = plain(model.state_dict())
        out["legacy_sharded_optim"] = plain(FSDP.sharded_optim_state_dict(model, optim))
    with caught_codes() as native_codes:
        # cpu_offload=True fails on CPU ranks (FSDP1 gathering onto the CPU it is on).
        full = StateDictOptions(full_state_dict=True, cpu_offload=on_gpu)
        out["native_full"] = plain(get_model_state_dict(model, options=full))
        full_offloaded = StateDictOptions(full_state_dict=True, cpu_offload=True)
        out["native_full_optim"] = plain(
            get_optimizer_state_dict(model, optim, options=full_offloaded)
        )
        if native_sharded_fsdp1():
            out["native_sharded"] = plain(get_model_state_dict(model))
            out["native_sharded_optim"] = plain(get_optimizer_state_dict(model, optim))
    out["legacy_codes"] = sorted(legacy_codes)
    out["native_codes"] = sorted(native_codes)
    return out


def _full_optim(model: torch.nn.Module, optim: torch.optim.Optimizer) -> Any:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    options = StateDictOptions(full_state_dict=True)
    return plain(get_optimizer_state_dict(model, optim, options=options))


def _save_old(model, optim, folder: str, save_state_dict) -> None:
    from torch.distributed.fsdp import StateDictType

    from compat.checkpoint import FileSystemWriter
    from compat.fsdp import FSDP

    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, optim)}
        save_state_dict(state, FileSystemWriter(folder))


def _load_old(model, optim, folder: str, load_state_dict) -> None:
    from torch.distributed.checkpoint.optimizer import load_sharded_optimizer_state_dict
    from torch.distributed.fsdp import StateDictType

    from compat.checkpoint import FileSystemReader
    from compat.fsdp import FSDP

    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = {"model": model.state_dict()}
        load_state_dict(state, FileSystemReader(folder))
        model.load_state_dict(state["model"])
        saved = load_sharded_optimizer_state_dict(
            model_state_dict=state["model"],
            optimizer_key="optim",
            storage_reader=FileSystemReader(folder),
        )
        optim.load_state_dict(FSDP.optim_state_dict_to_load(model, optim, saved["optim"]))


def _dcp_options() -> Any:
    """``flatten_optimizer_state_dict=True`` where torch has it (2.4+).

    Without it, torch 2.13's ``load`` of an FSDP1 optimizer state dict from
    ``get_state_dict`` raises "Missing key in checkpoint state_dict: optim.param_groups"
    (``save`` writes the param groups item by item; ``load`` asks for the list whole).
    """
    import dataclasses

    from torch.distributed.checkpoint.state_dict import StateDictOptions

    fields = {f.name for f in dataclasses.fields(StateDictOptions)}
    if "flatten_optimizer_state_dict" in fields:
        return StateDictOptions(flatten_optimizer_state_dict=True)
    return StateDictOptions()


def _save_new(model, optim, folder: str) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optim_state = get_state_dict(model, optim, options=_dcp_options())
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=folder)


def _load_new(model, optim, folder: str) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    options = _dcp_options()
    model_state, optim_state = get_state_dict(model, optim, options=options)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=folder)
    set_state_dict(
        model,
        optim,
        model_state_dict=state["model"],
        optim_state_dict=state["optim"],
        options=options,
    )


def round_trips(rank: int, world_size: int, folder: str) -> dict[str, Any]:
    """Save a trained model and optimizer three ways; load each into fresh ones; compare."""
    import compat.checkpoint as cc
    from compat.deprecation import reset_warned_sites

    model, optim = trained()
    out: dict[str, Any] = {
        "source_params": full_parameters(model),
        "source_optim": _full_optim(model, optim),
        "variants": {},
    }
    ways = {
        "old": (cc.save_state_dict, cc.load_state_dict),
        "old-on-new": (cc.save_state_dict_with_save, cc.load_state_dict_with_load),
    }
    loaded = []
    # "new" saves the sharded dicts of get_state_dict, which not every torch can take.
    for variant in ("old", "old-on-new", "new")[: 3 if native_sharded_fsdp1() else 2]:
        where = os.path.join(folder, variant)
        fresh = fsdp_model(seed=1)
        fresh_optim = optimizer(fresh)
        differed = any(
            not torch.equal(a, b)
            for a, b in zip(full_parameters(fresh).values(), out["source_params"].values())
        )
        reset_warned_sites()  # each variant warns anew from the lines the last one used
        with caught_codes() as codes:
            if variant == "new":
                _save_new(model, optim, where)
                _load_new(fresh, fresh_optim, where)
            else:
                save, load = ways[variant]
                if variant == "old-on-new":  # compat's stand-ins warn only through the old names
                    save, load = _warning(save, "FSDP120"), _warning(load, "FSDP121")
                _save_old(model, optim, where, save)
                _load_old(fresh, fresh_optim, where, load)
        out["variants"][variant] = {
            "differed_before": differed,
            "params": full_parameters(fresh),
            "optim": _full_optim(fresh, fresh_optim),
            "codes": sorted(codes),
        }
        loaded.append((variant, fresh, fresh_optim))
    # The restored optimizer state must also act: one more step from each gives the same.
    step(model, optim, rank, 5)
    out["source_next"] = full_parameters(model)
    for variant, fresh, fresh_optim in loaded:
        step(fresh, fresh_optim, rank, 5)
        out["variants"][variant]["next"] = full_parameters(fresh)
    return out


def _warning(function, code: str):
    """``function`` warning with ``code`` first, as the old name it stands in for does."""
    from compat.deprecation import warn_deprecated

    def call(*args: Any) -> Any:
        warn_deprecated(code)
        return function(*args)

    return call


def _fresh_targets() -> dict[str, tuple[torch.nn.Module, torch.optim.Optimizer]]:
    models = {name: fsdp_model(seed=1) for name in ("shard", "scatter", "flatten")}
    return {name: (model, optimizer(model)) for name, model in models.items()}


def fallback_run(rank: int, world_size: int) -> dict[str, Any]:
    """Torch's own legacy methods, then compat's stand-ins on the same model, side by side."""
    from torch.distributed.fsdp import FullStateDictConfig, OptimStateKeyType, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as TorchFSDP

    import compat.fsdp.fallbacks as fb
    from compat.fsdp import FSDP
    from tests.models import make_model

    full_type, sharded_type = StateDictType.FULL_STATE_DICT, StateDictType.SHARDED_STATE_DICT
    model, optim = trained()
    source = make_model(seed=0)  # a plain model for rekeying to its parameter ids
    own: dict[str, Any] = {}
    fallback: dict[str, Any] = {}

    # Model state dicts: torch's own context manager against the stand-in.
    own_config = FullStateDictConfig(offload_to_cpu=False, rank0_only=True)
    with TorchFSDP.state_dict_type(model, full_type, own_config):
        own["full"] = plain(model.state_dict())
    with fb.state_dict_type(
        model, full_type, FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    ):
        fallback["full"] = plain(model.state_dict())
    with TorchFSDP.state_dict_type(model, sharded_type):
        own["sharded"] = plain(model.state_dict())
    if native_sharded_fsdp1():  # the stand-in is get_model_state_dict
        with fb.state_dict_type(model, sharded_type):
            fallback["sharded"] = plain(model.state_dict())
    full_model = fb.state_dict_type(model, full_type)  # every rank: the whole dict
    with full_model:
        whole = model.state_dict()
    fresh = fsdp_model(seed=1)
    with fb.state_dict_type(fresh, full_type):
        fresh.load_state_dict(whole)
    own["full_loaded"] = full_parameters(model)
    fallback["full_loaded"] = full_parameters(fresh)

    # Optimizer state dicts: torch's own methods first...
    full_all = TorchFSDP.full_optim_state_dict(model, optim, rank0_only=False)
    sharded = TorchFSDP.sharded_optim_state_dict(model, optim)
    own["full_optim"] = plain(TorchFSDP.full_optim_state_dict(model, optim))
    own["sharded_optim"] = plain(sharded)
    # Each loads into a fresh model and optimizer of its own: the stand-ins load into theirs.
    own_into, targets = _fresh_targets(), _fresh_targets()
    own["shard_full"] = plain(
        TorchFSDP.shard_full_optim_state_dict(
            full_all, own_into["shard"][0], optim=own_into["shard"][1]
        )
    )
    own["scatter_full"] = plain(
        TorchFSDP.scatter_full_optim_state_dict(
            full_all if rank == 0 else None, own_into["scatter"][0], optim=own_into["scatter"][1]
        )
    )
    own["flatten_sharded"] = plain(
        TorchFSDP.flatten_sharded_optim_state_dict(sharded, *own_into["flatten"])
    )
    source_optim = optimizer(source)
    own["rekey"] = plain(
        TorchFSDP.rekey_optim_state_dict(
            full_all, OptimStateKeyType.PARAM_ID, source, optim=source_optim
        )
    )

    try:  # flattened FSDP parameters have no names of their own to key by
        fb.rekey_optim_state_dict(full_all, OptimStateKeyType.PARAM_ID, model, optim=optim)
        rekey_flat_error = ""
    except NotImplementedError as exc:
        rekey_flat_error = str(exc)

    # ... then gone from this rank's torch, so that compat's FSDP runs its stand-ins.
    for name in OPTIM_METHODS:
        delattr(TorchFSDP, name)
    missing = [name for name in OPTIM_METHODS if hasattr(TorchFSDP, name)]
    with caught_codes() as codes:
        fallback["full_optim"] = plain(FSDP.full_optim_state_dict(model, optim))
        fallback["sharded_optim"] = plain(FSDP.sharded_optim_state_dict(model, optim))
        fallback["shard_full"] = plain(
            FSDP.shard_full_optim_state_dict(
                full_all, targets["shard"][0], optim=targets["shard"][1]
            )
        )
        fallback["scatter_full"] = plain(
            FSDP.scatter_full_optim_state_dict(
                full_all if rank == 0 else None,
                targets["scatter"][0],
                optim_input=list(targets["scatter"][0].parameters()),
                optim=targets["scatter"][1],
            )
        )
        fallback["flatten_sharded"] = plain(
            FSDP.flatten_sharded_optim_state_dict(sharded, *targets["flatten"])
        )
        fallback["rekey"] = plain(
            FSDP.rekey_optim_state_dict(
                full_all, OptimStateKeyType.PARAM_ID, source, optim=source_optim
            )
        )
    return {
        "own": own,
        "fallback": fallback,
        "fallback_codes": sorted(codes),
        "fallback_missing": missing,
        "rekey_flat_error": rekey_flat_error,
    }
