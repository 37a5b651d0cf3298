"""Lightning 1.x test modules for the FSDP strategies, in the shapes of such suites.

``test_parts(rng, ctx)`` returns the chunks of one test module: models derived from
``BoringModel`` with ``configure_sharded_model``, parametrized trainer tests, registry and
checkpoint tests, and a custom policy called by keyword (issue 15's defect 3).
"""

from __future__ import annotations

import random

from tests.realistic.source import fill

_MODELS = '''
class ${P}ShardedModel(BoringModel):
    """A BoringModel whose layers are built and wrapped in the sharding hook."""

    def __init__(self, wrap_min_params: int = $min_params) -> None:
        super().__init__()
        self.layer: Optional[torch.nn.Module] = None
        self.wrap_min_params = wrap_min_params

    def configure_sharded_model(self) -> None:
        if self.layer is None:
            self.layer = torch.nn.Sequential(
                wrap(torch.nn.Linear(32, 32)),
                torch.nn.ReLU(),
                wrap(torch.nn.Linear(32, 2)),
            )

    def configure_optimizers(self):
        return torch.optim.SGD(self.layer.parameters(), lr=0.1)

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:
        self._assert_layer_fsdp_instance()

    def _assert_layer_fsdp_instance(self) -> None:
        assert isinstance(self.layer, $FSDP)
        assert isinstance(self.layer.module[0], $FSDP)
        assert isinstance(self.layer.module[2], $FSDP)


class ${P}AutoWrapModel(BoringModel):
    """Wrapping left to the strategy's auto-wrap policy."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Sequential(
            torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)
        )

    def configure_optimizers(self):
        return torch.optim.AdamW(self.trainer.model.parameters(), lr=0.01)
'''

_TRAINER_TESTS = '''
@RunIf(min_cuda_gpus=2, skip_windows=True, standalone=True, min_torch="1.12")
@pytest.mark.parametrize("precision", $precisions)
def test_${p}_strategy_checkpoint(tmp_path, precision):
    """Fit, save and reload with the native strategy, in each precision."""
    model = ${P}ShardedModel()
    trainer = Trainer(
        default_root_dir=tmp_path,
        accelerator="gpu",
        devices=2,
        strategy="fsdp_native",
        precision=precision,
        max_epochs=1,
        limit_train_batches=2,
        limit_val_batches=2,
        enable_progress_bar=False,
    )
    trainer.fit(model)
    checkpoint = os.path.join(tmp_path, "last.ckpt")
    trainer.save_checkpoint(checkpoint)
    restored = ${P}ShardedModel.load_from_checkpoint(checkpoint)
    for key, value in restored.state_dict().items():
        assert torch.isfinite(value).all(), key


@RunIf(min_cuda_gpus=2, skip_windows=True, standalone=True)
def test_${p}_activation_checkpointing(tmp_path):
    strategy = DDPFullyShardedNativeStrategy(activation_checkpointing=[torch.nn.Linear])
    trainer = Trainer(
        default_root_dir=tmp_path,
        accelerator="gpu",
        devices=2,
        strategy=strategy,
        precision=16,
        fast_dev_run=True,
    )
    trainer.fit(${P}AutoWrapModel())


def test_${p}_invalid_on_cpu(tmp_path):
    with pytest.raises(MisconfigurationException, match="only supports GPU"):
        Trainer(default_root_dir=tmp_path, accelerator="cpu", strategy="fsdp_native")


@pytest.mark.parametrize(
    "name, offload",
    [
        ("fsdp_native", False),
        ("fsdp_native_full_shard_offload", True),
    ],
)
def test_${p}_registered_names(name, offload):
    assert name in StrategyRegistry
    strategy = StrategyRegistry.get(name)
    assert isinstance(strategy, DDPFullyShardedNativeStrategy)
    assert (strategy.cpu_offload is not None) == offload
'''

_NAME_TESTS = """
def test_${p}_strategy_name_is_stable():
    # checkpoints written by older versions store the strategy by this name
    assert DDPFullyShardedNativeStrategy.strategy_name == "fsdp_native"
    offload = f"{DDPFullyShardedNativeStrategy.strategy_name}_full_shard_offload"
    assert offload in StrategyRegistry


@mock.patch("torch.cuda.device_count", return_value=2)
@mock.patch("torch.cuda.is_available", return_value=True)
def test_${p}_selected_from_string(*_):
    trainer = Trainer(accelerator="gpu", devices=2, strategy="fsdp_native", precision=16)
    assert isinstance(trainer.strategy, DDPFullyShardedNativeStrategy)
    assert trainer.strategy.mixed_precision_config is not None
"""

_POLICY_TESTS = """
def custom_auto_wrap_policy(
    module, recurse, unwrapped_params: int, min_num_params: int = int(1e8)
) -> bool:
    return unwrapped_params >= 2


def test_${p}_custom_policy_called_by_keyword():
    layer = torch.nn.Linear(4, 4)
    assert custom_auto_wrap_policy(module=layer, recurse=False, unwrapped_params=20)
    assert not custom_auto_wrap_policy(module=layer, recurse=False, unwrapped_params=1)


@RunIf(min_cuda_gpus=2, standalone=True)
def test_${p}_custom_policy_in_strategy(tmp_path):
    strategy = DDPFullyShardedNativeStrategy(auto_wrap_policy=custom_auto_wrap_policy)
    trainer = Trainer(
        default_root_dir=tmp_path, accelerator="gpu", devices=2, strategy=strategy, fast_dev_run=2
    )
    trainer.fit(${P}AutoWrapModel())
"""

_FAIRSCALE_TESTS = """
@RunIf(fairscale=True, min_cuda_gpus=2, standalone=True)
@pytest.mark.parametrize("min_params", [$min_params, 1e8])
def test_${p}_fairscale_strategy(tmp_path, min_params):
    strategy = DDPFullyShardedStrategy(min_num_params=min_params, reshard_after_forward=True)
    trainer = Trainer(
        default_root_dir=tmp_path,
        accelerator="gpu",
        devices=2,
        strategy=strategy,
        precision=16,
        max_epochs=1,
    )
    trainer.fit(BoringModel())
    assert trainer.state.finished


@RunIf(fairscale=True)
def test_${p}_fairscale_string():
    trainer = Trainer(accelerator="cpu", strategy="ddp_fully_sharded", devices=1)
    assert isinstance(trainer.strategy, DDPFullyShardedStrategy)
"""


def test_parts(rng: random.Random, ctx: dict, shapes: set[str]) -> list[str]:
    """The chunks of one Lightning test module (``FSDP`` and ``P`` come from ``ctx``).

    ``shapes`` adds optional groups: ``names`` (``Old.strategy_name``, issue 15's defect
    1), ``policies`` (a policy called by keyword, defect 3), ``fairscale``.
    """
    values = dict(
        ctx,
        p=ctx["P"].lower(),
        min_params=rng.choice([2, 10, 100]),
        precisions=rng.choice(['[16, "bf16"]', "[32, 16]", '["bf16"]', "[16]"]),
    )
    chunks = [fill(_MODELS, **values), fill(_TRAINER_TESTS, **values)]
    if "names" in shapes:
        chunks.append(fill(_NAME_TESTS, **values))
    if "policies" in shapes:
        chunks.append(fill(_POLICY_TESTS, **values))
    if "fairscale" in shapes:
        chunks.append(fill(_FAIRSCALE_TESTS, **values))
    return chunks
