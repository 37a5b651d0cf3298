"""Handing files to worker processes, and taking the work back when the run stops.

The work goes out a few batches at a time (a bounded loop, not ``pool.map``), so that a
stopped run hands out nothing more and takes back the batches not yet started; each
worker looks between the files of its batch whether to stop (see
:mod:`codemods.batch.stopping`), and leaves the files after a stop out of its answer. What
comes back is ``(index, result)`` pairs: a file missing from the answers was not reached.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator

from codemods.batch import stopping

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from typing import Any, TypeVar

    #: One file's work item, as the function working on it takes it.
    Work = Any
    R = TypeVar("R")
else:
    Work = object
#: Batches handed to the workers at once, per worker: enough that none waits for work,
#: few enough that a stopped run has little to take back.
BATCHES_PER_WORKER = 2
#: What a file in a batch whose worker died is reported with.
WORKER_DIED = (
    "a worker process ended abruptly while working on this file's batch; the file is "
    "either unchanged or completely rewritten"
)


def one(work: Callable[[Work], R], args: Work) -> R | None:
    """``work(args)``, or None when a signal abandoned the file (nothing of it written).

    Where the signal handler raised in the work, whatever the work then returns or
    raises is dropped: library code on the way may have swallowed :class:`Abandoned` or
    turned it into another error (libcst's ``KeyError`` of a node, a half-imported
    module's ``AttributeError``), which is no news about the file.

    Python's cycle collector is off during the work and collects the file's garbage
    once after it: libcst makes hundreds of thousands of objects a file, and the
    collections they set off, each going over every object alive (the file's trees
    among them), took about a tenth of a fixing run; the file's objects are all in the
    youngest generation at the end, so one collection of it frees the same memory. A
    file the pre-filter rules out leaves a few objects there (2, the median of torch's
    tree), not enough for the collector to start by itself: no collection then (each
    cost about 10 microseconds, 23 ms over torch's tree).
    """
    state = stopping.STATE
    state.phase = stopping.WORKING
    collecting = gc.isenabled()
    gc.disable()
    try:
        result = work(args)
    except stopping.Abandoned:
        return None
    except BaseException:
        if state.interrupted:
            return None
        raise
    finally:
        state.phase = stopping.IDLE
        if collecting:
            if gc.get_count()[0] > gc.get_threshold()[0]:
                gc.collect(0)
            gc.enable()
    return None if state.interrupted else result


def in_process(work: Callable[[Work], R], items: list[tuple[int, Work]]) -> Iterator[tuple[int, R]]:
    """Work through ``items`` here, looking between files whether to stop."""
    for index, args in items:
        if stopping.STATE.requested:
            return
        result = one(work, args)
        if result is None:
            return
        yield index, result


def batch(
    work: Callable[[Work], R], items: list[tuple[int, Work]]
) -> tuple[list[tuple[int, R]], int]:
    """A worker's share: ``items`` worked through until done or told to stop.

    Returns the answers, and the signal this worker received (0: none), so that a
    signal sent to a worker alone stops the whole run. A worker whose parent died exits
    instead of answering: nobody waits for the answer, and it must write nothing more.
    """
    done = list(in_process(work, items))
    if stopping.STATE.orphaned:
        os._exit(1)
    return done, stopping.STATE.signum


def in_workers(
    work: Callable[[Work], R],
    items: list[tuple[int, Work]],
    jobs: int,
    finished: Callable[[int, R], None],
    size: int,
    lost: Callable[[int, str], None],
    prepare: Callable[[Work], Work] | None = None,
) -> None:
    """Run ``work`` on ``items`` in ``jobs`` worker processes, ``size`` files a batch.

    ``prepare(args)``, if given, completes each item's arguments as its batch is handed
    out.

    ``finished(index, result)`` is called as results arrive, ``lost(index, reason)``
    for the files of a batch whose worker died. Once the run must stop (a signal, or a
    dead worker) nothing more is handed out, the batches not yet started are taken back,
    and the workers' stop byte tells those under way to stop after the file in hand.
    """
    # Imported here: a run on a few files (a commit hook) never needs it.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context()
    shared = context.RawValue("b", 0)
    # A worker forked by a server (forkserver) has that server for a parent: it learns
    # its parent's pid itself.
    parent = 0 if context.get_start_method() == "forkserver" else os.getpid()
    batches = iter(guided(items, size, jobs))
    stopping.STATE.shared = shared
    try:
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=context,
            initializer=stopping.start_worker,
            initargs=(shared, parent),
        ) as pool:
            try:
                _hand_out(pool, work, batches, jobs, finished, lost, prepare)
            except BaseException:  # KeyboardInterrupt where no handler stops the run
                shared.value = 1  # the workers stop after the file in hand
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    finally:
        stopping.STATE.shared = None


def guided(items: list[Any], size: int, jobs: int) -> list[list[Any]]:
    """``items`` in batches of at most ``size``, smaller towards the end.

    Each batch is at most a quarter of what is left per worker, so that the last files
    go out one or two at a time and no worker is left with a long batch while the
    others have nothing to do (a fixing run's files differ several times in cost).

    Example:
        >>> [len(b) for b in guided(list(range(20)), 4, 2)]
        [3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    """
    batches = []
    start = 0
    while start < len(items):
        left = len(items) - start
        step = max(1, min(size, -(-left // (jobs * 4))))
        batches.append(items[start : start + step])
        start += step
    return batches


def _hand_out(
    pool: ProcessPoolExecutor,
    work: Callable[[Work], R],
    batches: Iterator[list[tuple[int, Work]]],
    jobs: int,
    finished: Callable[[int, R], None],
    lost: Callable[[int, str], None],
    prepare: Callable[[Work], Work] | None = None,
) -> None:
    """Keep each worker busy with a batch or two until done, or until the run stops."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    state = stopping.STATE
    running: dict[Future, list[tuple[int, Work]]] = {}
    while True:
        if state.requested:
            state.shared.value = 1  # the signal may have come before the pool started
            for future in running:
                future.cancel()  # a batch not yet started is taken back
        while not state.requested and len(running) < jobs * BATCHES_PER_WORKER:
            chunk = next(batches, None)
            if chunk is None:
                break
            ready = chunk if prepare is None else [(i, prepare(args)) for i, args in chunk]
            running[pool.submit(batch, work, ready)] = chunk
        if not running:
            return
        ready, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in ready:
            chunk = running.pop(future)
            if future.cancelled():
                continue
            try:
                answers, signum = future.result()
            except BrokenProcessPool:
                state.shared.value = 1  # the pool takes no more work: hand out no more
                for index, _ in chunk:
                    lost(index, WORKER_DIED)
                continue
            for index, result in answers:
                finished(index, result)
            if signum and not state.signum:  # a worker was stopped: the run stops
                state.signum = signum
