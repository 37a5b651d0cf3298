"""The pre-commit hooks, run by the real pre-commit from this repository (try-repo).

A user's repository with legacy code staged: ``fsdp-lint`` fails naming the rule codes,
``fsdp-migrate`` rewrites the files, and once those are staged ``fsdp-lint`` passes. An
environment pre-commit builds the same way holds fsdp-compat and no torch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEGACY = """\
from lightning.pytorch import Trainer
from torch.distributed.fsdp.wrap import default_auto_wrap_policy

policy = default_auto_wrap_policy
trainer = Trainer(strategy="fsdp_native", precision=16)
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git"),
]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_hooks_fail_on_legacy_code_and_pass_after_migrate(tmp_path):
    repo = tmp_path / "user-project"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "dev@example.invalid")
    _git(repo, "config", "user.name", "dev")
    (repo / "train.py").write_text(LEGACY)
    (repo / "README.md").write_text("default_auto_wrap_policy is only prose here\n")
    _git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PRE_COMMIT_COLOR": "never"}

    def hook(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), name, "--verbose"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    lint = hook("fsdp-lint")
    assert lint.returncode == 1, lint.stdout + lint.stderr
    for expected in ("train.py:2:41: FSDP101", "train.py:5:19: FSDP204", "train.py:5:43: FSDP206"):
        assert expected in lint.stdout
    assert "README.md" not in lint.stdout  # only Python files are passed to the hook

    migrate = hook("fsdp-migrate")
    assert migrate.returncode == 1, migrate.stdout + migrate.stderr  # files were modified
    assert "files were modified by this hook" in migrate.stdout
    migrated = (repo / "train.py").read_text()
    assert 'Trainer(strategy="fsdp", precision="16-mixed")' in migrated
    assert "size_based_auto_wrap_policy" in migrated

    _git(repo, "add", "-A")
    lint = hook("fsdp-lint")
    assert lint.returncode == 0, lint.stdout + lint.stderr

    # try-repo builds its environment in a temporary store; build the same one (the
    # package installed into a pre-commit Python environment) and look inside.
    (repo / ".pre-commit-config.yaml").write_text(NO_TORCH_HOOK.format(root=ROOT))
    check = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "no-torch", "--all-files", "--verbose"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "codemods from the hook environment" in check.stdout


NO_TORCH_HOOK = """\
repos:
  - repo: local
    hooks:
      - id: no-torch
        name: fsdp-compat installs without torch
        language: python
        additional_dependencies: ["{root}"]
        pass_filenames: false
        always_run: true
        verbose: true
        entry: >-
          python -c "import importlib.util, sys, codemods.lint;
          print('codemods from the hook environment:', codemods.lint.__file__);
          sys.exit(importlib.util.find_spec('torch') is not None)"
"""
