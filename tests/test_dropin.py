"""compat.install(): the old names at their old homes, driven by the registry, undone exactly.

Tests that touch Lightning's strategy registries or FairScale run in a fresh interpreter,
so that what other tests imported (compat.strategies registers the removed strategy
strings when imported) cannot make them pass or fail.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import codemods.registry
import compat
from codemods.registry import ChangeKind, Example, FixSafety, Framework, Registry, Rule
from compat import FSDPDeprecationWarning
from tests.checkout_env import checkout_env

ROOT = Path(__file__).resolve().parents[1]
#: torch 2.0 has ``_FSDPPolicy`` itself (2.1 renamed it): read before anything installs.
TORCH_OWN_FSDP_POLICY = "_FSDPPolicy" in vars(
    importlib.import_module("torch.distributed.fsdp.wrap")
)


@pytest.fixture
def installed():
    compat.install()
    yield
    compat.uninstall()


_GLOO_CONNECTED = re.compile(r"\[Gloo\] Rank \d+ is connected to \d+ peer ranks\. ")


def fresh_python(code: str, path: Path | None = None) -> str:
    """Run ``code`` in a new interpreter that imports this checkout; return its stdout.

    The connection lines torch 2.9's gloo writes to stdout are left out.

    Args:
        code: The program.
        path: A folder put on ``PYTHONPATH`` after the checkout.
    """
    # The programs are written for the CPU (gloo, CPU models): no GPU visible to them.
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in (ROOT, path) if p)
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # torch 2.9's gloo prints each new process group's connections to stdout from C++;
    # that line is torch's, not the program's output.
    return "".join(
        line for line in run.stdout.splitlines(keepends=True) if not _GLOO_CONNECTED.match(line)
    )


def _codes(caught) -> set[str]:
    return {
        str(w.message).rsplit("[", 1)[1].rstrip("]")
        for w in caught
        if issubclass(w.category, FSDPDeprecationWarning)
    }


def test_removed_torch_names_are_back_while_installed(installed):
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP101\]") as caught:
        from torch.distributed.fsdp.wrap import default_auto_wrap_policy
    assert {w.filename for w in caught} == {__file__}
    import torch.distributed.fsdp.wrap as torch_wrap

    from tests.models import Block

    block = Block()
    # torch 1.11's signature: the numel third, the threshold as min_num_params.
    assert default_auto_wrap_policy(block, False, 544, min_num_params=500) is True
    assert default_auto_wrap_policy(block, False, 544, 600) is False
    # torch 2.0 has its own _FSDPPolicy (2.1 renamed it): the drop-in leaves it there
    owner = "torch.distributed.fsdp.wrap" if TORCH_OWN_FSDP_POLICY else "compat.fsdp.wrap"
    assert torch_wrap._FSDPPolicy.__module__ == owner


def test_uninstall_takes_them_away_again():
    compat.install()
    compat.uninstall()
    with pytest.raises(ImportError, match="default_auto_wrap_policy"):
        from torch.distributed.fsdp.wrap import default_auto_wrap_policy  # noqa: F401
    import torch.distributed.fsdp.wrap as torch_wrap

    assert hasattr(torch_wrap, "_FSDPPolicy") is TORCH_OWN_FSDP_POLICY


def test_install_is_idempotent(installed):
    finders = [f for f in sys.meta_path if type(f).__name__ == "DropInFinder"]
    compat.install()
    assert [f for f in sys.meta_path if type(f).__name__ == "DropInFinder"] == finders
    assert len(finders) == 1 and compat.is_installed()


def _rule(code: str, old: str, new: str) -> Rule:
    return Rule(
        code=code,
        name="a-test-rename",
        framework=Framework.TORCH,
        kind=ChangeKind.SYMBOL_RENAME,
        old=(old,),
        new=new,
        message=f"`{old}` is now `{new}`",
        why="A rename for this test.",
        example=Example("", ""),
        fix=FixSafety.SAFE,
    )


@pytest.fixture
def with_rules(monkeypatch):
    def add(*rules: Rule) -> None:
        registry = codemods.registry.REGISTRY
        extended = Registry(registry.rules + rules, registry.capabilities)
        monkeypatch.setattr(codemods.registry, "REGISTRY", extended)

    yield add
    compat.uninstall()


def test_a_new_rename_rule_is_installed_without_new_code(with_rules):
    with_rules(
        _rule(
            "FSDP198",
            "torch.distributed.fsdp.wrap.size_policy_of_old",
            "torch.distributed.fsdp.wrap.size_based_auto_wrap_policy",
        )
    )
    compat.install()
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP198\]") as caught:
        from torch.distributed.fsdp.wrap import size_policy_of_old
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    assert size_policy_of_old is size_based_auto_wrap_policy
    assert {w.filename for w in caught} == {__file__}
    assert any(r.where.endswith(".size_policy_of_old") for r in compat.installed())


def test_a_removed_module_comes_back_as_its_successor(with_rules):
    with_rules(_rule("FSDP197", "torch.distributed._fsdp_of_old", "torch.distributed.fsdp"))
    compat.install()
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP197\]"):
        import torch.distributed._fsdp_of_old as old
    import torch.distributed.fsdp as new

    assert old.FullyShardedDataParallel is new.FullyShardedDataParallel
    from torch.distributed._fsdp_of_old import ShardingStrategy

    assert ShardingStrategy is new.ShardingStrategy
    compat.uninstall()
    assert "torch.distributed._fsdp_of_old" not in sys.modules
    with pytest.raises(ImportError):
        import torch.distributed._fsdp_of_old  # noqa: F401


def test_precision_plugins_are_installed_from_the_registry(installed):
    """Lightning 1.9's FSDP precision plugins come back where FSDP211 lists them."""
    pytest.importorskip("pytorch_lightning")
    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP211\]") as caught:
        from pytorch_lightning.plugins.precision.fsdp_native_native_amp import (
            FullyShardedNativeNativeMixedPrecisionPlugin as Plugin,
        )

        plugin = Plugin(precision="bf16", device="cuda")  # Lightning 1.9's arguments
    from pytorch_lightning.plugins.precision import FSDPPrecision

    assert isinstance(plugin, FSDPPrecision) and plugin.precision == "bf16-mixed"
    assert {w.filename for w in caught} == {__file__}
    from lightning.pytorch.plugins.precision import FSDPPrecision as UnifiedFSDPPrecision
    from lightning.pytorch.plugins.precision import FullyShardedNativeNativeMixedPrecisionPlugin

    unified = FullyShardedNativeNativeMixedPrecisionPlugin  # each flavour on its own base
    assert issubclass(unified, UnifiedFSDPPrecision) and not issubclass(unified, FSDPPrecision)
    with (
        pytest.raises(ValueError, match="takes precision 16 or 'bf16'"),
        pytest.warns(FSDPDeprecationWarning),
    ):
        Plugin(precision=32, device="cpu")


def test_a_name_the_installed_torch_has_is_never_replaced(with_rules):
    import torch.distributed.fsdp.wrap as torch_wrap

    own = torch_wrap.lambda_auto_wrap_policy  # every torch of the matrix has it
    # A made-up rule claiming torch's lambda_auto_wrap_policy is an old name.
    with_rules(
        _rule(
            "FSDP196",
            "torch.distributed.fsdp.wrap.lambda_auto_wrap_policy",
            "torch.distributed.fsdp.wrap.CustomPolicy",
        )
    )
    compat.install()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch_wrap.lambda_auto_wrap_policy is own
    assert not any(r.where.endswith(".lambda_auto_wrap_policy") for r in compat.installed())


def test_fsdp_init_is_patched_and_restored():
    from torch.distributed.fsdp import FullyShardedDataParallel

    original = FullyShardedDataParallel.__dict__["__init__"]
    compat.install()
    try:
        patched = FullyShardedDataParallel.__dict__["__init__"]
        assert patched is not original and patched.__wrapped__ is original
        import inspect

        assert inspect.signature(patched) == inspect.signature(original)
    finally:
        compat.uninstall()
    assert FullyShardedDataParallel.__dict__["__init__"] is original


def test_subprocess_environment_is_restored(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.delenv(compat.dropin.ENV_FLAG, raising=False)
    compat.install(subprocesses=True)
    try:
        assert os.environ[compat.dropin.ENV_FLAG] == "1"
        assert os.environ["PYTHONPATH"].split(os.pathsep) == [compat.dropin.BOOT_DIR, "/somewhere"]
    finally:
        compat.uninstall()
    assert os.environ["PYTHONPATH"] == "/somewhere" and compat.dropin.ENV_FLAG not in os.environ
    # A child installing for its own children does not put the folder there twice.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([compat.dropin.BOOT_DIR, "/somewhere"]))
    compat.install(subprocesses=True)
    try:
        assert os.environ["PYTHONPATH"].split(os.pathsep) == [compat.dropin.BOOT_DIR, "/somewhere"]
    finally:
        compat.uninstall()


# In a fresh interpreter ---------------------------------------------------------------------

_SNAPSHOT = """
import sys, importlib

ROOTS = ("torch", "lightning", "pytorch_lightning", "lightning_fabric", "fairscale")

def registries():
    import lightning.pytorch.strategies as a, pytorch_lightning.strategies as b
    import lightning.fabric.strategies as c, lightning_fabric.strategies as d
    return {
        name: dict(registry)
        for name, registry in [("lightning.pytorch", a.StrategyRegistry),
            ("pytorch_lightning", b.StrategyRegistry), ("lightning.fabric", c.STRATEGY_REGISTRY),
            ("lightning_fabric", d.STRATEGY_REGISTRY)]
    }

def snapshot():
    from torch.distributed.fsdp import FullyShardedDataParallel
    modules = {n: m for n, m in sys.modules.items() if n.split(".")[0] in ROOTS}
    return {
        "modules": set(modules),
        "attributes": {
            n: {k: v for k, v in vars(m).items() if k != "__warningregistry__"}
            for n, m in modules.items()
        },
        "fsdp": dict(vars(FullyShardedDataParallel)),
        "registries": registries(),
        "meta_path": list(sys.meta_path),
    }

def differences(before, after):
    found = []
    if before["modules"] != after["modules"]:
        found.append(("modules", sorted(before["modules"] ^ after["modules"])))
    for name, attributes in before["attributes"].items():
        now = after["attributes"].get(name, {})
        changed = sorted(k for k in attributes.keys() | now.keys()
                         if attributes.get(k, KeyError) is not now.get(k, KeyError))
        if changed:
            found.append((name, changed))
    if before["fsdp"] != after["fsdp"]:
        found.append(("fsdp", "changed"))
    # Packages imported on the way (six, a vendored importer) may add finders of their
    # own; compat's must be gone and nothing of before may be lost.
    added = [f for f in after["meta_path"] if f not in before["meta_path"]]
    if any(type(f).__module__.startswith("compat") for f in added) or any(
        f not in after["meta_path"] for f in before["meta_path"]
    ):
        found.append(("meta_path", "changed"))
    for name, registry in before["registries"].items():
        if registry != after["registries"][name]:
            found.append((name, sorted(registry.keys() ^ after["registries"][name].keys())))
    return found
"""


@pytest.mark.slow
def test_install_and_uninstall_leave_torch_and_lightning_as_they_were():
    code = (
        _SNAPSHOT
        + """
import warnings
warnings.simplefilter("ignore")
import lightning, lightning.fabric, pytorch_lightning, lightning_fabric, torch
import torch.distributed.fsdp, torch.distributed.fsdp.wrap
try:
    import torch.distributed._composable.fsdp  # FSDP2's first home: torch 2.4 to 2.5
except ModuleNotFoundError:  # torch 2.2
    pass
import torch.distributed.fsdp.sharded_grad_scaler  # what the Trainer below imports
try:  # what compat.installed() reads to say where a DTensor name's new home is
    import torch.distributed.tensor
except ModuleNotFoundError:  # before torch 2.0
    pass
import torch.distributed as dist
# What a process group leaves behind in torch (the program's doing, not install's).
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
dist.destroy_process_group()
before = snapshot()
import compat
compat.install(subprocesses=True)
compat.install()

# Use every kind of thing it installs.
from torch.distributed.fsdp.wrap import default_auto_wrap_policy, _FSDPPolicy
from lightning.pytorch.strategies import DDPFullyShardedStrategy
from pytorch_lightning.strategies.fully_sharded_native import DDPFullyShardedNativeStrategy
from pytorch_lightning.plugins import DDPFullyShardedPlugin
from pytorch_lightning.plugins.training_type.fully_sharded import DDPFullyShardedPlugin
import fairscale.nn
from fairscale.nn.wrap import auto_wrap, enable_wrap, wrap
from lightning.pytorch import Trainer
trainer = Trainer(strategy="fsdp_native", accelerator="cpu", devices=1, logger=False)
from lightning.fabric import Fabric
fabric = Fabric(strategy="ddp_fully_sharded", accelerator="cpu", devices=1)
from torch.distributed.fsdp import FullyShardedDataParallel
from tests.models import Block, make_model
from tests.distributed import fsdp1_runs_here
if fsdp1_runs_here():  # torch 2.2+: before, FSDP1 runs on CUDA only
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    sharded = FullyShardedDataParallel(make_model(), auto_wrap_policy={Block}, cpu_offload=False)
    dist.destroy_process_group()
assert len(compat.installed()) > 20
used = snapshot()
assert differences(before, used), "install changed nothing?"

compat.uninstall()
compat.uninstall()
after = snapshot()
print(differences(before, after))
"""
    )
    assert fresh_python(code).strip() == "[]"


@pytest.mark.slow
def test_lightning_names_and_strategy_strings_in_both_packages():
    code = """
import json, warnings
import compat
compat.install()
from lightning.pytorch.strategies import FSDPStrategy as LFSDP
from pytorch_lightning.strategies import FSDPStrategy as PFSDP
from lightning.pytorch.strategies import DDPFullyShardedStrategy as L1
from lightning.pytorch.strategies import DDPFullyShardedNativeStrategy as L2
from pytorch_lightning.strategies import DDPFullyShardedStrategy as P1
from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy as P2
from pytorch_lightning.strategies.fully_sharded import DDPFullyShardedStrategy as P3
from pytorch_lightning.plugins import DDPFullyShardedPlugin as P4
import lightning.pytorch as L, pytorch_lightning as pl
out = {"bases": [issubclass(c, LFSDP) for c in (L1, L2)]}
out["bases"] += [issubclass(c, PFSDP) for c in (P1, P2, P3, P4)]
options = dict(accelerator="cpu", devices=1, logger=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    a = L.Trainer(strategy="fsdp_native", **options)
    b = pl.Trainer(strategy="fsdp_native_full_shard_offload", **options)
    c = pl.Trainer(strategy="ddp_fully_sharded", **options)
out["types"] = [isinstance(a.strategy, LFSDP)]
out["types"] += [isinstance(b.strategy, PFSDP), isinstance(c.strategy, PFSDP)]
out["offload"] = bool(b.strategy.cpu_offload and b.strategy.cpu_offload.offload_params)
out["warned"] = sorted(
    {(w.filename, str(w.message)[-9:]) for w in caught if "FSDP2" in str(w.message)}
)
compat.uninstall()
try:
    pl.Trainer(strategy="fsdp_native", **options)
except ValueError as exc:
    out["after"] = "invalid strategy name" in str(exc)
try:
    from pytorch_lightning.strategies import DDPFullyShardedStrategy
except ImportError:
    out["after_import"] = "ImportError"
print(json.dumps(out))
"""
    out = json.loads(fresh_python(code))
    assert out["bases"] == [True] * 6
    assert out["types"] == [True, True, True] and out["offload"] is True
    assert out["warned"] == [["<string>", "[FSDP204]"], ["<string>", "[FSDP205]"]]
    assert out["after"] is True and out["after_import"] == "ImportError"


@pytest.mark.slow
def test_fairscale_imports_find_compat_where_fairscale_is_missing():
    code = """
import json, compat
compat.install()
import fairscale.nn
from fairscale.nn.wrap import auto_wrap, enable_wrap, wrap, default_auto_wrap_policy
from fairscale.nn.data_parallel import FullyShardedDataParallel
from fairscale.nn.checkpoint.checkpoint_activations import checkpoint_wrapper
import compat.fairscale as cf
out = {
    "same": [auto_wrap is cf.auto_wrap, enable_wrap is cf.enable_wrap, wrap is cf.wrap,
             FullyShardedDataParallel is cf.FullyShardedDataParallel,
             fairscale.nn.FullyShardedDataParallel is cf.FullyShardedDataParallel,
             checkpoint_wrapper is cf.checkpoint_wrapper],
}
from fairscale.optim import OSS
from fairscale.optim.grad_scaler import ShardedGradScaler
out["zero"] = [OSS is cf.OSS, fairscale.nn.ShardedDataParallel is cf.ShardedDataParallel,
               ShardedGradScaler is cf.ShardedGradScaler]
try:
    from fairscale.experimental.nn.offload import OffloadModel
except ImportError as exc:
    out["other"] = type(exc).__name__
try:
    fairscale.nn.Pipe
except AttributeError as exc:
    out["missing"] = str(exc)
compat.uninstall()
try:
    import fairscale.nn
except ImportError:
    out["after"] = "ImportError"
print(json.dumps(out))
"""
    out = json.loads(fresh_python(code))
    assert out["same"] == [True] * 6
    assert out["zero"] == [True] * 3
    assert out["other"] == "ModuleNotFoundError"
    assert out["missing"] == "module 'fairscale.nn' has no attribute 'Pipe'"
    assert out["after"] == "ImportError"


@pytest.mark.slow
def test_an_installed_fairscale_is_left_alone(tmp_path):
    package = tmp_path / "fairscale" / "nn"
    package.mkdir(parents=True)
    (tmp_path / "fairscale" / "__init__.py").write_text("REAL = True\n")
    (package / "__init__.py").write_text("def auto_wrap(module):\n    return 'real'\n")
    code = """
import compat
compat.install()
import fairscale, fairscale.nn
print(fairscale.REAL, fairscale.nn.auto_wrap(None), type(fairscale).__name__)
print(any("fairscale" in r.where for r in compat.installed()))
"""
    assert fresh_python(code, tmp_path).split() == [
        "True",
        "real",
        "module",
        "False",
    ]


@pytest.mark.slow
def test_list_shows_what_is_installed_with_its_rule():
    run = subprocess.run(
        [sys.executable, "-m", "compat", "--list"],
        cwd=ROOT,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    text = run.stdout
    for code, where in [
        ("FSDP101", "torch.distributed.fsdp.wrap.default_auto_wrap_policy"),
        *[("FSDP105", "torch.distributed.fsdp.wrap._FSDPPolicy")] * (not TORCH_OWN_FSDP_POLICY),
        ("FSDP202", "pytorch_lightning.strategies.DDPFullyShardedStrategy"),
        ("FSDP203", "lightning.pytorch.strategies.DDPFullyShardedNativeStrategy"),
        ("FSDP201", "pytorch_lightning.plugins.DDPFullyShardedPlugin"),
        ("FSDP204", 'lightning.pytorch.strategies strategy "fsdp_native"'),
        ("FSDP205", 'lightning_fabric.strategies strategy "ddp_fully_sharded"'),
        ("FSDP301", "fairscale.nn.FullyShardedDataParallel"),
        (
            "FSDP102,FSDP109,FSDP110,FSDP114",
            "torch.distributed.fsdp.FullyShardedDataParallel.__init__",
        ),
    ]:
        assert any(
            line.split() == [code, where]
            or line.split()[:2] == [code, where.split()[0]]
            and where in line
            for line in text.splitlines()
        ), (code, where, text)
    # Names the installed torch still has are not listed.
    assert "ModuleWrapPolicy" not in text and "size_based_auto_wrap_policy\n" not in text
