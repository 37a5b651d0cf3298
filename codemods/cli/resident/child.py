"""A request's run, in the child the server forked for it.

The child becomes the caller's process as far as the command can tell: the caller's
standard streams (received over the socket) on file descriptors 0 to 2 and in
``sys.stdin``/``stdout``/``stderr`` with the caller's encodings, its working directory,
environment and ``sys.argv``, the default handlers of SIGINT and SIGTERM. The command's
exit status goes back to the caller as Python's own exit would make it: a
``SystemExit``'s code, 1 after an uncaught exception's traceback.
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

from codemods.cli.resident.client import PROTOCOL, TOOLS, tool_main

#: The most bytes of file descriptors a request carries (three ints).
_RIGHTS_SPACE = _socket.CMSG_SPACE(3 * 4)


def run_request(connection: _socket.socket) -> int:
    """Take one request from ``connection``, run it, send its status; the child's own."""
    try:
        request, fds = _read(connection)
    except (OSError, ValueError, EOFError, TypeError):
        return 1
    if request[0] != PROTOCOL or request[1] not in TOOLS:
        return 1
    _, tool, argv, cwd, environ, numbers, encodings = request
    streams = dict(zip(numbers, fds))
    try:
        _become(streams, cwd, environ, argv, encodings)
        connection.sendall(b"R" + os.getpid().to_bytes(4, "big"))
    except OSError:
        return 1
    status = _run(tool, argv)
    try:
        connection.sendall(status.to_bytes(4, "big", signed=True))
    except (OSError, OverflowError):
        pass
    return 0


def _read(connection: _socket.socket) -> tuple[tuple, list[int]]:
    """The request and the file descriptors that came with it."""
    data, ancillary, _, _ = connection.recvmsg(65536, _RIGHTS_SPACE)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]
    size = int.from_bytes(data[:4], "big")
    data = data[4:]
    while len(data) < size:
        chunk = connection.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the request was cut short")
        data += chunk
    return marshal.loads(data), fds


def _become(
    streams: dict[int, int], cwd: str, environ: dict[str, str], argv: list[str], encodings: list
) -> None:
    """Take on the caller's streams, folder, environment and arguments."""
    import _signal

    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(streams.get(target, null), target)
    for fd in {*streams.values(), null}:
        if fd > 2:
            os.close(fd)
    sys.stdin, sys.stdout, sys.stderr = (
        _stream(fd, "r" if fd == 0 else "w", encodings[fd]) for fd in (0, 1, 2)
    )
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environ)
    sys.argv = list(argv)
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)


def _stream(fd: int, mode: str, encoding: tuple[str, str] | None) -> object:
    """A text stream on ``fd`` as Python's start would make it for the caller."""
    name, errors = encoding or ("utf-8", "strict")
    # Python buffers stdout by line on a terminal, stderr always (3.9 and later).
    lines = fd == 2 or (fd == 1 and os.isatty(fd))
    return open(fd, mode, 1 if lines else -1, name, errors, closefd=False)


def _run(tool: str, argv: list[str]) -> int:
    """The tool's ``main()`` on the caller's arguments, ended as Python's exit ends it."""
    import traceback

    try:
        status = tool_main(tool)()
    except SystemExit as stop:
        status = _exit_code(stop.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        status = 130
    except BaseException:  # noqa: BLE001 - the caller's process would print it and exit 1
        traceback.print_exc()
        status = 1
    else:
        status = _exit_code(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return status


def _exit_code(code: object) -> int:
    """The exit status ``sys.exit(code)`` gives."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except (OSError, ValueError):
        pass
    return 1
