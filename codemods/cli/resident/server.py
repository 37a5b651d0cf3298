"""The resident server: the lint's modules loaded once, a forked child per request.

:func:`serve` takes a lock beside the socket (a second server for the same socket
stops at once), loads the modules a run of either tool loads, then accepts requests.
Each request is run by a child forked from the server (:mod:`.child`), so it starts
from the state of a fresh process that has just imported those modules and linted a
file of the server's own (the spare's warm-up): nothing a request's run caches or
changes reaches the next one. Before it forks, the server checks that
no file of the package changed since it loaded them; if one did it answers ``b"S"``
(the caller runs the command itself, with the new files) and stops.
"""

from __future__ import annotations

import _signal
import _socket
import fcntl
import os
import sys

from codemods.cli.resident.client import IDLE, ROOT

#: The server's idle time before it stops, in seconds, where ``IDLE`` says nothing: an
#: hour, so that a working session's commits find it (each would pay the start again).
DEFAULT_IDLE = 3600.0
#: libcst's modules a migration loads (the lint's ``ast`` path loads none of them).
_LIBCST = ("libcst", "libcst.metadata", "libcst.matchers", "libcst.codemod")
#: What the package imports only inside the functions that need it (so that a hook's
#: own start is spared them), which a request in a project would otherwise import each
#: time: the TOML reader of its ``pyproject.toml`` above all.
_LATER = ("tomllib" if sys.version_info >= (3, 11) else "tomli", "tokenize", "json", "yaml")
#: The file each spare lints before its request (:func:`.child.warm_up`), and its project's.
_WARM_UP_FILE, _PROJECT_FILE = "legacy.py", "pyproject.toml"


def serve(path: str) -> None:
    """Serve requests on the socket ``path`` until idle or stale."""
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server has it, or is starting
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())  # for whoever looks (benchmarks/goals.py)
    os.chdir("/")  # a request's child takes the caller's folder; the server pins none
    # SIGTERM ends the server through its ``finally`` blocks: the socket removed, the
    # spare ended (a caller whose request it held runs the command itself).
    _signal.signal(_signal.SIGTERM, _stop)
    # Loaded before the socket exists: meanwhile callers run their command themselves
    # rather than wait for it.
    stamps = _load()
    warm = _warm_up_file(path)
    try:
        os.unlink(path)  # a server that died left it
    except FileNotFoundError:
        pass
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    node = os.stat(path).st_ino
    try:
        _accept(listener, stamps, lock, warm)
    finally:
        listener.close()
        if warm is not None:
            _remove(warm)
        try:
            if os.stat(path).st_ino == node:
                os.unlink(path)
        except OSError:
            pass


def pids(folder: str) -> list[int]:
    """The process ids the servers with a socket in ``folder`` wrote into their locks.

    Each server writes its pid into the ``.lock`` beside its socket (docs/guide.md:
    ``kill`` it to stop the server); a server that ended may have left its lock.
    """
    found = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if name.endswith(".sock.lock"):
            with open(os.path.join(folder, name), encoding="ascii") as file:
                text = file.read().strip()
            if text.isdigit():
                found.append(int(text))
    return found


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _idle() -> float:
    try:
        return max(float(os.environ.get(IDLE, DEFAULT_IDLE)), 0.1)
    except ValueError:
        return DEFAULT_IDLE


def _load() -> dict[str, float]:
    """Load every module of the package and libcst's; each file's modification time.

    A module that fails to load is left out: the child that needs it fails there as
    the caller's own process would.
    """
    from codemods.startup import long_lived

    stamps = _stamps()
    with long_lived():
        for file in sorted(stamps):
            name = _module(os.path.relpath(file, ROOT))
            if name is not None:
                _try_import(name)
        for name in (*_LIBCST, *_LATER):
            _try_import(name)
        _warm()
    return stamps


def _warm() -> int:
    """Screen every rule's example in memory, so each child finds the caches built.

    The rules' text filters, their search orders and the detectors' plans are made on a
    process's first file and kept for the next (a worker of a big run screens many):
    they hold nothing of a file, its folder or its settings. Nothing here reads a file.

    Returns:
        How many examples were screened (a rule whose example fails is left cold).
    """
    from codemods.batch.runner import _screen_source
    from codemods.cli.config import newest_known
    from codemods.registry import REGISTRY
    from codemods.settings import Settings

    newest_known("torch"), newest_known("lightning")  # each range read is checked against
    settings, screened = Settings(), 0
    for rule in REGISTRY:
        try:
            _screen_source("<warm-up>", rule.example.before.encode(), settings, True)
        except Exception:  # noqa: BLE001, S112 - a rule whose example fails is left cold
            continue
        screened += 1
    return screened


def _module(relative: str) -> str | None:
    """The dotted name of the module at ``relative`` (to ``ROOT``); None for data, ``__main__``."""
    if not relative.endswith(".py") or relative.endswith("__main__.py"):
        return None
    parts = relative[:-3].split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _try_import(name: str) -> None:
    try:
        __import__(name)
    except Exception:  # noqa: BLE001 - the child meets the same failure, and reports it
        pass


def _stamps() -> dict[str, float]:
    """The modification time of every file of the package (its modules and tables)."""
    stamps = {}
    for folder, subfolders, names in os.walk(os.path.join(ROOT, "codemods")):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        for name in names:
            if name.endswith((".py", ".txt")):
                file = os.path.join(folder, name)
                stamps[file] = os.stat(file).st_mtime
    return stamps


def _accept(
    listener: _socket.socket, stamps: dict[str, float], lock: int, warm: str | None
) -> None:
    """Keep a spare child waiting for the next request, until idle or stale.

    The spare is forked before any request comes, so a caller waits for neither the fork
    nor the check that the package is unchanged (each file's modification time), which
    the spare makes once it holds a request. It tells the server through a pipe: ``T``
    (taken: the next spare is forked), ``S`` (stale) or ``I`` (no request for the idle
    time): the server stops. Only the spare accepts, so no request is cut short: one
    still queued when the server stops finds the socket closed, and its caller runs it.
    """
    failures = 0
    while failures < 3:
        taken, tell = os.pipe()
        spare = os.fork()
        if spare == 0:
            os.close(taken)
            os.close(lock)  # the server's: a next server may start while this one runs
            status = 1
            try:
                status = _spare(listener, tell, stamps, warm)
            finally:
                os._exit(status)
        os.close(tell)
        word = b""
        try:
            word = os.read(taken, 1)  # b"" where the spare died
        finally:
            os.close(taken)
            if not word:  # SIGTERM to the server, say: its spare goes with it
                _end(spare)
        if word in (b"S", b"I"):
            return
        failures = 0 if word == b"T" else failures + 1
        _reap()


def _end(spare: int) -> None:
    try:
        os.kill(spare, 9)  # SIGKILL
    except OSError:
        pass


def _spare(listener: _socket.socket, tell: int, stamps: dict[str, float], warm: str | None) -> int:
    """The spare child: take one request and run it, unless the package changed.

    Unless a request is waiting already (callers at once: each spare takes one as soon
    as it is forked), it first lints ``warm`` (:func:`.child.warm_up`) while no caller
    waits for it.
    """
    from codemods.cli.resident.child import run_request, warm_up

    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    fd = _waiting(listener)
    if fd is None:
        if warm is not None:
            warm_up(warm)
        listener.settimeout(_idle())
        try:
            fd, _ = listener._accept()  # the fd: ``socket`` is not imported
        except _socket.timeout:  # TimeoutError from Python 3.10, an OSError before
            os.write(tell, b"I")
            return 0
    listener.close()
    connection = _socket.socket(fileno=fd)
    connection.settimeout(None)
    fresh = all(_mtime(file) == stamp for file, stamp in stamps.items())
    os.write(tell, b"T" if fresh else b"S")
    os.close(tell)
    if not fresh:
        _send(connection, b"S")
        return 0
    return run_request(connection)


def _waiting(listener: _socket.socket) -> int | None:
    """The connection of a request waiting already; None where none is."""
    listener.settimeout(0.0)
    try:
        fd, _ = listener._accept()
    except OSError:  # BlockingIOError: no request yet
        return None
    return fd


def _warm_up_file(path: str) -> str | None:
    """Write the spares' warm-up file beside the socket ``path``; None where it cannot be.

    Its folder is the socket's (only the user's), so no one else's file is linted.
    """
    from codemods.cli.resident.child import WARM_UP_PROJECT, WARM_UP_SOURCE

    folder = path + ".warm-up"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        for name, text in ((_PROJECT_FILE, WARM_UP_PROJECT), (_WARM_UP_FILE, WARM_UP_SOURCE)):
            with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
                out.write(text)
    except OSError:
        return None
    return os.path.join(folder, _WARM_UP_FILE)


def _remove(file: str) -> None:
    """Remove the warm-up ``file``'s folder and what the server wrote in it."""
    folder = os.path.dirname(file)
    try:
        for name in (_PROJECT_FILE, _WARM_UP_FILE):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    except OSError:
        pass


def _mtime(file: str) -> float | None:
    try:
        return os.stat(file).st_mtime
    except OSError:
        return None


def _send(connection: _socket.socket, data: bytes) -> None:
    try:
        connection.sendall(data)
    except OSError:
        pass


def _reap() -> None:
    """Collect the children that have ended.

    No ``SIGCHLD`` handler: a child inherits it, and the processes a child starts must
    be its own to wait for.
    """
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
