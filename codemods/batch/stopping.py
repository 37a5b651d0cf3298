"""Stopping a run cleanly: on SIGINT or SIGTERM, and when a worker's parent dies.

Each process of a run (the command's own, and each worker) keeps one :data:`STATE`.
A signal only records itself while a file is being written, so a write is finished or
abandoned, never cut short; while a file is being read or parsed (nothing of it written
yet) it abandons that file at once by raising :class:`Abandoned`. Between files, the
loops that hand out work ask :attr:`Stop.requested` and stop there.

An exception raised from a signal handler surfaces wherever the interpreter happens to
be: in an import, in a library's ``with`` block or generator, which may swallow it or
turn it into another error. So once the handler has raised, nothing the interrupted
work then returns or raises is believed (:attr:`Stop.interrupted`): the file counts as
abandoned, and its process takes no further file (the interrupted code may have left a
module half imported).

A worker also stops when the process that started it is gone: on Linux the kernel sends
it SIGTERM (a parent-death signal, ``prctl(PR_SET_PDEATHSIG)``); elsewhere a watchdog
thread and the check between files notice that its parent pid changed. An orphaned
worker exits at once unless it is writing a file, and then it abandons that file before
the atomic replace: it has nobody to report to, so it writes nothing more.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import time
from collections.abc import Iterator

# The C module under ``signal``: ``signal`` itself makes its enums at import, about
# 0.5 ms of CPU of a commit hook's start; the handlers are the same ints and functions.
try:
    import _signal as signal
except ImportError:  # an interpreter without it
    import signal  # type: ignore[no-redef]

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

#: What a process of the run is doing, as the signal handler must know it.
IDLE, WORKING, WRITING = 0, 1, 2
#: The signals that stop a run (the others keep their default effect).
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: How often the watchdog of a worker without a parent-death signal looks at its parent.
WATCH_INTERVAL = 0.2
#: How long a worker that received a signal may live on: its pool normally ends it
#: at once, but a pool that broke (another worker died) may never send it the word.
STOP_GRACE = 5.0
#: prctl(2)'s option that asks for a signal when the parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


class Abandoned(BaseException):
    """A signal stopped work on a file before anything of it was written.

    A ``BaseException``, so that the engine's guard against its own failures (which
    catches ``Exception``) lets it through.
    """


class Stop:
    """Why and whether this process must stop handing out (or taking) files.

    Attributes:
        signum: The first stopping signal this process received, or 0.
        phase: :data:`IDLE`, :data:`WORKING` (a file is read or parsed: abandon it at
            once) or :data:`WRITING` (let the write finish or abandon it itself).
        interrupted: The handler raised :class:`Abandoned` in the work in hand.
        shared: In a run with workers, a byte in shared memory the command sets to 1
            when it stops, for its workers to see between files.
        parent: In a worker, the pid of the process that started it.
    """

    def __init__(self) -> None:
        self.signum = 0
        self.phase = IDLE
        self.interrupted = False
        self.shared: Any = None
        self.parent: int | None = None

    @property
    def orphaned(self) -> bool:
        """This is a worker and the process that started it has died."""
        return self.parent is not None and os.getppid() != self.parent

    @property
    def requested(self) -> bool:
        """A signal arrived, the command asked its workers to stop, or the parent died."""
        return bool(self.signum or (self.shared is not None and self.shared.value) or self.orphaned)

    def check(self) -> None:
        """Raise :class:`Abandoned` if the run must stop: the last look before a replace."""
        if self.requested:
            raise Abandoned

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """The block writes a file: a signal no longer abandons it, it only records itself.

        The phase stays :data:`WRITING` after the block, until the file's result is
        handed back (a written file must not be reported as abandoned); the lock keeps
        the watchdog from ending the process in the middle of the write.
        """
        with _WRITE_LOCK:
            self.phase = WRITING
            yield

    @property
    def signal_name(self) -> str:
        """``SIGTERM``, ``SIGINT``, ... (empty when no signal arrived)."""
        if not self.signum:
            return ""
        import signal as signals  # its names: a signal arrived

        return signals.Signals(self.signum).name


#: Held while a file is written (see :meth:`Stop.writing`).
_WRITE_LOCK = _thread.allocate_lock()  # threading's Lock, without importing threading
#: This process's state: the command's in the command, each worker's own in a worker.
STATE = Stop()


def _on_signal(signum: int, frame: object) -> None:
    first = not STATE.signum
    STATE.signum = STATE.signum or signum
    if STATE.shared is not None:
        STATE.shared.value = 1
    if STATE.orphaned and STATE.phase != WRITING:
        os._exit(1)  # nothing of the file in hand is written; nobody waits for its result
    if first and STATE.parent is not None:  # a worker: it answers, then must not linger
        import threading  # a worker: multiprocessing has imported it (a hook's run needs none)

        threading.Thread(target=_exit_after_grace, name="stop-grace", daemon=True).start()
    if STATE.phase == WORKING:
        STATE.phase = IDLE  # one file, one Abandoned: a second signal must not raise again
        STATE.interrupted = True
        raise Abandoned


@contextlib.contextmanager
def on_signals() -> Iterator[Stop]:
    """While in the block, SIGINT and SIGTERM stop the run instead of killing it.

    Yields :data:`STATE`, whose ``signum`` says, inside the block, which signal stopped
    the run (0: none). On leaving the block the handlers are put back and the state is
    cleared, so that a later run in this process is not stopped by an old signal.
    Outside the main thread (where Python cannot install signal handlers) the block
    changes nothing.
    """
    STATE.signum, STATE.phase, STATE.interrupted = 0, IDLE, False
    try:
        previous = {signum: signal.signal(signum, _on_signal) for signum in SIGNALS}
    except ValueError:  # not the main thread, where alone Python installs handlers
        yield STATE
        return
    try:
        yield STATE
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        STATE.signum, STATE.phase, STATE.interrupted = 0, IDLE, False


def start_worker(shared: Any, parent: int, death_signal: bool = True) -> None:
    """Prepare a worker process (the pool's ``initializer``).

    Args:
        shared: The command's stop byte (see :attr:`Stop.shared`).
        parent: The pid of the process that started this one, as that process knows it
            (0: take ``os.getppid()``, for start methods where a server forks workers).
        death_signal: Ask the kernel for SIGTERM when the parent dies, where it can;
            False (or no such call) watches the parent pid from a thread instead.
    """
    STATE.__init__()  # a forked worker starts with a copy of the command's state
    STATE.shared, STATE.parent = shared, parent or os.getppid()
    for signum in SIGNALS:
        signal.signal(signum, _on_signal)
    if not (death_signal and _ask_for_death_signal()):
        import threading

        threading.Thread(target=_watch_parent, name="parent-watchdog", daemon=True).start()
    if STATE.orphaned:  # the parent died before the request above could take effect
        os._exit(1)


def _ask_for_death_signal() -> bool:
    """Ask Linux to send this process SIGTERM when its parent dies; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _exit_after_grace() -> None:
    time.sleep(STOP_GRACE)
    with _WRITE_LOCK:
        os._exit(1)


def _watch_parent() -> None:
    """The portable stand-in for a parent-death signal, in a daemon thread."""
    while not STATE.orphaned:
        time.sleep(WATCH_INTERVAL)
    STATE.signum = STATE.signum or signal.SIGTERM  # a write under way is abandoned
    with _WRITE_LOCK:
        os._exit(1)
