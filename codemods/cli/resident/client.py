"""The hook scripts' side of the resident server: ask it, else run the command here.

This module runs at every start of a hook script, before anything else, so it imports
only what a bare Python start has already loaded (``os``, ``sys``) and the C modules
``_socket``, ``_signal`` and ``marshal``: no ``socket`` (``enum``, ``selectors``), no
``re``, no ``pathlib``. A request is one message, its length first, then the
``marshal`` of (protocol, tool, argv, cwd, environment, stream encodings), with the
caller's standard streams attached (``SCM_RIGHTS``): the child writes straight to
them. The server answers ``b"R"`` and the child's pid when it takes the request, or
``b"S"`` when it is stale (its package changed); then the exit status, 4 bytes.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from collections.abc import Callable

#: Changes whenever the request's or the answer's layout does.
PROTOCOL = 1
#: ``0`` runs every command in the caller's process.
SWITCH = "FSDP_COMPAT_RESIDENT"
#: A directory for the socket instead of the per-user default.
DIRECTORY = "FSDP_COMPAT_RUNTIME_DIR"
#: The server's idle time before it stops, in seconds.
IDLE = "FSDP_COMPAT_RESIDENT_IDLE"
#: The tools a server runs: their modules, each with a ``main(argv)``.
TOOLS = {"lint": "codemods.lint", "migrate": "codemods.migrate"}
_STREAMS = (0, 1, 2)
#: The folder that holds the ``codemods`` package this client belongs to.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def run(tool: str) -> int:
    """Run ``tool`` (a key of :data:`TOOLS`) on ``sys.argv``: by the server, else here.

    Returns:
        The command's exit status.
    """
    path = socket_path() if os.environ.get(SWITCH, "1") != "0" else None
    if path is not None:
        status = _ask(path, tool)
        if status is not None:
            return status
    try:
        return _run_here(tool)
    finally:
        if path is not None:
            _start_server(path)


def socket_path() -> str | None:
    """The server's socket for this interpreter and package; None where none can be.

    The name depends on the interpreter and on where the package lives, so each hook
    environment has its own server.
    """
    if os.name != "posix" or not hasattr(os, "fork"):
        return None
    base = os.environ.get(DIRECTORY)
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime:
            base = os.path.join(runtime, "fsdp-compat")
        else:
            base = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"fsdp-compat-{os.getuid()}")
    base = os.path.abspath(base)
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        status = os.lstat(base)
    except OSError:
        return None
    # Only the user may enter it: a socket there accepts only the user's requests.
    directory = status.st_mode & 0o170000 == 0o040000
    if not directory or status.st_uid != os.getuid() or status.st_mode & 0o077:
        return None
    search = os.environ.get("PYTHONPATH", "")
    key = f"{sys.executable}\0{sys.version}\0{ROOT}\0{search}\0{PROTOCOL}"
    path = os.path.join(base, f"{_fnv(key.encode()):016x}.sock")
    # A socket's path has room for 104 bytes on macOS, 108 on Linux: a longer one
    # cannot be bound, and a server started for it would load the lint for nothing.
    return path if len(os.fsencode(path)) < 104 else None


def _fnv(data: bytes) -> int:
    """FNV-1a, 64 bits: a stable short name (``hash`` changes per process; ``hashlib`` costs)."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def _ask(path: str, tool: str) -> int | None:
    """The exit status of ``tool`` run by the server at ``path``; None if none took it."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    with _Forwarding() as forwarding:
        try:
            fds = [fd for fd in _STREAMS if _open(fd)]
            streams = [_encoding(stream) for stream in (sys.stdin, sys.stdout, sys.stderr)]
            request = (PROTOCOL, tool, sys.argv, os.getcwd(), dict(os.environ), fds, streams)
            payload = marshal.dumps(request)
            rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
            sock.sendmsg(
                [len(payload).to_bytes(4, "big") + payload],
                [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)],
            )
            answer = _receive(sock, 5)
        except OSError:
            answer = b""
        if answer[:1] != b"R" or len(answer) < 5:
            sock.close()
            return None  # stale, or gone before it took the request: run it here
        forwarding.to(int.from_bytes(answer[1:5], "big"))
        try:
            status = _receive(sock, 4)
        except OSError:
            status = b""
        finally:
            sock.close()
    if len(status) < 4:
        sys.stderr.write(
            f"{os.path.basename(sys.argv[0])}: the resident server's run ended "
            "without an exit status\n"
        )
        return 2
    return int.from_bytes(status, "big", signed=True)


class _Forwarding:
    """SIGINT and SIGTERM passed on to the child running the request, once it is known.

    A signal that comes before the server has taken the request waits for the child's
    pid; on the way out Python's own handlers are back, and a signal that found no
    child to take it (the caller then runs the command itself) acts as it would have.
    """

    def __enter__(self) -> _Forwarding:
        import _signal

        self._signal, self.pid, self.pending = _signal, 0, []
        self._signals = (_signal.SIGINT, _signal.SIGTERM)
        self._before = [_signal.signal(signum, self._forward) for signum in self._signals]
        return self

    def _forward(self, signum: int, frame: object) -> None:
        if not self.pid:
            self.pending.append(signum)
            return
        try:
            os.kill(self.pid, signum)
        except OSError:
            pass

    def to(self, pid: int) -> None:
        """Forward to ``pid`` from now on, and what came before it."""
        self.pid = pid
        for signum in self.pending:
            self._forward(signum, None)

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in zip(self._signals, self._before):
            self._signal.signal(signum, handler)
        if self.pending and not self.pid:
            os.kill(os.getpid(), self.pending[0])  # nobody took it: as if never caught


def _receive(sock: object, size: int) -> bytes:
    """Up to ``size`` bytes: fewer only where the other side closed."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))  # type: ignore[attr-defined]
        if not chunk:
            break
        data += chunk
    return data


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _encoding(stream: object) -> tuple[str, str] | None:
    """A standard stream's encoding and error handler, as this process set them up."""
    if stream is None:
        return None
    return (
        getattr(stream, "encoding", None) or "utf-8",
        getattr(stream, "errors", None) or "strict",
    )


def _run_here(tool: str) -> int:
    """Run ``tool`` in this process, as its console script would."""
    return tool_main(tool)()


def tool_main(tool: str) -> Callable[[], int]:
    """The ``main`` of ``tool`` (a key of :data:`TOOLS`), its module loaded."""
    module = TOOLS[tool]
    __import__(module)  # the ``importlib`` package is not loaded yet, nor needed
    return sys.modules[module].main


_SERVE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from codemods.cli.resident.server import serve; serve(sys.argv[2])"
)


def _start_server(path: str) -> None:
    """Start a server for the next call, detached; its own lock keeps it the only one."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        os.posix_spawn(
            sys.executable,
            # The package from ROOT, as here: not a ``codemods`` in the caller's folder.
            [sys.executable, "-c", _SERVE, ROOT, path],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in _STREAMS],
            setsid=True,
        )
    except (OSError, AttributeError, TypeError, NotImplementedError):
        pass  # no server (no setsid here, say): every call runs here
    finally:
        os.close(devnull)
