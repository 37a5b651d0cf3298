"""How work is handed out and run: batch sizes, and the cycle collector around a file."""

from __future__ import annotations

import gc
import weakref

import pytest

from codemods.batch.pool import guided, one


@pytest.mark.parametrize(
    ("items", "size", "jobs"), [(0, 8, 2), (1, 8, 2), (69, 8, 2), (2000, 16, 4)]
)
def test_guided_batches_cover_every_item_once_and_shrink(items: int, size: int, jobs: int) -> None:
    batches = guided(list(range(items)), size, jobs)
    assert [i for batch in batches for i in batch] == list(range(items))
    lengths = [len(batch) for batch in batches]
    assert all(1 <= n <= size for n in lengths)
    assert lengths == sorted(lengths, reverse=True)
    if items >= jobs * 4:
        assert lengths[-jobs:] == [1] * jobs  # the last files go out one at a time


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("enabled", [True, False])
def test_one_works_without_the_collector_and_frees_the_files_cycles(enabled: bool) -> None:
    seen: dict[str, object] = {}

    def work(_: object) -> str:
        seen["collector on during the work"] = gc.isenabled()
        cycle = _Cycle()
        seen["cycle"] = weakref.ref(cycle)
        # a cycle of more objects than the collector's youngest generation holds before
        # it runs by itself (libcst's trees, with their parents)
        cycle.many = [[cycle] for _ in range(gc.get_threshold()[0] + 1)]
        return "done"

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert one(work, None) == "done"
        assert gc.isenabled() is enabled  # as it was before
    finally:
        (gc.enable if was else gc.disable)()
    assert seen["collector on during the work"] is False
    # With the collector on, the file's cycle is gone when one() returns.
    assert (seen["cycle"]() is None) is enabled


def test_a_file_that_leaves_little_is_left_to_the_collector() -> None:
    # A collection costs about 10 microseconds even of a few objects: a file the
    # pre-filter rules out leaves fewer than the collector would start for.
    seen: dict[str, object] = {}

    def work(_: object) -> str:
        cycle = _Cycle()
        seen["cycle"] = weakref.ref(cycle)
        return "done"

    was = gc.isenabled()
    gc.enable()
    try:
        gc.collect()
        assert one(work, None) == "done"
        assert seen["cycle"]() is not None  # not collected yet
        gc.collect(0)
        assert seen["cycle"]() is None  # the collector's to free
    finally:
        (gc.enable if was else gc.disable)()
