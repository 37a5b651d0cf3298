"""Ordinary unit tests of a model module (shapes, caches, presets): test files' bulk."""

from __future__ import annotations

import random

from tests.realistic.source import fill

_TESTS = """
@pytest.fixture
def ${p}_config() -> ${P}Config:
    return ${P}Config(n_layer=2, n_head=4, n_embd=64, block_size=32, vocab_size=128)


def test_${p}_forward_shapes(${p}_config):
    model = ${P}Model(${p}_config)
    idx = torch.randint(0, ${p}_config.vocab_size, (2, 16))
    logits, loss = model(idx, idx)
    assert logits.shape == (2, 16, ${p}_config.padded_vocab_size)
    assert loss.ndim == 0 and torch.isfinite(loss)


def test_${p}_inference_returns_last_position(${p}_config):
    model = ${P}Model(${p}_config).eval()
    idx = torch.randint(0, ${p}_config.vocab_size, (1, 8))
    logits, loss = model(idx)
    assert loss is None
    assert logits.shape[1] == 1


@pytest.mark.parametrize("steps", [1, 5, $steps])
def test_${p}_generate_appends_tokens(${p}_config, steps):
    torch.manual_seed(0)
    model = ${P}Model(${p}_config).eval()
    idx = torch.zeros((1, 1), dtype=torch.long)
    out = model.generate(idx, max_new_tokens=steps, top_k=5)
    assert out.shape == (1, 1 + steps)
    assert out.max() < ${p}_config.padded_vocab_size


def test_${p}_block_keeps_shape(${p}_config):
    block = ${P}Block(${p}_config)
    x = torch.randn(2, 8, ${p}_config.n_embd)
    cos = torch.ones(8, ${p}_config.head_dim)
    sin = torch.zeros(8, ${p}_config.head_dim)
    assert block(x, cos, sin).shape == x.shape


def test_${p}_optimizer_groups_split_decay(${p}_config):
    model = ${P}Model(${p}_config)
    decay, no_decay = model.optimizer_groups(weight_decay=0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    counted = sum(p.numel() for group in (decay, no_decay) for p in group["params"])
    assert counted == sum(p.numel() for p in model.parameters() if p.requires_grad)


@pytest.mark.parametrize("name", sorted(${PU}_PRESETS))
def test_${p}_presets_are_consistent(name):
    config = ${P}Config.from_name(name)
    assert config.n_embd % config.n_head == 0
    assert config.padded_vocab_size % config.padding_multiple == 0


def test_${p}_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        ${P}Config.from_name("does-not-exist")


def test_${p}_config_round_trips(${p}_config):
    assert ${P}Config(**${p}_config.to_dict()) == ${p}_config


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_${p}_runs_in_bf16(${p}_config):
    model = ${P}Model(${p}_config).cuda().to(torch.bfloat16)
    idx = torch.randint(0, ${p}_config.vocab_size, (2, 16), device="cuda")
    logits, _ = model(idx)
    assert logits.dtype == torch.bfloat16
"""


def model_tests(rng: random.Random, P: str) -> str:
    """Unit tests of the tower ``P`` (its classes must be importable in the file)."""
    return fill(_TESTS, P=P, p=P.lower(), PU=P.upper(), steps=rng.choice([8, 12, 20]))
