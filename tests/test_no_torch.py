"""codemods never imports torch; compat asks for it by name when it is missing."""

from __future__ import annotations

import pkgutil

import codemods


def _codemods_modules() -> list[str]:
    return sorted(
        info.name for info in pkgutil.walk_packages(codemods.__path__, prefix="codemods.")
    )


def test_every_codemods_module_imports_without_torch(run_without_torch):
    modules = _codemods_modules()
    assert "codemods.lint" in modules and "codemods.registry" in modules
    code = (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('torch' in sys.modules, 'compat' in sys.modules)\n"
    )
    assert run_without_torch(code) == "False False"


def test_the_blocker_really_blocks_torch(run_without_torch):
    stderr = run_without_torch("import torch", expect_failure=True)
    assert "blocked by the test" in stderr


def test_compat_without_torch_says_what_to_install(run_without_torch):
    stderr = run_without_torch("import compat", expect_failure=True)
    assert "ImportError: compat needs PyTorch" in stderr
    assert "pip install torch" in stderr


def test_clis_answer_help_without_torch(run_without_torch):
    code = (
        "import contextlib, io\n"
        "from codemods import lint, migrate\n"
        "for mod in (lint, migrate):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n"
        "            mod.main(['--help'])\n"
        "        except SystemExit as exc:\n"
        "            assert exc.code == 0, exc.code\n"
        "    print(out.getvalue().splitlines()[0])\n"
    )
    out = run_without_torch(code).splitlines()
    assert out[0].startswith("usage: fsdp-lint") and out[1].startswith("usage: fsdp-migrate")
