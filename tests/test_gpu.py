"""The GPU leg: what only a GPU can run, on NCCL with one rank per GPU.

Every multi-process test spawns its ranks through ``tests.distributed``, which gives NCCL
where there is a GPU for each rank and gloo on the CPU otherwise. The tests here ask for
NCCL themselves: FSDP1's CPU offload (which pins memory), bf16 and fp16
``MixedPrecision`` through compat and after migrate, and Lightning's Trainer and Fabric
through compat's strategies with a GPU accelerator. Skipped, by the ``gpu`` marker,
where there is no CUDA. ``.ci/gpu.sh`` runs the whole suite on a lent GPU machine.
"""

from __future__ import annotations

import pytest
import torch

from tests import distributed
from tests.models import (
    Block,
    batch,
    lightning_module_class,
    make_model,
    summary,
    train,
    without_prefix,
)

pytestmark = [pytest.mark.gpu, pytest.mark.distributed]


def _legacy_and_native(rank: int, world_size: int) -> dict:
    import warnings

    import torch.distributed as dist
    from torch.distributed.fsdp import CPUOffload, FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    from compat.fsdp import FSDP

    device = distributed.device_for(rank)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = FSDP(make_model(), auto_wrap_policy={Block}, cpu_offload=True, device_id=device)
    native = FullyShardedDataParallel(
        make_model(),
        auto_wrap_policy=ModuleWrapPolicy({Block}),
        cpu_offload=CPUOffload(offload_params=True),
        device_id=device,
    )
    return {
        "backend": dist.get_backend(),
        "world_size": world_size,
        "device": str(device),
        "legacy": summary(legacy, train(legacy, [rank], device=device)),
        "native": summary(native, train(native, [rank], device=device)),
    }


def test_nccl_one_rank_per_gpu_and_legacy_offload_equals_native():
    backend = distributed.backend_for_tests()
    runs = distributed.run(_legacy_and_native, backend=backend, timeout=400)
    assert len(runs) == torch.cuda.device_count()
    for rank, result in enumerate(runs):
        assert result["backend"] == "nccl" and result["device"] == f"cuda:{rank}"
        legacy, native = result["legacy"], result["native"]
        assert legacy["units"] == native["units"] and len(native["units"]) > 1
        for key, value in native["state"].items():
            torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)
        assert legacy["losses"] == pytest.approx(native["losses"], abs=1e-6)


# bf16 and fp16: legacy code through compat == its migration on native torch ----------------

#: A torch 1.12-era wrapper: a custom policy with ``unwrapped_params`` (torch >= 1.13
#: calls it with ``nonwrapped_numel=``) for bf16, the transformer policy as a partial for
#: fp16, half precision in compute, reduction and buffers.
LEGACY_HALF = """\
import functools

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

from tests.models import Block


def big_enough(module, recurse, unwrapped_params, min_num_params=500):
    return unwrapped_params >= min_num_params


def build(model, device, dtype):
    half = MixedPrecision(param_dtype=dtype, reduce_dtype=dtype, buffer_dtype=dtype)
    if dtype == torch.bfloat16:
        policy = big_enough
    else:
        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    return FSDP(model, auto_wrap_policy=policy, mixed_precision=half, device_id=device)
"""


def _half_runs(rank: int, world_size: int, sources: dict[str, str]) -> dict:
    import types
    import warnings

    results = {}
    device = distributed.device_for(rank)
    for dtype in (torch.bfloat16, torch.float16):
        for side, source in sources.items():
            module = types.ModuleType(f"half_{side}")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(compile(source, f"<{side}>", "exec"), module.__dict__)  # noqa: S102
                model = module.build(make_model().to(device), device, dtype)
            compute = {p.dtype for p in model.parameters()}
            losses = train(model, [rank], device=device)
            results[(str(dtype), side)] = {
                **summary(model, losses),
                "deprecations": sorted(
                    {str(w.message).rsplit("[", 1)[-1].rstrip("]") for w in caught}
                    & {"FSDP102", "FSDP103"}
                ),
                "stored": sorted(str(d) for d in compute),
            }
    return results


def _migrated(source: str) -> str:
    from codemods.engine.run import run
    from codemods.settings import Settings

    outcome = run(source.encode(), Settings(fix=True))
    assert outcome.new_source is not None and all(f.fixed for f in outcome.findings)
    return outcome.new_source.decode()


def _through_compat(source: str) -> str:
    """``source`` importing the wrapper and the policies from compat (as its users do)."""
    return source.replace(
        "from torch.distributed.fsdp import FullyShardedDataParallel",
        "from compat.fsdp import FullyShardedDataParallel",
    ).replace("torch.distributed.fsdp.wrap", "compat.fsdp.wrap")


def test_half_precision_legacy_through_compat_equals_its_migration():
    migrated = _migrated(LEGACY_HALF)
    assert "nonwrapped_numel" in migrated and "ModuleWrapPolicy" in migrated
    sources = {
        "compat": _through_compat(LEGACY_HALF),
        "migrated": migrated,
    }
    runs = distributed.run(_half_runs, sources, world_size=1, backend="nccl", timeout=300)
    for dtype, code in (("torch.bfloat16", "FSDP102"), ("torch.float16", "FSDP103")):
        legacy, native = runs[0][(dtype, "compat")], runs[0][(dtype, "migrated")]
        assert legacy["deprecations"] == [code] and native["deprecations"] == []
        assert legacy["units"] == native["units"] == ["", "blocks.0", "blocks.1", "blocks.2"]
        assert legacy["stored"] == native["stored"] == ["torch.float32"]
        _same_run(legacy, native, dtype)


def _same_run(legacy: dict, native: dict, label: str) -> None:
    assert legacy["state"].keys() == native["state"].keys(), label
    for key, value in native["state"].items():
        torch.testing.assert_close(legacy["state"][key], value, atol=1e-6, rtol=0)
    assert legacy["losses"] == pytest.approx(native["losses"], abs=1e-6), label


# Lightning and Fabric on the GPU through compat's strategies --------------------------------


def _lightning_on_gpu(rank: int, world_size: int) -> dict:
    import functools
    import warnings

    import lightning as L
    from lightning.fabric.strategies import FSDPStrategy as FabricFSDP
    from lightning.pytorch.strategies import FSDPStrategy

    from compat.fsdp.wrap import transformer_auto_wrap_policy
    from compat.strategies import DDPFullyShardedNativeStrategy
    from compat.strategies.fabric import DDPFullyShardedNativeStrategy as FabricLegacy

    _, LitNet = lightning_module_class("lightning.pytorch")

    def fit(strategy) -> dict:
        trainer = L.Trainer(
            strategy=strategy,
            accelerator="gpu",
            devices=1,
            precision="bf16-mixed",
            max_steps=3,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            use_distributed_sampler=False,
        )
        module = LitNet()
        data = [batch(rank, step) for step in range(3)]
        trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=None))
        result = without_prefix(summary(trainer.strategy.model, module.losses), "net.")
        return {**result, "device": str(next(module.parameters()).device)}

    def fabric_run(strategy) -> dict:
        fabric = L.Fabric(accelerator="cuda", devices=1, precision="bf16-mixed", strategy=strategy)
        fabric.launch()  # the rank exists already: this only marks Fabric as launched
        model = fabric.setup_module(make_model())
        optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
        losses = []
        for step in range(3):
            x, y = batch(rank, step, fabric.device)
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
            fabric.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        return {**summary(model._forward_module, losses), "device": str(fabric.device)}

    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = DDPFullyShardedNativeStrategy(
            auto_wrap_policy=policy, activation_checkpointing=[Block]
        )
        fabric_legacy = FabricLegacy(auto_wrap_policy=policy)
    return {
        "trainer": {
            "compat": fit(legacy),
            "native": fit(
                FSDPStrategy(auto_wrap_policy={Block}, activation_checkpointing_policy={Block})
            ),
        },
        "fabric": {
            "compat": fabric_run(fabric_legacy),
            "native": fabric_run(FabricFSDP(auto_wrap_policy={Block})),
        },
    }


def test_lightning_and_fabric_train_on_the_gpu_through_compats_strategies():
    runs = distributed.run(_lightning_on_gpu, world_size=1, backend="nccl", timeout=300)
    for loop in ("trainer", "fabric"):
        legacy, native = runs[0][loop]["compat"], runs[0][loop]["native"]
        assert legacy["device"] == native["device"] == "cuda:0", loop
        assert legacy["units"] == native["units"] and len(native["units"]) > 1, loop
        assert legacy["checkpointed"] == native["checkpointed"], loop
        # Checkpointing is asked of the Trainer's strategies only.
        assert bool(native["checkpointed"]) == (loop == "trainer"), loop
        _same_run(legacy, native, loop)
