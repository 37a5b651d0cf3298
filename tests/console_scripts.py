"""The console scripts of ``pyproject.toml``, as pip installs them, for tests to run.

A checkout used through ``PYTHONPATH`` has no installed scripts (and an editable install
of another checkout has that checkout's): :func:`console_script` writes the wrapper pip
writes for an entry point, an executable file that imports the entry point's module and
exits with what its function returns.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def console_script(folder: Path, name: str) -> Path:
    """Write ``folder/bin/name``, the wrapper of ``pyproject.toml``'s script ``name``."""
    with open(ROOT / "pyproject.toml", "rb") as handle:
        target = tomllib.load(handle)["project"]["scripts"][name]
    module, _, function = target.partition(":")
    path = folder / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\n\n"
        f"if __name__ == '__main__':\n    sys.exit({function}())\n"
    )
    path.chmod(0o755)
    return path
