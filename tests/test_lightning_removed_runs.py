"""FSDP215-FSDP223 against the installed Lightning 2.x: the old forms fail, the fixes run.

Each registry example is executed as written: what the rule reports must fail on
Lightning 2.x the way its message says, and what a fix writes must build (the AMP
plugin's values, FSDP220, in a call and in a subclass; ``amp_backend="native"``
dropped from the Trainer, FSDP218).
"""

from __future__ import annotations

import warnings

import pytest

from codemods.registry import REGISTRY

lightning = pytest.importorskip("lightning")
if int(lightning.__version__.split(".")[0]) < 2:
    pytest.skip("these are Lightning 2.0's removals", allow_module_level=True)


def _run(source: str) -> dict:
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "<example>", "exec"), namespace)
    return namespace


def _with_instance(source: str) -> str:
    """A subclass example, with the subclass built (its ``super().__init__`` runs)."""
    built = "plugin = HalfPrecisionAMP()\n"
    return source + built if "class HalfPrecisionAMP" in source else source


_PRECISION = REGISTRY["FSDP220"]


@pytest.mark.parametrize(
    "example", [_PRECISION.example, *_PRECISION.cases], ids=lambda e: e.before.splitlines()[-1]
)
def test_the_amp_plugin_refuses_the_old_value_and_takes_the_fixed_one(example):
    with pytest.raises(ValueError, match="must be '16-mixed' or 'bf16-mixed'"):
        _run(_with_instance(example.before))
    built = _run(_with_instance(example.after))
    # pytorch_lightning and lightning.pytorch each have their own MixedPrecision class
    plugins = [
        v for v in built.values() if any(c.__name__ == "MixedPrecision" for c in type(v).__mro__)
    ]
    trainers = [v for v in built.values() if type(v).__name__ == "Trainer"]
    assert plugins or trainers
    for plugin in plugins:
        assert plugin.precision in ("16-mixed", "bf16-mixed")


_NATIVE = REGISTRY["FSDP222"]


@pytest.mark.parametrize(
    "example", [_NATIVE.example, _NATIVE.cases[0]], ids=lambda e: e.before.splitlines()[-1]
)
def test_the_native_amp_plugin_is_gone_and_its_fix_builds(example):
    setup = "import torch\n"
    with pytest.raises((ImportError, AttributeError), match="NativeMixedPrecisionPlugin"):
        _run(setup + example.before.replace('"cuda"', '"cpu"').replace("'cuda'", "'cpu'"))
    built = _run(setup + example.after.replace('"cuda"', '"cpu"').replace("'cuda'", "'cpu'"))
    (plugin,) = [v for v in built.values() if type(v).__name__ == "MixedPrecisionPlugin"]
    assert plugin.precision in ("16-mixed", "bf16-mixed")


def test_the_trainer_refuses_amp_backend_and_takes_the_fixed_call():
    example = REGISTRY["FSDP218"].example
    with pytest.raises(TypeError, match="amp_backend"):
        _run(example.before)
    # On the CPU: the example's two devices under the automatic accelerator are two GPUs
    # where there is one (the GPU leg's machine), which Lightning refuses for that reason.
    cpu_after = example.after.replace("devices=2)", 'devices=2, accelerator="cpu")')
    assert cpu_after != example.after
    assert type(_run(cpu_after)["trainer"]).__name__ == "Trainer"


def test_the_trainer_has_no_amp_backend_to_read():
    """FSDP223's script case fails on Lightning 2.x; `trainer.precision` is there to read."""
    cpu = 'accelerator="cpu", devices=1, logger=False, enable_progress_bar=False'
    source = REGISTRY["FSDP223"].cases[1].before.replace("precision=16", cpu)
    with pytest.raises(AttributeError, match="amp_backend"):
        _run(source)
    built = _run(source.partition("if ")[0])
    assert built["trainer"].precision == "32-true"


@pytest.mark.parametrize(
    ("code", "error"), [("FSDP215", ValueError), ("FSDP216", ImportError), ("FSDP219", ImportError)]
)
def test_the_removed_strategies_fail_on_lightning_2(code, error):
    source = REGISTRY[code].example.before.replace("pytorch_lightning", "lightning.pytorch")
    if "Trainer(" in source and "import Trainer" not in source:
        source = "from lightning.pytorch import Trainer\n" + source
    source = source.replace('accelerator="gpu", devices=4', 'accelerator="cpu", devices=1')
    with pytest.raises(error):
        _run(source)


def test_fabric_save_fails_in_the_old_order_and_saves_in_the_fixed_one(tmp_path, monkeypatch):
    import torch

    rule = REGISTRY["FSDP221"]
    monkeypatch.chdir(tmp_path)
    setup = "import torch\nmodel = torch.nn.Linear(2, 2)\nstep = 3\n"
    cpu = ("Fabric()", 'Fabric(accelerator="cpu", devices=1)')
    # Lightning 2.6.6 reads the path string as the state: 'str' object has no attribute 'items'
    with pytest.raises(AttributeError, match="'str' object has no attribute 'items'"):
        _run(setup + rule.example.before.replace(*cpu))
    assert not (tmp_path / "checkpoint.ckpt").exists()
    _run(setup + rule.example.after.replace(*cpu))
    saved = torch.load(tmp_path / "checkpoint.ckpt", weights_only=False)
    assert saved["step"] == 3 and set(saved["model"]) == {"weight", "bias"}


@pytest.mark.parametrize(
    "example", [_PRECISION.example, *_PRECISION.cases], ids=lambda e: e.before.splitlines()[-1]
)
def test_the_drop_in_serves_the_old_values_and_uninstall_takes_them_back(example):
    import compat
    from compat import FSDPDeprecationWarning

    compat.install()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            namespace: dict = {}
            exec(compile(_with_instance(example.before), "<example>", "exec"), namespace)
        plugins = [
            v
            for v in namespace.values()
            if any(c.__name__ == "MixedPrecision" for c in type(v).__mro__)
        ]
        assert plugins or "Trainer" in example.before
        assert all(p.precision in ("16-mixed", "bf16-mixed") for p in plugins)
        codes = {
            str(w.message).rsplit("[", 1)[1]
            for w in caught
            if issubclass(w.category, FSDPDeprecationWarning)
        }
        assert codes == {"FSDP220]"}
    finally:
        compat.uninstall()
    with pytest.raises(ValueError, match="must be '16-mixed' or 'bf16-mixed'"):
        _run(_with_instance(example.before))
