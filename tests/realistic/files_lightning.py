"""Compose Lightning modules, Lightning test modules, model tests and Fabric scripts."""

from __future__ import annotations

import random

from tests.realistic import (
    fabric_parts,
    lightning_parts,
    lightning_tests,
    modeling,
    plain_tests,
    utilities,
)
from tests.realistic.files import LINES, Plan, Spec, grow, import_model, new_file
from tests.realistic.imports import LIGHTNING_1X, LIGHTNING_2X
from tests.realistic.source import SourceFile, fill

PLUGINS = {
    "native_amp": (
        "from pytorch_lightning.plugins.precision.fully_sharded_native_amp import "
        "FullyShardedNativeMixedPrecisionPlugin",
        '\n        plugins=[FullyShardedNativeMixedPrecisionPlugin(precision=16, device="cuda")],',
    ),
    "native_native_amp": (
        "from pytorch_lightning.plugins.precision.fsdp_native_native_amp import "
        "FullyShardedNativeNativeMixedPrecisionPlugin",
        '\n        plugins=[FullyShardedNativeNativeMixedPrecisionPlugin("16", "cuda")],',
    ),
}


def _model(f: SourceFile, spec: Spec, plan: Plan, rng: random.Random) -> str:
    """Bind the tower the file uses (imported, or defined in the file); return its prefix."""
    P = spec.options["P"]
    if spec.options.get("inline"):
        f.add(*modeling.transformer(rng, P))
    else:
        import_model(f, plan.find(spec.options["model"]), P, ("Block", "Config", "Model"))
    return P


def _lightning_names(f: SourceFile, flavor: str, dotted: bool) -> dict:
    f.pin(*(LIGHTNING_1X if flavor == "pl1" else LIGHTNING_2X).values())
    if flavor == "L":
        prefix = "L."
    else:
        prefix = "pl." if dotted else ""
    return dict(
        LM=f"{prefix}LightningModule", DM=f"{prefix}LightningDataModule", Trainer=f"{prefix}Trainer"
    )


def lit_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """A Lightning module, its data module and a CLI that picks an FSDP strategy."""
    f = new_file(rng)
    options = spec.options
    strategy = options["strategy"]
    dotted = strategy == "native_chain" or rng.random() < 0.4
    names = _lightning_names(f, options["flavor"], dotted)
    if strategy == "fairscale_plugin":
        f.pin("from pytorch_lightning.plugins import DDPFullyShardedPlugin")
    if options.get("compat"):
        f.pin("from compat.strategies import DDPFullyShardedNativeStrategy")
    extra = ""
    if options.get("plugin"):
        line, extra = PLUGINS[options["plugin"]]
        f.pin(line)
    P = _model(f, spec, plan, rng)
    f.add(utilities.dataset(rng))
    ctx = dict(
        names,
        P=P,
        Model=f"{P}Model",
        Config=f"{P}Config",
        Block=f"{P}Block",
        hook=options.get("hook", "configure_sharded_model"),
        precision=options["precision"],
        indirect=options.get("indirect", False),
        trainer_extra=extra,
    )
    late = lightning_parts.lightning_module_parts(rng, ctx, strategy)
    reserve = sum(c.count("\n") + 3 for c in late)
    grow(f, rng, "lit", utilities.helpers(rng, 13, exclude=("TokenDataset",)), reserve)
    f.add(*late)
    return f.render(f"Lightning module and command line for {P}Model.")


def _model_tests(f: SourceFile, plan: Plan, rng: random.Random, kind: str, models: list[str]):
    """Tests of the towers of ``models``, then of other models until the file is big enough."""
    low, high = LINES[kind]
    target = rng.randint(low + 40, high - 80)
    others = [m.path for m in plan.models() if m.path not in models]
    rng.shuffle(others)
    for index, path in enumerate(models + others):
        if index >= len(models) and f.line_count >= target:
            break
        model = plan.find(path)
        for P in model.options["towers"]:
            import_model(f, model, P, ("Block", "Config", "Model"))
            f.pin(f"from {model.module} import {P.upper()}_PRESETS")
            f.add(plain_tests.model_tests(rng, P))


def lit_test_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """Tests of the FSDP strategies, in the style of Lightning 1.x's own suite."""
    f = new_file(rng)
    options = spec.options
    _lightning_names(f, options["flavor"], dotted=False)
    f.pin("from torch.distributed.fsdp.wrap import wrap")
    ctx = dict(P=options["P"], FSDP="FullyShardedDataParallel")
    f.add(*lightning_tests.test_parts(rng, ctx, set(options["shapes"])))
    _model_tests(f, plan, rng, "lit_test", options.get("models", []))
    return f.render("", future=rng.random() < 0.5)


FSDP_TEST = """
def test_${p}_policy_wraps_blocks_only():
    policy = ${p}_fsdp_policy()
    block = ${P}Block(${P}Config(n_layer=1, n_head=2, n_embd=32))
    # torch 1.12 passes the parameter count as unwrapped_params
    assert policy(module=block, recurse=False, unwrapped_params=10)
    assert policy(module=torch.nn.Linear(2, 2), recurse=True, unwrapped_params=4)
"""


def model_test_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """Unit tests of the model modules (one may test the FSDP policy function)."""
    f = new_file(rng)
    _model_tests(f, plan, rng, "model_test", spec.options["models"])
    for path in spec.options["models"]:
        model = plan.find(path)
        if "policy_function" in model.options["fsdp"]:
            P = model.options["towers"][0]
            f.pin(f"from {model.module} import {P.lower()}_fsdp_policy")
            f.add(fill(FSDP_TEST, P=P, p=P.lower()))
    return f.render("", future=rng.random() < 0.5)


def fabric_file(spec: Spec, plan: Plan, rng: random.Random) -> str:
    """A LightningLite script, or a Fabric script through ``import lightning as L``."""
    f = new_file(rng)
    if spec.options["style"] == "lite":
        f.pin(*fabric_parts.LITE_PINS)
    P = _model(f, spec, plan, rng)
    f.add(utilities.dataset(rng))
    ctx = dict(P=P, Model=f"{P}Model", Config=f"{P}Config", Block=f"{P}Block")
    build = fabric_parts.lite if spec.options["style"] == "lite" else fabric_parts.fabric
    late = [build(rng, ctx)]
    reserve = sum(c.count("\n") + 3 for c in late)
    grow(f, rng, "fabric", utilities.helpers(rng, 13, exclude=("TokenDataset",)), reserve)
    f.add(*late)
    return f.render(f"Train {P}Model with Lightning's lightweight trainer.")
