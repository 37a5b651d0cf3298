"""Both command-line tools start, answer --help and --version, as modules and as scripts."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from codemods import __version__


@pytest.mark.parametrize(
    ("module", "prog"), [("codemods.migrate", "fsdp-migrate"), ("codemods.lint", "fsdp-lint")]
)
def test_module_help_and_version(module, prog):
    help_run = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60
    )
    assert help_run.returncode == 0, help_run.stderr
    assert help_run.stdout.startswith(f"usage: {prog}")
    assert f"python -m {module}" in help_run.stdout
    version_run = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60
    )
    assert version_run.returncode == 0
    assert version_run.stdout.strip() == f"{prog} {__version__}"


@pytest.mark.parametrize("script", ["fsdp-migrate", "fsdp-lint"])
def test_console_scripts_are_installed(script):
    path = shutil.which(script)
    if path is None:
        pytest.skip(f"{script} not on PATH: the package is not installed in this environment")
    run = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == f"{script} {__version__}"
