"""The hook's resident server in goals.py: its environment, its start, its CPU time.

``fsdp-lint-hook`` (what ``.pre-commit-hooks.yaml`` runs) hands its command line to a
server that keeps the lint loaded (codemods/cli/resident/); the wall time a caller
waits includes the server's work, its CPU time does not. So the table's CPU column for
those rows is the client's alone, and :func:`server_note` adds the server's own: its
CPU (its children's included, each request's run) per request, after its start.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from codemods.cli.resident.server import pids

#: Where the server's socket lives during a run of goals.py (inside its scratch folder).
FOLDER = "resident"
#: Where the earlier tree's server lives (``--before``): its CPU time is not counted.
BEFORE_FOLDER = "resident-before"


def environment(scratch: Path, base: dict[str, str], name: str = FOLDER) -> dict[str, str]:
    """``base`` with the server's socket in the scratch folder ``name`` and a long idle time."""
    folder = scratch / name
    folder.mkdir(mode=0o700, exist_ok=True)
    return {**base, "FSDP_COMPAT_RUNTIME_DIR": str(folder), "FSDP_COMPAT_RESIDENT_IDLE": "900"}


def start(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Run ``command`` once (it starts the server) and wait for the server's socket.

    Returns:
        The server's CPU seconds so far: its start.
    """
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    folder = Path(env["FSDP_COMPAT_RUNTIME_DIR"])
    deadline = time.monotonic() + 30
    while not list(folder.glob("*.sock")):
        if time.monotonic() > deadline:
            raise RuntimeError("the hook started no resident server")
        time.sleep(0.05)
    return cpu_seconds(folder)


def cpu_seconds(folder: Path) -> float:
    """The CPU seconds of the server and of its children it has collected."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids(str(folder)):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # utime, stime, cutime, cstime: fields 14 to 17 of proc(5), counted from the pid
        total += sum(int(value) for value in fields[11:15]) / ticks
    return total


def server_note(folder: Path, started: float, requests: int) -> str:
    """A line on the server's own CPU time per request since ``started``."""
    spent = cpu_seconds(folder) - started
    return (
        f"resident server (not in the CPU column of the fsdp-lint-hook rows): "
        f"{spent / max(requests, 1) * 1000:.1f} ms of CPU a request over {requests} requests, "
        f"{started:.2f} s for its start"
    )


def stop(folder: Path) -> None:
    """Stop the servers whose socket is in ``folder``."""
    for pid in pids(str(folder)):
        try:
            os.kill(pid, 15)
        except OSError:
            pass
