"""The pre-commit hooks, run by the real pre-commit from this repository.

A user's repository names this checkout as its hooks' ``repo`` and ``rev``, as the
README's snippet names a release: the checkout's files as one commit of a scratch
repository, uncommitted changes included, as ``pre-commit try-repo`` makes of a
checkout. With legacy code staged, ``fsdp-lint`` fails naming the rule codes,
``fsdp-migrate`` rewrites the files (both in one run of every hook); once those are
staged, ``fsdp-lint`` passes in the environment pre-commit built for them, which holds
fsdp-compat and no torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests import notebook_files
from tests.scratch_projects import CURRENT_RELEASES

ROOT = Path(__file__).resolve().parents[1]
HOOKS_FILE = ".pre-commit-hooks.yaml"
EMAIL = "dev@example.invalid"
LEGACY = """\
from lightning.pytorch import Trainer
from torch.distributed.fsdp.wrap import default_auto_wrap_policy

policy = default_auto_wrap_policy
trainer = Trainer(strategy="fsdp_native", precision=16)
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git"),
    # The `test` extra installs it; a machine with only torch (the GPU leg) may lack it.
    pytest.mark.skipif(
        importlib.util.find_spec("pre_commit") is None, reason="pre-commit is not installed"
    ),
]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def sockets():
    """The folder of the hooks' resident server's socket (codemods/cli/resident/), short
    as a socket's path must be; its servers are stopped at the end."""
    from codemods.cli.resident.server import pids

    folder = Path(tempfile.mkdtemp(prefix="fcr-", dir="/tmp"))
    yield folder
    for pid in pids(str(folder)):
        try:
            os.kill(pid, 15)
        except OSError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


def test_hooks_fail_on_legacy_code_and_pass_after_migrate(tmp_path, sockets):
    """One run of every hook (each builds its environment, the suite's costliest step:
    one run serves all that a first commit shows), then the migrated files pass in the
    environment it built (a second one, as ``try-repo`` builds each time, cost as much
    as the first run).

    pre-commit names every staged file; the configuration's exclude still holds: a
    vendored copy under ``third_party/`` is neither reported by fsdp-lint nor rewritten
    by fsdp-migrate, while the user's own file is; a staged notebook is linted cell by
    cell, and fixed in its cell; a Markdown file is passed to neither.
    """
    hooks_repo, rev = _this_checkout_committed(tmp_path / "fsdp-compat")
    repo = tmp_path / "user-project"
    (repo / "third_party").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", EMAIL)
    _git(repo, "config", "user.name", "dev")
    (repo / "train.py").write_text(LEGACY)
    (repo / "README.md").write_text("default_auto_wrap_policy is only prose here\n")
    # moving to the current releases, with a vendored directory excluded
    (repo / "pyproject.toml").write_text(VENDORED_CONFIG)
    (repo / "third_party" / "vendored.py").write_text(LEGACY)
    notebook = repo / "explore.ipynb"
    notebook.write_text(notebook_files.notebook("import torch\n", LEGACY))
    import yaml  # pre-commit's own dependency

    every_hook = [hook["id"] for hook in yaml.safe_load((ROOT / HOOKS_FILE).read_text())]
    config = CONFIG.format(repo=hooks_repo, rev=rev, hooks=_ids(every_hook))
    (repo / ".pre-commit-config.yaml").write_text(config)
    _git(repo, "add", "-A")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "PRE_COMMIT_COLOR": "never",
        "FSDP_COMPAT_RUNTIME_DIR": str(sockets),
        "FSDP_COMPAT_RESIDENT_IDLE": "60",
    }
    env.pop("FSDP_COMPAT_RESIDENT", None)

    # Every hook of the repository, in its order: fsdp-lint reports, then fsdp-migrate
    # rewrites.
    first = _run(repo, env)
    assert first.returncode == 1, first.stdout + first.stderr
    outputs = _outputs(first.stdout)
    assert list(outputs) == ["fsdp-lint", "fsdp-migrate"], first.stdout
    lint, migrate = outputs["fsdp-lint"], outputs["fsdp-migrate"]
    assert "- exit code: 1" in lint, first.stdout
    for expected in ("train.py:2:41: FSDP101", "train.py:5:19: FSDP204", "train.py:5:43: FSDP206"):
        assert expected in lint
    assert "explore.ipynb:cell 2:2:41: FSDP101" in lint  # the notebook, by cell
    assert "README.md" not in first.stdout  # only Python files are passed to the hooks
    assert "third_party" not in lint and "third_party" not in migrate
    assert "files were modified by this hook" in migrate  # and migrate exits 1 for it
    migrated = (repo / "train.py").read_text()
    assert 'Trainer(strategy="fsdp", precision="16-mixed")' in migrated
    assert "size_based_auto_wrap_policy" in migrated
    assert (repo / "third_party" / "vendored.py").read_text() == LEGACY  # not rewritten
    cells = [c["source"] for c in json.loads(notebook.read_text())["cells"]]
    assert cells[0] == ["import torch\n"]
    assert cells[1][1] == "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"

    # fsdp-lint again, from the environment pre-commit built above (pre-commit finds it
    # by the repository and rev): it passes on the migrated files, and there is no torch.
    # The first run's hooks started a resident server there, which answers now.
    deadline = time.monotonic() + 30
    while not list(sockets.glob("*.sock")):
        assert time.monotonic() < deadline, "the hooks started no resident server"
        time.sleep(0.1)
    (environment,) = (tmp_path / "cache").glob("repo*/py_env-*")
    config = CONFIG.format(repo=hooks_repo, rev=rev, hooks=_ids(["fsdp-lint"]))
    (repo / ".pre-commit-config.yaml").write_text(config + NO_TORCH.format(env=environment))
    _git(repo, "add", "-A")
    check = _run(repo, env, "--all-files")
    assert check.returncode == 0, check.stdout + check.stderr
    assert list(_outputs(check.stdout)) == ["fsdp-lint", "no-torch"], check.stdout
    assert "codemods from the hook environment" in check.stdout
    assert list((tmp_path / "cache").glob("repo*/py_env-*")) == [environment]  # not built again


def _this_checkout_committed(shadow: Path) -> tuple[Path, str]:
    """This checkout's files (tracked or not, less what git ignores) as the one commit of
    a new repository at ``shadow``, and that commit, for a configuration's ``rev``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the checkout is left out
            (shadow / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, shadow / name)
    _git(shadow, "init", "-q")
    _git(shadow, "add", "-A")
    _git(shadow, "-c", "user.name=dev", "-c", f"user.email={EMAIL}", "commit", "-qm", "checkout")
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=shadow, check=True, capture_output=True, text=True
    ).stdout.strip()
    return shadow, rev


def _ids(hooks: list[str]) -> str:
    return "".join(f"      - id: {hook}\n" for hook in hooks)


def _run(repo: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """``pre-commit run --verbose`` in ``repo`` (on the staged files, or ``options``)."""
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--verbose", *options],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outputs(stdout: str) -> dict[str, str]:
    """Each hook's part of a verbose run's output, by hook id, in the order they ran."""
    parts = re.split(r"^- hook id: (\S+)$", stdout, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


CONFIG = """\
repos:
  - repo: {repo}
    rev: {rev}
    hooks:
{hooks}"""

#: A hook that runs the hook environment's own Python: what it imports codemods from,
#: and that it cannot import torch.
NO_TORCH = """\
  - repo: local
    hooks:
      - id: no-torch
        name: fsdp-compat installs without torch
        language: system
        pass_filenames: false
        always_run: true
        verbose: true
        entry: >-
          {env}/bin/python -c "import importlib.util, sys, codemods.lint;
          print('codemods from the hook environment:', codemods.lint.__file__);
          sys.exit(importlib.util.find_spec('torch') is not None)"
"""


# Judged at the current releases (a test of the hooks, not of ranges: see
# tests/scratch_projects.py), with a vendored directory excluded.
VENDORED_CONFIG = CURRENT_RELEASES + 'exclude = ["third_party/*"]\n'
