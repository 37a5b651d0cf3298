"""The releases the file that made a legacy call runs on, as ``fsdp-migrate`` would judge it.

A warning says what ``python -m codemods.migrate`` does with the old spelling; whether it
rewrites it depends on the releases the file runs on (its project's declared range, its
``[tool.fsdp-compat]`` target, else its evidence floor: :mod:`codemods.releases`). This
module asks the codemod's own readers, once per file, and never fails a user's program:
anything it cannot read answers None (the warning then says what the rule does in general).
"""

from __future__ import annotations

import functools
from pathlib import Path

from codemods.releases import Releases

__all__ = ["file_releases"]


@functools.lru_cache(maxsize=64)
def file_releases(filename: str) -> Releases | None:
    r"""The releases ``filename`` runs on, or None where it is no file that can be read.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "requirements.txt").write_text("torch>=1.12\n")
        >>> _ = (root / "train.py").write_text("import torch\n")
        >>> file_releases(str(root / "train.py")).torch.text()
        '1.12..latest'
    """
    path = Path(filename)
    if filename.startswith("<") or not path.is_file():
        return None
    try:
        from codemods.cli.config import check_version, find, load
        from codemods.cli.targets import ProjectTargets
        from codemods.screen.evidence import with_evidence
        from codemods.settings import Settings

        config = load(find(path))
        spans = {
            framework: check_version(value, f"target-{framework}")
            for framework, value in (
                ("torch", config.target_torch),
                ("lightning", config.target_lightning),
            )
            if value
        }
        targets = ProjectTargets(config=spans, config_path=config.path)
        settings = Settings(**targets.for_file(path))
        evidenced = with_evidence(path.read_bytes(), settings, None)
        return (evidenced[0] if evidenced else settings).releases
    except Exception:  # noqa: BLE001 - a warning must never break the user's program
        return None
