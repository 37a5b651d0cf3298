"""Unmodified legacy scripts train under ``python -m compat`` as their migrations do natively.

The scripts in ``tests/fixtures/dropin/`` are written as users wrote them for torch
1.12/1.13, FairScale and Lightning 1.9 (``legacy.py``). Each runs on 2 gloo ranks,
as ``python -m compat legacy.py`` (the script or Lightning starts the second rank,
which must inherit the drop-in) or as ``torchrun --nproc-per-node 2 -m compat
legacy.py`` (or ``torchrun ... --no-python fsdp-compat-run legacy.py``, the console
script): each way of launching with a plain script and with Lightning. Each rank
saves what it built and how it trained (``tests.models.summary``: FSDP units,
checkpointed modules, parameters after the steps, losses); the run must equal the
migrated script (``migrated.py``) run natively, and must warn with exactly the rules
the script uses, at its own lines.

Lightning refuses ``FSDPStrategy`` on CPU, so a migrated Lightning script cannot run
here; its legacy runs are held against the torch FSDP model that the migrated
strategy builds (the same policy and sharding), trained on the batches Lightning's
distributed sampler deals each rank.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from compat.features import current
from tests import distributed
from tests.console_scripts import console_script
from tests.models import make_model, summary
from tests.scratch_projects import CURRENT_RELEASES

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

if not current().fsdp1_on_cpu and not torch.cuda.is_available():
    pytest.skip("this torch runs FSDP1 only on CUDA", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "fixtures" / "dropin"
WARNING = re.compile(r"legacy\.py:(\d+): .*\[(FSDP\d+)\]$", re.MULTILINE)
#: torch's background threads sometimes abort at interpreter teardown, after a rank's work
#: is done (tests/distributed.py steps around it with ``os._exit``; these scripts are
#: a user's, unmodified): seen once in a full CI run, torch 2.13, gloo.
TEARDOWN_ABORT = "terminate called without an active exception"
#: A rank killed by a signal, as each launcher says it: a native thread of torch's
#: crashes a rank on gloo now and then (about 0.4% of runs here, torch 2.13), which
#: tests/distributed.py and the port checker's launcher run once more; so do these.
KILLED = re.compile(
    r"exitcode\s*:\s*-\d+"  # torchrun's report of a rank
    r"|terminated with signal SIG\w+"  # torch's spawn, a script's second rank
)


def _torchrun() -> str:
    """The ``torchrun`` of the Python running the tests (its environment's ``bin``)."""
    beside = Path(sys.executable).with_name("torchrun")
    return str(beside) if beside.exists() else shutil.which("torchrun") or "torchrun"


def launch(how: str, script: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ``script`` on 2 ranks: under ``python -m compat``, or ``torchrun`` + compat.

    A run whose process or rank a signal killed runs once more, with a warning that
    holds its output; a second such run, or any other failure, fails the test.
    """
    for attempt in range(2):
        run = _launch_once(how, script, out, *args)
        finished = all((out / f"rank{rank}.pt").exists() for rank in range(2))
        if run.returncode == 0 or (finished and TEARDOWN_ABORT in run.stderr):
            return run  # (an abort at teardown: every rank saved what the tests compare)
        killed = run.returncode < 0 or KILLED.search(run.stderr)
        if attempt or not killed:
            break
        warnings.warn(
            f"killed by a signal (exit status {run.returncode}); run once more:\n"
            + run.stderr[-3000:],
            RuntimeWarning,
            stacklevel=2,
        )
        shutil.rmtree(out)
    raise AssertionError(run.stdout[-3000:] + run.stderr[-6000:])


def _launch_once(how: str, script: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    port = str(distributed.free_port())
    out.mkdir(parents=True, exist_ok=True)
    torchrun = [_torchrun(), "--nproc-per-node", "2", "--master-port", port]
    prefix = {
        "compat": [sys.executable, "-m", "compat"],
        "torchrun": [*torchrun, "-m", "compat"],
        "torchrun-console": [
            *torchrun,
            "--no-python",
            str(console_script(out, "fsdp-compat-run")),
        ],
    }[how]
    environment = {**distributed.cpu_environment(), "PYTHONPATH": str(ROOT), "MASTER_PORT": port}
    environment.pop("FSDP_COMPAT_INSTALL", None)
    return subprocess.run(
        [*prefix, str(script), "--out", str(out), *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=420,
    )


def results(out: Path) -> list[dict]:
    return [torch.load(out / f"rank{rank}.pt", weights_only=False) for rank in range(2)]


def assert_same_training(got: list[dict], expected: list[dict]) -> None:
    for mine, theirs in zip(got, expected):
        assert mine["units"] == theirs["units"]
        assert mine["checkpointed"] == theirs["checkpointed"]
        assert mine["losses"] == pytest.approx(theirs["losses"], abs=1e-6)
        assert mine["state"].keys() == theirs["state"].keys()
        for name, value in theirs["state"].items():
            torch.testing.assert_close(mine["state"][name], value, atol=1e-6, rtol=0)


def warnings_of(run: subprocess.CompletedProcess) -> set[str]:
    """The rule codes the run warned with; each warning must point at the script itself."""
    warned = [line for line in run.stderr.splitlines() if re.search(r"\[FSDP\d+\]$", line)]
    assert warned and all(WARNING.search(line) for line in warned), warned
    return {code for _, code in WARNING.findall(run.stderr)}


# torch 1.12/1.13 and FairScale: legacy under compat == migrated, native ---------------------

TORCH_LIKE = {
    "torch_1_12": {"FSDP101", "FSDP102"},
    "fairscale": {"FSDP301", "FSDP302", "FSDP303", "FSDP304", "FSDP305", "FSDP306"},
}


@pytest.fixture(scope="module")
def native_runs(tmp_path_factory) -> dict[str, list[dict]]:
    return {
        name: results(_run_native(name, tmp_path_factory.mktemp(f"{name}-native")))
        for name in TORCH_LIKE
    }


def _run_native(name: str, out: Path) -> Path:
    """The migrated script's ``main`` on 2 gloo ranks, natively (no ``python -m compat``).

    The ranks come from the rank harness (``tests.distributed``), forked with torch
    imported: a launch of the script would import it in three fresh interpreters. Its
    ``__main__`` block, which only starts the ranks, is the legacy script's, run by
    every launch of :func:`test_legacy_script_trains_as_its_migration`.
    """
    out.mkdir(parents=True, exist_ok=True)
    script, port = str(SCRIPTS / name / "migrated.py"), distributed.free_port()
    warned = distributed.run(_native_rank, script, port, str(out), world_size=2, backend="gloo")
    assert all("FSDPDeprecationWarning" not in rank for rank in warned), warned
    return out


def _native_rank(rank: int, world_size: int, script: str, port: int, out: str) -> list[str]:
    """Run ``script`` as a module and its ``main(rank, world_size, out)``, as its
    ``__main__`` block does on each rank; the names of the warnings it issued.

    The harness's process group makes way for the one the script makes (on ``port``).
    """
    import runpy
    import warnings

    import torch.distributed as dist

    dist.destroy_process_group()
    os.environ["MASTER_PORT"] = str(port)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runpy.run_path(script)["main"](rank, world_size, out)
    return sorted({w.category.__name__ for w in caught})


# Each script and each way of launching runs once (a whole launch costs three
# interpreters that import torch): under ``python -m compat`` the script's own
# ``mp.spawn`` starts the ranks, which inherit the drop-in the same way whatever the
# script imports; under torchrun each rank runs ``-m compat`` itself.
@pytest.mark.parametrize(
    ("name", "how"),
    [("torch_1_12", "compat"), ("fairscale", "torchrun"), ("torch_1_12", "torchrun-console")],
    ids=["torch_1_12-compat", "fairscale-torchrun", "torch_1_12-torchrun-console"],
)
def test_legacy_script_trains_as_its_migration(name, how, native_runs, tmp_path):
    run = launch(how, SCRIPTS / name / "legacy.py", tmp_path)
    got = results(tmp_path)
    assert_same_training(got, native_runs[name])
    assert len(got[0]["units"]) > 2
    assert warnings_of(run) == TORCH_LIKE[name]


def test_the_torch_scripts_migration_is_the_codemods(tmp_path):
    from codemods.migrate import main

    legacy = tmp_path / "legacy.py"
    shutil.copy(SCRIPTS / "torch_1_12" / "legacy.py", legacy)
    (tmp_path / "pyproject.toml").write_text(CURRENT_RELEASES)  # moving to the current torch
    main([str(legacy)])  # exit code 1: it changed the file
    assert legacy.read_text() == (SCRIPTS / "torch_1_12" / "migrated.py").read_text()


def test_the_fairscale_script_needs_a_human_where_its_migration_was_by_hand(tmp_path, capsys):
    from codemods.migrate import main

    legacy = tmp_path / "legacy.py"
    shutil.copy(SCRIPTS / "fairscale" / "legacy.py", legacy)
    (tmp_path / "pyproject.toml").write_text(CURRENT_RELEASES)  # moving to the current torch
    main(["--unsafe-fixes", str(legacy)])
    left = set(re.findall(r" (FSDP\d+) ", capsys.readouterr().out))  # findings: stdout
    # FairScale's size policy and checkpoint_wrapper stay with FairScale's FSDP (FSDP305/306
    # move only together with it, and auto_wrap keeps it).
    assert left == {"FSDP301", "FSDP302", "FSDP303", "FSDP304", "FSDP305", "FSDP306"}


# Lightning 1.9 ------------------------------------------------------------------------------


def _native_lightning(rank: int, world_size: int, policy: bool) -> dict:
    """What the migrated strategy builds, trained on the batches the sampler deals ``rank``."""
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    from tests.models import batch

    kwargs = {"sharding_strategy": ShardingStrategy.FULL_SHARD, "device_id": torch.device("cpu")}
    if policy:
        kwargs["auto_wrap_policy"] = functools.partial(
            size_based_auto_wrap_policy, min_num_params=500
        )
    model = FullyShardedDataParallel(make_model(), **kwargs)
    data = [batch(r, step) for step in range(3) for r in range(world_size)]
    sampler = torch.utils.data.DistributedSampler(
        data, num_replicas=world_size, rank=rank, shuffle=True, seed=0
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for index in sampler:
        x, y = data[index]
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return summary(model, losses)


LIGHTNING = {"fairscale": (True, {"FSDP202"}), "native": (False, {"FSDP204"})}


@pytest.fixture(scope="module")
def native_lightning() -> dict[str, list[dict]]:
    """Each strategy's torch FSDP reference run, shared by both ways of launching."""
    pytest.importorskip("pytorch_lightning")
    return {
        strategy: distributed.run(_native_lightning, policy, backend="gloo")
        for strategy, (policy, _) in LIGHTNING.items()
    }


# Each strategy and each way of launching runs once: both strategies are compat's
# subclasses of Lightning's ``FSDPStrategy`` and start their ranks with its launcher, so
# the launch does not depend on the strategy (a whole launch costs three interpreters
# that import Lightning).
@pytest.mark.parametrize(
    ("strategy", "how"),
    [("native", "compat"), ("fairscale", "torchrun")],
    ids=["native-compat", "fairscale-torchrun"],
)
def test_lightning_1_9_script_trains_as_torch_fsdp(strategy, how, native_lightning, tmp_path):
    codes = LIGHTNING[strategy][1]
    run = launch(how, SCRIPTS / "lightning_1_9" / "legacy.py", tmp_path, "--strategy", strategy)
    assert_same_training(results(tmp_path), native_lightning[strategy])
    assert warnings_of(run) == codes


# A rank killed by a signal: the run goes once more ----------------------------------------

# Each process of the run kills itself with SIGSEGV while ``crashes`` (a count in a file
# beside the results) is above zero, taking one off; else it writes its rank's file.
CRASHING = """
import os, signal, sys
out = sys.argv[sys.argv.index("--out") + 1]
rank = os.environ.get("RANK", "*")
counter = os.path.join(os.path.dirname(out), "crashes")
with open(counter) as file:
    left = int(file.read())
if left and rank in ("0", "*"):
    with open(counter, "w") as file:
        file.write(str(left - 1))
    os.kill(os.getpid(), signal.SIGSEGV)
for mine in range(2) if rank == "*" else [int(rank)]:
    with open(os.path.join(out, f"rank{mine}.pt"), "w") as file:
        file.write("saved")
"""


@pytest.mark.parametrize("how", ["compat", "torchrun"])
def test_a_run_killed_by_a_signal_once_runs_once_more(how, tmp_path):
    script, out = tmp_path / "crashing.py", tmp_path / "out"
    script.write_text(CRASHING)
    (tmp_path / "crashes").write_text("1")
    with pytest.warns(RuntimeWarning, match="killed by a signal"):
        run = launch(how, script, out)
    assert run.returncode == 0
    assert sorted(path.name for path in out.glob("rank*.pt")) == ["rank0.pt", "rank1.pt"]
    assert (tmp_path / "crashes").read_text() == "0"


def test_a_run_killed_twice_fails(tmp_path):
    script, out = tmp_path / "crashing.py", tmp_path / "out"
    script.write_text(CRASHING)
    (tmp_path / "crashes").write_text("2")
    with pytest.warns(RuntimeWarning, match="killed by a signal"):
        with pytest.raises(AssertionError):
            launch("compat", script, out)
    assert (tmp_path / "crashes").read_text() == "0"


def test_a_failing_run_is_not_run_again(tmp_path):
    script, runs = tmp_path / "failing.py", tmp_path / "runs"
    script.write_text(f"open({str(runs)!r}, 'a').write('run\\n')\nraise SystemExit(3)\n")
    with pytest.raises(AssertionError):
        launch("compat", script, tmp_path / "out")
    assert runs.read_text() == "run\n"
