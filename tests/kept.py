"""Answers computed at collection, kept between runs while what they are computed from is unchanged.

Each pytest-xdist worker collects the whole suite, so a parametrization that is slow to
compute (a scan of the installed torch, a lint of every fixture for its test id) costs
every worker every run. :func:`kept` keeps such an answer under ``.pytest_cache``, in a
file named by a hash of everything the answer depends on (the caller says what): any
change to those inputs names another file, and the answer is computed anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parents[1] / ".pytest_cache" / "fsdp-compat"


def fingerprint(paths: Iterable[Path], *extra: str) -> str:
    """A hash of the files' paths and contents, ``extra``, and the Python running.

    >>> fingerprint([], "a") == fingerprint([], "a") != fingerprint([], "b")
    True
    """
    digest = hashlib.sha256(f"{sys.version}\0{sys.executable}\0".encode())
    for text in extra:
        digest.update(f"{text}\0".encode())
    for path in paths:
        digest.update(f"{path}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def installed(*distributions: str) -> str:
    """The installed versions of these distributions (``none`` where one is missing)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in distributions:
        try:
            found.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}=none")
    return ",".join(found)


def kept(name: str, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` (JSON data), or what it returned in an earlier run with this ``key``."""
    path = FOLDER / f"{name}-{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    answer = compute()
    try:
        FOLDER.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.part")
        partial.write_text(json.dumps(answer), encoding="utf-8")
        os.replace(partial, path)  # whole, even with another worker writing the same
    except OSError:
        pass
    return answer
