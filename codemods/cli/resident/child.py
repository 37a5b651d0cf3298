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
#: What a spare lints before its request comes (:func:`warm_up`): FSDP1, FairScale and
#: an old policy with its old argument, so the run takes a legacy file's whole path.
WARM_UP_SOURCE = """\
import functools

from fairscale.nn import FullyShardedDataParallel as ShardedDDP
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import default_auto_wrap_policy


def shard(model, fairscale=False):
    if fairscale:
        return ShardedDDP(model, reshard_after_forward=False)
    policy = functools.partial(default_auto_wrap_policy, min_num_params=1000)
    return FSDP(model, auto_wrap_policy=policy)
"""
#: The ``pyproject.toml`` beside it: the run reads a project's declared releases too.
WARM_UP_PROJECT = """\
[project]
name = "warm-up"
dependencies = ["torch>=2.1", "lightning>=2.1"]
"""


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


def warm_up(file: str) -> int:
    """Lint ``file`` (:data:`WARM_UP_SOURCE`, in a project) in this spare before a request.

    A forked child shares the server's memory pages until it writes to them, and a run
    writes to every object it touches (their reference counts): a request's lint copied
    some 1,300 pages and made its run's first objects while its caller waited, more
    than half of its CPU time. A spare that has run a lint of its own finds those pages
    copied when its request comes (its output is discarded). What that run leaves behind
    holds nothing of the request's files: the caches of pure functions (patterns, the
    rules' filters and plans) and the modules it imported. A file named on the command
    line reads no ``.gitignore``, and a run's projects live in its own objects. Warnings
    it raised are shown again to the request (``catch_warnings`` resets what each module
    has shown).

    Returns:
        The lint's exit status: 1 (its findings), unless something failed.
    """
    import warnings

    from codemods.syntax.node_index import tree_index

    saved = sys.stdout, sys.stderr, sys.argv
    with open(os.devnull, "w", encoding="utf-8") as null:
        sys.stdout = sys.stderr = null
        sys.argv = ["fsdp-lint", "--force-exclude", file]
        try:
            with warnings.catch_warnings():
                return _run("lint", sys.argv)
        finally:
            sys.stdout, sys.stderr, sys.argv = saved
            tree_index.cache_clear()  # the last tree parsed: memory only


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
