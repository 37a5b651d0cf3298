"""The README's commands, CI's script and the package metadata agree with each other."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkout_env import checkout_env
from tests.scratch_projects import CURRENT_RELEASES

ROOT = Path(__file__).resolve().parents[1]


def _readme_command(marker: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\n```bash\n(.+?)\n```", readme)
    assert match, f"README.md has no ```bash block after <!-- {marker} -->"
    return match.group(1)


def test_ci_runs_exactly_the_readmes_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert _readme_command("test-command") in ci_lines
    assert ci_lines[-1] == _readme_command("test-command"), "the test command must run last"


def test_readme_main_command_runs_the_migration_on_the_examples():
    command = _readme_command("main-command")
    assert "python -m codemods.migrate" in command and "examples/legacy/" in command
    migrate = command.split("&&")[-1].split()
    examples = sorted((ROOT / "examples" / "legacy").glob("*.py"))
    before = {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in examples}
    run = subprocess.run(
        [sys.executable, *migrate[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1, run.stderr  # changes to show and findings for a human
    for expected in (
        "+    def configure_model(self):",
        '+    trainer = Trainer(strategy="fsdp", accelerator="gpu", devices=8, precision="bf16-mixed")',  # noqa: E501
        "+        activation_checkpointing_policy={Block},  # recompute blocks in backward",
        "+size_policy = functools.partial(size_based_auto_wrap_policy, min_num_params=int(1e7))",
        "+embedding_policy = CustomPolicy(",
    ):
        assert expected in run.stdout
    assert "FSDP304" in run.stderr and "0 errors" in run.stderr
    assert "[fix with --unsafe-fixes]" in run.stderr
    for path, (data, mtime) in before.items():  # --diff writes nothing
        assert (path.read_bytes(), path.stat().st_mtime_ns) == (data, mtime)


def test_ci_script_fails_on_errors():
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("FSDP_COMPAT_OFFLINE") == "1",
    reason="offline (FSDP_COMPAT_OFFLINE=1): pip needs a package index to build the project",
)
def test_pip_install_without_torch_pulls_no_torch(tmp_path):
    """`pip install .` into a fresh venv: no torch, and both CLIs answer and work."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    # Build from a copy so the run leaves no build/ or egg-info in the checkout.
    src = tmp_path / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "*.egg-info", "build", ".tox", "__pycache__"
        ),
    )
    install = subprocess.run(
        [bin_dir / "pip", "install", "-q", str(src)], capture_output=True, text=True, timeout=600
    )
    assert install.returncode == 0, install.stderr
    listed = subprocess.run(
        [bin_dir / "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
    ).stdout.lower()
    names = {line.split("==")[0] for line in listed.splitlines()}
    assert "fsdp-compat" in names and "libcst" in names
    assert not names & {"torch", "lightning", "pytorch-lightning"}, names
    for module in ("codemods.lint", "codemods.migrate"):
        run = subprocess.run(
            [bin_dir / "python", "-m", module, "--help"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0 and run.stdout.startswith("usage:"), run.stderr
    for script in ("fsdp-lint", "fsdp-migrate"):
        run = subprocess.run([bin_dir / script, "--version"], capture_output=True, text=True)
        assert run.returncode == 0 and run.stdout.startswith(script)
    # The drop-in's runner is installed too; without torch it says what to install.
    run = subprocess.run([bin_dir / "fsdp-compat-run", "train.py"], capture_output=True, text=True)
    assert run.returncode == 2 and "pip install torch" in run.stderr, run.stderr
    legacy = tmp_path / "legacy.py"
    legacy.write_text("from pytorch_lightning import Trainer\nTrainer(precision=16)\n")
    (tmp_path / "pyproject.toml").write_text(CURRENT_RELEASES)  # moving to the current releases
    run = subprocess.run([bin_dir / "fsdp-lint", str(legacy)], capture_output=True, text=True)
    assert run.returncode == 1 and f"{legacy}:2:9: FSDP206 [*]" in run.stdout, run.stderr
    run = subprocess.run([bin_dir / "fsdp-migrate", str(legacy)], capture_output=True, text=True)
    assert run.returncode == 1 and 'precision="16-mixed"' in legacy.read_text(), run.stderr


@pytest.mark.slow
def test_readme_python_examples_run(tmp_path):
    """Every ```python block of the README runs (with a Block class defined).

    The 2-rank Lightning script (``<!-- lightning-example -->``) runs, and its
    checkpoint is checked, in tests/test_compat_strategies.py.
    """
    pytest.importorskip("lightning")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"(?<!<!-- lightning-example -->\n)```python\n(.+?)```", readme, flags=re.S)
    assert len(blocks) >= 1 and "<!-- lightning-example -->" in readme
    prelude = "import torch.nn as nn\n\nclass Block(nn.Module):\n    pass\n\n"
    for index, block in enumerate(blocks):
        script = tmp_path / f"example_{index}.py"
        script.write_text(prelude + block, encoding="utf-8")
        run = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,  # what an example writes stays out of the checkout
            env=checkout_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, f"README example {index} failed:\n{block}\n{run.stderr}"
        assert "FSDPDeprecationWarning" in run.stderr, "each example shows a legacy spelling"


@pytest.mark.parametrize("page", ["README.md", "docs/recipes.md"])
def test_the_pre_commit_snippets_pin_this_versions_tag(page):
    """Whoever copies the snippet gets the hooks of the release whose docs they read."""
    from codemods import __version__

    text = (ROOT / page).read_text(encoding="utf-8")
    revs = re.findall(r"^\s*rev: (\S+)", text, flags=re.MULTILINE)
    assert revs == [f"v{__version__}"]
    assert "pre-commit autoupdate --freeze" in text  # and what to pin before the tag exists
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entries = re.findall(r"^  entry: (.+)$", hooks, flags=re.MULTILINE)
    # the tools' resident-server scripts (codemods/cli/resident/), which pip installs
    assert entries == ["fsdp-lint-hook --force-exclude", "fsdp-migrate-hook --force-exclude"]
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for tool in ("lint", "migrate"):
        assert f'"codemods/cli/resident/scripts/fsdp-{tool}-hook"' in project
    assert hooks.count("types_or: [python, pyi, jupyter]") == 2
