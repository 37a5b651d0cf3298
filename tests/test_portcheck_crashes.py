"""Ranks killed by a signal (a crash in torch's native code): the port checker's and the tests'.

Each run starts two real gloo ranks (:func:`compat.portcheck.launch.on_ranks`, and
``tests.distributed.run``); the crash is a real ``SIGSEGV`` the rank sends itself,
where torch's crash would come.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from compat.portcheck.launch import RankError, on_ranks


def _summed(rank: int) -> float:
    """Both ranks' numbers summed: a result only both ranks make."""
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)
    return total.item()


def _crash_once(rank: int, world_size: int, marker: str) -> float:
    if rank == 1 and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGSEGV)
    return _summed(rank)


def _crash_always(rank: int, world_size: int) -> float:
    if rank == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    return _summed(rank)


def _crash_in_teardown(rank: int, world_size: int) -> float:
    total = _summed(rank)
    if rank == 1:  # the launcher's teardown of the process group, after the work

        def crash() -> None:
            os.kill(os.getpid(), signal.SIGSEGV)

        dist.destroy_process_group = crash
    return total


@pytest.mark.distributed
def test_a_crash_before_the_work_is_done_is_said_and_the_ranks_run_again(tmp_path):
    marker = str(tmp_path / "crashed")
    with pytest.warns(RuntimeWarning, match="killed by SIGSEGV") as said:
        assert on_ranks(_crash_once, marker, world_size=2, backend="gloo", timeout=120) == 3.0
    (warning,) = said
    assert "run once more" in str(warning.message)
    assert "rank1, when it died" in str(warning.message)  # its Python stacks
    assert "_crash_once" in str(warning.message)


@pytest.mark.distributed
def test_a_second_crash_is_an_error_with_the_stacks():
    with pytest.warns(RuntimeWarning, match="run once more"):
        with pytest.raises(RankError, match="killed by SIGSEGV") as error:
            on_ranks(_crash_always, world_size=2, backend="gloo", timeout=120)
    assert "_crash_always" in str(error.value)


@pytest.mark.distributed
def test_a_crash_after_every_rank_finished_keeps_the_result():
    with pytest.warns(RuntimeWarning, match="its result stands"):
        assert on_ranks(_crash_in_teardown, world_size=2, backend="gloo", timeout=120) == 3.0


@pytest.mark.distributed
def test_the_tests_harness_runs_the_ranks_again_after_a_crash(tmp_path):
    """``tests.distributed.run``, which most distributed tests use, does the same."""
    from tests.distributed import run

    marker = str(tmp_path / "crashed")
    with pytest.warns(RuntimeWarning, match="rank 1 was killed by SIGSEGV"):
        assert run(_crash_once, marker, world_size=2, backend="gloo", timeout=120) == [3.0, 3.0]


@pytest.mark.distributed
def test_the_tests_harness_keeps_results_after_a_crash_in_the_teardown():
    from tests.distributed import run

    with pytest.warns(RuntimeWarning, match="after its work, rank 1: SIGSEGV"):
        assert run(_crash_in_teardown, world_size=2, backend="gloo", timeout=120) == [3.0, 3.0]


def _raise_on_rank_1(rank: int, world_size: int) -> float:
    if rank == 1:
        raise ValueError("rank 1 gives up")
    return _summed(rank)  # rank 0 waits in the collective: it is killed, not crashed


@pytest.mark.distributed
def test_the_tests_harness_does_not_run_again_where_a_rank_raised(recwarn):
    from tests.distributed import run

    with pytest.raises(AssertionError, match="rank 1 gives up"):
        run(_raise_on_rank_1, world_size=2, backend="gloo", timeout=120)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
