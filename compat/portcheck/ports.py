"""Ports for new process groups that no two callers on this machine are handed at once.

A port found by binding port 0 is free again the moment it is returned: two callers
that ask at about the same time (two pytest-xdist workers, two test sessions, the port
checker beside a test) can be handed the same one before either group's store has
bound it. The second group's ranks then join the first group's rendezvous: a rank
hangs, or gloo fails with ``Connection closed by peer``. :func:`free_port` rules that
out twice over:

- it picks from below the kernel's ephemeral range (``ip_local_port_range``), where
  neither ``bind(("", 0))`` nor an outgoing connection is ever given a port, so only a
  program that names the port can take it; and
- it records each port it hands out in a ledger that every process of this user shares
  (a JSON file under an exclusive ``flock``), and hands no port out twice within
  :data:`HELD_S` seconds.

Example:
    >>> port = free_port()
    >>> 1024 < port < 65536 and port != free_port()
    True
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX; elsewhere each process keeps to itself (no ledger)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: Seconds a handed-out port stays out of reach of other callers: longer than any run
#: of ranks that starts on it (their store binds it within seconds of the start).
HELD_S = 1800.0
#: How many ports below the ephemeral range are drawn from.
SPAN = 12_000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ledger_path() -> Path:
    """The file that records the ports handed out (one per user of the machine)."""
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"fsdp-compat-ports-{user}.json"


def pool(ephemeral: tuple[int, int] | None = None) -> range:
    """The ports drawn from: the :data:`SPAN` ports below the ephemeral range.

    Where that range leaves too little room below it, the ports above it; where it
    leaves none, the empty range (:func:`free_port` then asks the kernel).

    Example:
        >>> pool((32768, 60999))
        range(20768, 32768)
        >>> pool((1024, 65535))
        range(0, 0)
    """
    low, high = ephemeral or _ephemeral_range()
    if low - 1025 >= SPAN // 4:
        return range(max(1025, low - SPAN), low)
    if 65535 - high >= SPAN // 4:
        return range(high + 1, min(65536, high + 1 + SPAN))
    return range(0)


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default; other systems differ, the bind check decides
    return low, high


def _bindable(port: int) -> bool:
    """Whether nothing holds ``port`` on any local address, IPv4 or IPv6.

    torch's store listens on every address, IPv6 included where there is IPv6.
    """
    families = [(socket.AF_INET, "")]
    if socket.has_ipv6:
        families.append((socket.AF_INET6, "::"))
    for family, host in families:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.bind((host, port))
        except OSError as error:
            # In use on either family is in use; any other IPv6 error (no IPv6 here)
            # says nothing of the port.
            if family == socket.AF_INET or error.errno == errno.EADDRINUSE:
                return False
    return True


def _from_kernel() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def _ledger() -> Iterator[dict[int, float]]:
    """The ports handed out in the last :data:`HELD_S` seconds, locked while in use.

    What the block leaves in the dictionary is written back.
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield {}
        return
    path = ledger_path()
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        handle.seek(0)
        try:
            recorded = {int(port): float(when) for port, when in json.loads(handle.read()).items()}
        except ValueError:  # empty, or cut short by a killed writer: nothing is held
            recorded = {}
        now = time.time()
        held = {port: when for port, when in recorded.items() if now - when < HELD_S}
        yield held
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(held))


def free_port() -> int:
    """A TCP port that nothing listens on and no other caller of this function now holds.

    Returns:
        A port from :func:`pool` that binds on every local address, recorded in the
        ledger; a port the kernel picks (also recorded) where none is left.
    """
    draw = random.SystemRandom()
    with _ledger() as held:
        candidates = [port for port in pool() if port not in held]
        draw.shuffle(candidates)
        port = next((port for port in candidates[:200] if _bindable(port)), 0)
        while not port or port in held:
            port = _from_kernel()
        held[port] = time.time()
    return port


__all__ = ["HELD_S", "free_port", "ledger_path", "pool"]
