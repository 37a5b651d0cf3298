"""compat.strategies: Lightning's removed FSDP strategies on Lightning 2.x, on CPU too.

The translation is checked without processes; real 2-rank runs fit a Lightning Trainer
(both the ``lightning`` and ``pytorch_lightning`` packages) and a Fabric loop on CPU
through the legacy classes and compare them with native torch FSDP code.
"""

from __future__ import annotations

import functools
import os
import re
import runpy
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("lightning")

from compat import FSDPDeprecationWarning  # noqa: E402
from compat.strategies import (  # noqa: E402
    DDPFullyShardedNativeStrategy,
    DDPFullyShardedStrategy,
    translate,
)
from tests.distributed import NEEDS_FSDP1_OPTIMIZER_GATHER, cpu_environment, run  # noqa: E402
from tests.equivalence import (  # noqa: E402
    Case,
    checkpoint_reference,
    equivalence_tests,
    native_fsdp,
    warning_codes,
)
from tests.models import (  # noqa: E402
    Block,
    Head,
    batch,
    lightning_module_class,
    local_device,
    make_model,
    summary,
    without_prefix,
)


def _made(cls, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strategy = cls(*args, **kwargs)
    return strategy, warning_codes(caught), [str(w.message) for w in caught]


def test_legacy_classes_are_fsdp_strategies():
    from lightning.pytorch.strategies import FSDPStrategy

    for cls in (DDPFullyShardedStrategy, DDPFullyShardedNativeStrategy):
        strategy, _, _ = _made(cls)
        assert isinstance(strategy, FSDPStrategy) and type(strategy) is not FSDPStrategy


FLAVOURS = [
    ("compat.strategies", "lightning"),
    ("compat.strategies.lightning_pytorch", "lightning"),
    ("compat.strategies.pytorch_lightning", "pytorch_lightning"),
    ("compat.strategies.fabric", "lightning"),
    ("compat.strategies.lightning_fabric", "lightning_fabric"),
]


@pytest.mark.parametrize(("module_name", "package"), FLAVOURS)
@pytest.mark.parametrize(
    "name",
    [
        "DDPFullyShardedStrategy",
        "DDPFullyShardedNativeStrategy",
        "DDPFullyShardedPlugin",
        "CPUCapableFSDPStrategy",
        "RemovedStrategyName",
        "FullyShardedNativeNativeMixedPrecisionPlugin",
        "FullyShardedNativeMixedPrecisionPlugin",
    ],
)
def test_each_class_pickles_from_the_module_it_names(module_name, package, name):
    import importlib
    import pickle

    pytest.importorskip(package)
    module = importlib.import_module(module_name)
    if name not in getattr(module, "__all__", ()):
        pytest.skip(f"{module_name} exports only the legacy names")
    cls = getattr(module, name)
    assert cls.__name__ == cls.__qualname__ == name
    home = importlib.import_module(cls.__module__)
    assert getattr(home, cls.__qualname__) is cls
    assert pickle.loads(pickle.dumps(cls)) is cls
    if name.endswith("Strategy") or name.endswith("ShardedPlugin"):
        strategy, _, _ = _made(cls)
        assert type(pickle.loads(pickle.dumps(strategy))) is cls


def test_min_num_params_becomes_a_size_based_policy():
    strategy, codes, _ = _made(DDPFullyShardedStrategy, min_num_params=500)
    policy = strategy.kwargs["auto_wrap_policy"]
    assert policy.func.__name__ == "size_based_auto_wrap_policy"
    assert policy.keywords == {"min_num_params": 500}
    assert codes == {"FSDP202"}


@pytest.mark.parametrize(("reshard", "expected"), [(True, "FULL_SHARD"), (False, "SHARD_GRAD_OP")])
def test_reshard_after_forward_becomes_a_sharding_strategy(reshard, expected):
    strategy, _, _ = _made(DDPFullyShardedStrategy, reshard_after_forward=reshard)
    assert strategy.sharding_strategy.name == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("flatten_parameters", False),
        ("move_grads_to_cpu", True),
        ("fp32_reduce_scatter", True),
        ("compute_dtype", torch.float16),
        ("bucket_cap_mb", 50),
        ("state_dict_to_cpu", False),
    ],
)
def test_fairscale_only_arguments_warn_by_name(name, value):
    _, codes, messages = _made(DDPFullyShardedStrategy, **{name: value})
    assert codes == {"FSDP202"}
    assert any(f"`{name}`" in m and "no FSDPStrategy meaning" in m for m in messages)


def test_cpu_offload_passes_through():
    strategy, _, messages = _made(DDPFullyShardedStrategy, cpu_offload=True)
    assert strategy.cpu_offload.offload_params
    assert not any("cpu_offload" in m for m in messages)


def _policy_classes(kwargs: dict) -> set:
    """The module classes Lightning built a policy from, in the form its release uses.

    With torch >= 2.1 Lightning builds a ``ModuleWrapPolicy``; before, a
    ``transformer_auto_wrap_policy`` partial, or a ``check_fn`` for checkpointing.
    """
    policy = kwargs.get("auto_wrap_policy")
    if policy is None:
        return {cls for cls in (Block, Head) if kwargs["check_fn"](cls())}
    if isinstance(policy, functools.partial):
        return set(policy.keywords["transformer_layer_cls"])
    return set(policy._module_classes)


@pytest.mark.parametrize("value", [Block, [Block, Head], (Block,), {Block}])
def test_activation_checkpointing_becomes_a_policy_set(value):
    strategy, codes, _ = _made(DDPFullyShardedNativeStrategy, activation_checkpointing=value)
    expected = set(value) if isinstance(value, (list, tuple, set)) else {value}
    assert codes == {"FSDP203", "FSDP208"}
    assert _policy_classes(strategy._activation_checkpointing_kwargs) == expected


@pytest.mark.parametrize("policy_module", ["torch.distributed.fsdp.wrap", "compat.fsdp.wrap"])
def test_transformer_partial_becomes_the_layer_set(policy_module):
    import importlib

    function = importlib.import_module(policy_module).transformer_auto_wrap_policy
    policy = functools.partial(function, transformer_layer_cls={Block, Head})
    strategy, codes, _ = _made(DDPFullyShardedNativeStrategy, auto_wrap_policy=policy)
    assert codes == {"FSDP203", "FSDP209"}
    assert _policy_classes(strategy.kwargs) == {Block, Head}


@pytest.mark.parametrize(
    ("cls", "kwargs", "names"),
    [
        (
            DDPFullyShardedNativeStrategy,
            {"activation_checkpointing": Block, "activation_checkpointing_policy": {Block}},
            "activation_checkpointing=.*activation_checkpointing_policy=",
        ),
        (
            DDPFullyShardedStrategy,
            {"min_num_params": 10, "auto_wrap_policy": {Block}},
            "min_num_params=.*auto_wrap_policy=",
        ),
        (
            DDPFullyShardedStrategy,
            {"reshard_after_forward": False, "sharding_strategy": "FULL_SHARD"},
            "reshard_after_forward=.*sharding_strategy=",
        ),
    ],
)
def test_old_and_new_spelling_together_is_a_type_error(cls, kwargs, names):
    with pytest.raises(TypeError, match=names), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls(**kwargs)


@pytest.mark.parametrize(
    ("value", "message"),
    [(Block(), "got an instance of Block"), (int, "expects nn.Module subclasses"), ([], "empty")],
)
def test_bad_checkpointing_classes(value, message):
    with pytest.raises(TypeError, match=message), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DDPFullyShardedNativeStrategy(activation_checkpointing=value)


def test_positional_arguments_bind_like_lightning_1_9():
    strategy, _, _ = _made(DDPFullyShardedStrategy, None, True)  # (accelerator, cpu_offload)
    assert strategy.cpu_offload.offload_params
    with pytest.raises(
        TypeError, match=r"DDPFullyShardedStrategy.__init__\(\) got multiple values"
    ):
        _made(DDPFullyShardedStrategy, None, accelerator=None)


def test_fabric_flavour_uses_fabrics_argument_names():
    assert translate.for_fabric({"precision_plugin": "p", "checkpoint_io": None}) == {
        "precision": "p"
    }
    with pytest.raises(TypeError, match="Fabric's FSDPStrategy takes no checkpoint_io"):
        translate.for_fabric({"checkpoint_io": object()})


@pytest.mark.slow
def test_import_without_lightning_says_what_to_install(run_without_torch):
    code = (
        "class _NoLightning:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('lightning', 'pytorch_lightning', 'lightning_fabric'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path[0] = _NoLightning()\n"  # replace the torch blocker: torch is needed here
        "import compat.strategies\n"
    )
    stderr = run_without_torch(code, expect_failure=True)
    assert 'pip install "fsdp-compat[lightning]"' in stderr


# Real runs ------------------------------------------------------------------------------


def _fit(rank: int, lightning_pkg: str, strategy) -> dict:
    L, LitNet = lightning_module_class(lightning_pkg)
    trainer = L.Trainer(
        strategy=strategy,
        accelerator=local_device().type,  # the rank's: cuda under NCCL
        devices=2,
        max_steps=3,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    module = LitNet()
    data = [batch(rank, step, local_device()) for step in range(3)]
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=None))
    return without_prefix(summary(trainer.strategy.model, module.losses), "net.")


def _trainer_ddp_fully_sharded(rank):
    return _fit(
        rank,
        "lightning.pytorch",
        DDPFullyShardedStrategy(min_num_params=500, activation_checkpointing=Block),
    )


def _trainer_native_partial(rank):
    from compat.fsdp.wrap import transformer_auto_wrap_policy

    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    strategy = DDPFullyShardedNativeStrategy(
        auto_wrap_policy=policy, activation_checkpointing=[Block]
    )
    return _fit(rank, "lightning.pytorch", strategy)


def _trainer_pytorch_lightning(rank):
    from compat.strategies.pytorch_lightning import DDPFullyShardedStrategy as PLStrategy

    return _fit(
        rank, "pytorch_lightning", PLStrategy(min_num_params=500, reshard_after_forward=False)
    )


def _fabric_native(rank):
    from lightning.fabric import Fabric

    from compat.strategies.fabric import DDPFullyShardedNativeStrategy as FabricStrategy

    strategy = FabricStrategy(auto_wrap_policy={Block})
    fabric = Fabric(accelerator=local_device().type, devices=2, strategy=strategy)
    fabric.launch()  # the ranks exist already: this only marks Fabric as launched
    model = fabric.setup_module(make_model())
    optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
    losses = []
    for step in range(3):
        x, y = batch(rank, step, fabric.device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return summary(model._forward_module, losses)


def _size_based_checkpointed(model):
    from compat.checkpointing import checkpoint_modules
    from compat.fsdp.wrap import torch_wrap

    policy = functools.partial(torch_wrap.size_based_auto_wrap_policy, min_num_params=500)
    sharded = native_fsdp(model, auto_wrap_policy=policy)
    checkpoint_modules(sharded, Block)
    return sharded


def _module_wrap_checkpointed(model):
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    from compat.checkpointing import checkpoint_modules

    sharded = native_fsdp(model, auto_wrap_policy=ModuleWrapPolicy({Block}))
    checkpoint_modules(sharded, Block)
    return sharded


def _size_based_shard_grad_op(model):
    from torch.distributed.fsdp import ShardingStrategy

    from compat.fsdp.wrap import torch_wrap

    policy = functools.partial(torch_wrap.size_based_auto_wrap_policy, min_num_params=500)
    return native_fsdp(
        model, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP
    )


def _module_wrap(model):
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return native_fsdp(model, auto_wrap_policy=ModuleWrapPolicy({Block}))


CASES = {
    "trainer-ddp-fully-sharded": Case(
        _trainer_ddp_fully_sharded,
        _size_based_checkpointed,
        frozenset({"FSDP202", "FSDP208"}),
        reference=checkpoint_reference(Block),
        legacy_trains=True,
    ),
    "trainer-native-transformer-partial": Case(
        _trainer_native_partial,
        _module_wrap_checkpointed,
        frozenset({"FSDP203", "FSDP208", "FSDP209"}),
        reference=checkpoint_reference(Block),
        legacy_trains=True,
    ),
    "pytorch-lightning-trainer-reshard": Case(
        _trainer_pytorch_lightning,
        _size_based_shard_grad_op,
        frozenset({"FSDP202"}),
        legacy_trains=True,
    ),
    "fabric-native": Case(_fabric_native, _module_wrap, frozenset({"FSDP203"}), legacy_trains=True),
}
try:
    import pytorch_lightning  # noqa: F401
except ImportError:
    del CASES["pytorch-lightning-trainer-reshard"]


runs, test_legacy_equals_native, test_legacy_equals_reference = equivalence_tests(
    __name__, CASES, timeout=600
)


@pytest.mark.distributed
def test_trainer_wrapped_structure(runs):
    legacy = runs[0]["trainer-ddp-fully-sharded"]["legacy"]
    assert legacy["units"] == ["", "blocks.0", "blocks.1", "blocks.2"]
    assert legacy["checkpointed"] == ["blocks.0", "blocks.1", "blocks.2"]


def test_plugin_name_builds_the_fairscale_translation():
    from compat.strategies import DDPFullyShardedPlugin

    strategy, codes, _ = _made(DDPFullyShardedPlugin, min_num_params=500)
    assert codes == {"FSDP201"}
    assert strategy.kwargs["auto_wrap_policy"].keywords == {"min_num_params": 500}


@pytest.mark.parametrize(
    ("name", "code", "offload"),
    [
        ("fsdp_native", "FSDP204", False),
        ("fsdp_native_full_shard_offload", "FSDP204", True),
        ("ddp_fully_sharded", "FSDP205", False),
    ],
)
def test_removed_strategy_names_work_again_and_warn(name, code, offload):
    from lightning.pytorch import Trainer
    from lightning.pytorch.strategies import FSDPStrategy

    with pytest.warns(FSDPDeprecationWarning, match=rf"\[{code}\]") as record:
        trainer = Trainer(strategy=name, accelerator="cpu", devices=1, logger=False)
    assert isinstance(trainer.strategy, FSDPStrategy)
    assert (
        bool(trainer.strategy.cpu_offload and trainer.strategy.cpu_offload.offload_params)
        is offload
    )
    assert {r.filename for r in record if issubclass(r.category, FSDPDeprecationWarning)} == {
        __file__
    }


def test_removed_strategy_names_for_fabric():
    from lightning.fabric import Fabric
    from lightning.fabric.strategies import FSDPStrategy

    import compat.strategies.fabric  # noqa: F401 - registers the names for Fabric

    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP204\]"):
        fabric = Fabric(strategy="fsdp_native", accelerator="cpu", devices=1)
    assert isinstance(fabric.strategy, FSDPStrategy)


# Checkpoints on CPU ranks ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
#: What a launcher sets for its ranks: the example's own Lightning launcher must set them.
_RANK_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK")


def _readme_lightning_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- lightning-example -->\n```python\n(.+?)```", readme, flags=re.S)
    assert match, "README.md has no ```python block after <!-- lightning-example -->"
    return match.group(1)


def _fit_script_and_load_its_checkpoint(folder: Path, text: str) -> tuple[str, dict, Any]:
    """Run ``text`` as ``python train.py`` in ``folder``; its stderr, checkpoint and a Model."""
    script = folder / "train.py"
    script.write_text(text, encoding="utf-8")
    environment = {k: v for k, v in cpu_environment().items() if k not in _RANK_VARIABLES}
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), environment.get("PYTHONPATH")) if p
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (saved_path,) = (folder / "lightning_logs" / "version_0" / "checkpoints").glob("*.ckpt")
    saved = torch.load(saved_path, map_location="cpu", weights_only=False)
    return done.stderr, saved, runpy.run_path(str(script), run_name="example")["Model"]()


def _assert_full(saved: dict, model: torch.nn.Module) -> None:
    weights = saved["state_dict"]
    # strict: every weight of the unwrapped model, by name and full shape
    model.load_state_dict(weights)
    assert all(torch.isfinite(tensor).all() for tensor in weights.values())
    # AdamW's full state, keyed by parameter position, the shape of each parameter
    optimizer_state = saved["optimizer_states"][0]["state"]
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert sorted(optimizer_state) == list(range(len(shapes)))
    assert [tuple(optimizer_state[i]["exp_avg"].shape) for i in range(len(shapes))] == shapes


@NEEDS_FSDP1_OPTIMIZER_GATHER
@pytest.mark.distributed
@pytest.mark.slow
def test_readme_lightning_example_saves_its_full_checkpoint_on_cpu(tmp_path):
    """The README's script as written: the Trainer's defaults, its own launcher, 2 CPU ranks.

    Lightning saves its end-of-epoch checkpoint with FSDP1's full state dict offloaded
    to the CPU, which crashed CPU ranks (exit 139) before compat's strategies took it
    in place.
    """
    stderr, saved, model = _fit_script_and_load_its_checkpoint(
        tmp_path, _readme_lightning_example()
    )
    assert "[FSDP202]" in stderr and "[FSDP208]" in stderr
    _assert_full(saved, model)


def _swapped(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


@NEEDS_FSDP1_OPTIMIZER_GATHER
@pytest.mark.distributed
@pytest.mark.slow
def test_a_removed_strategy_name_saves_its_full_checkpoint_on_cpu(tmp_path):
    """The same script on the standalone pytorch_lightning, with ``strategy="fsdp_native"``."""
    pytest.importorskip("pytorch_lightning")
    text = _swapped(
        _readme_lightning_example(),
        ("import lightning as L", "import pytorch_lightning as L"),
        (
            "from compat.strategies import DDPFullyShardedStrategy",
            "import compat.strategies.pytorch_lightning",
        ),
    )
    text = re.sub(r"strategy = DDPFullyShardedStrategy\(.*\)", 'strategy = "fsdp_native"', text)
    assert 'strategy = "fsdp_native"' in text
    stderr, saved, model = _fit_script_and_load_its_checkpoint(tmp_path, text)
    assert "[FSDP204]" in stderr
    _assert_full(saved, model)


def _fabric_saves_on_cpu(rank, world_size, directory):
    from lightning.fabric import Fabric

    from compat.strategies.fabric import DDPFullyShardedStrategy as FabricStrategy

    # Fabric's default is a sharded checkpoint (a folder); a full one is a file.
    strategy = FabricStrategy(min_num_params=500, state_dict_type="full")
    fabric = Fabric(accelerator="cpu", devices=world_size, strategy=strategy)
    fabric.launch()  # the ranks exist already: this only marks Fabric as launched
    model = fabric.setup_module(make_model())
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters()))
    x, y = batch(rank, 0)
    fabric.backward(torch.nn.functional.mse_loss(model(x), y))
    optimizer.step()
    path = os.path.join(directory, "fabric.ckpt")
    fabric.save(path, {"model": model, "optimizer": optimizer})
    fabric.barrier()
    return torch.load(path, map_location="cpu", weights_only=False)["model"]


@NEEDS_FSDP1_OPTIMIZER_GATHER
@pytest.mark.distributed
def test_fabric_save_from_cpu_ranks_has_the_full_weights(tmp_path):
    saved = run(_fabric_saves_on_cpu, str(tmp_path), world_size=2, backend="gloo")
    model = make_model()
    model.load_state_dict(saved[0])  # strict: every full weight, by name and shape
    assert all(torch.equal(saved[0][k], saved[1][k]) for k in saved[0])
    assert not all(torch.equal(saved[0][k], v) for k, v in make_model().state_dict().items())
