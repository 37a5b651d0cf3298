"""Ports for process groups (``compat.portcheck.ports``): no two callers get the same one.

Concurrent callers are real processes sharing the real ledger, as pytest-xdist workers
and other test sessions on the machine do.
"""

from __future__ import annotations

import json
import multiprocessing
import socket

import pytest

from compat.portcheck import ports


def _draw(count: int) -> list[int]:
    return [ports.free_port() for _ in range(count)]


def test_concurrent_callers_never_share_a_port():
    with multiprocessing.get_context("fork").Pool(4) as workers:
        drawn = [port for batch in workers.map(_draw, [25] * 4) for port in batch]
    assert len(drawn) == len(set(drawn)) == 100
    assert all(port in ports.pool() for port in drawn)


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    path = tmp_path / "ports.json"
    monkeypatch.setattr(ports, "ledger_path", lambda: path)
    return path


def _bindable_pair() -> range:
    for start in ports.pool()[::97]:
        if ports._bindable(start) and ports._bindable(start + 1):
            return range(start, start + 2)
    raise AssertionError("no two free ports side by side in the pool")


def test_a_port_in_use_is_not_handed_out(ledger, monkeypatch):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        monkeypatch.setattr(ports, "pool", lambda: range(taken, taken + 1))
        port = ports.free_port()
    assert port != taken
    assert set(json.loads(ledger.read_text())) == {str(port)}


def test_a_port_is_held_until_its_time_is_up(ledger, monkeypatch):
    pair = _bindable_pair()
    monkeypatch.setattr(ports, "pool", lambda: pair)
    first, second = ports.free_port(), ports.free_port()
    assert {first, second} == set(pair)
    assert ports.free_port() not in pair  # both held: the kernel's pick, recorded too
    assert len(json.loads(ledger.read_text())) == 3
    now = ports.time.time()
    monkeypatch.setattr(ports.time, "time", lambda: now + ports.HELD_S + 1)
    assert ports.free_port() in pair
    assert len(json.loads(ledger.read_text())) == 1  # the others' time is up


def test_a_damaged_ledger_holds_nothing(ledger, monkeypatch):
    pair = _bindable_pair()
    monkeypatch.setattr(ports, "pool", lambda: pair)
    ledger.write_text('{"123', encoding="utf-8")  # a writer killed half-way
    assert ports.free_port() in pair
    assert len(json.loads(ledger.read_text())) == 1


@pytest.mark.parametrize(
    "ephemeral, expected",
    [
        ((32768, 60999), range(20768, 32768)),  # Linux's default
        ((5000, 60000), range(1025, 5000)),  # little room below: what there is
        ((1024, 50000), range(50001, 62001)),  # none below: above
        ((1024, 65535), range(0)),  # none anywhere: the kernel's pick
    ],
)
def test_the_pool_lies_outside_the_ephemeral_range(ephemeral, expected):
    assert ports.pool(ephemeral) == expected
