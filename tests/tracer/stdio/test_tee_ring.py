"""The ring where the relay keeps a flood's copies for the capture process (tracer.stdio.ring): bytes
come out in the order they went in, across the ring's end, room comes back only once the capture
process took them, and through the relay loop a flood beyond the capture pipe is captured whole,
waiting (bounded) for a capture a ring behind, dropping and recording only when it takes nothing."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracer.stdio.loop as relay_loop
from tests.tracer.stdio.test_tee_flood import _all_stopped
from tests.tracer.stdio.test_tee_relay import BOUND_S, read_records, stream_of
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDOUT
from tracer.stdio.ring import MIN_SIZE, Ring, RingReader

pytestmark = pytest.mark.skipif(
    not tee_splice.available() or Ring.create(MIN_SIZE) is None,
    reason="memfd, eventfd and splice are Linux's",
)


def _through_a_pipe(data: bytes, ring: Ring) -> int:
    """Put `data` in the ring as the relay does: from a pipe, where the bytes wait."""
    r, w = os.pipe()
    try:
        os.write(w, data)
        return ring.put(r, len(data))
    finally:
        os.close(r)
        os.close(w)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=1, max_value=60_000), min_size=1, max_size=40), st.integers(0, 2**32))
def test_bytes_come_out_of_the_ring_in_the_order_they_went_in_across_its_end(sizes, seed):
    rnd = random.Random(seed)  # (bytes from a seed: hypothesis draws only the sizes)
    ring = Ring.create(MIN_SIZE)
    ring.size = 100_003  # (a small odd ring: chunks cross its end at every kind of place)
    reader = RingReader(ring.fd, ring.taken_fd, ring.size)
    waiting: list[bytes] = []
    try:
        for n in sizes:
            data = rnd.randbytes(n)
            while ring.room() < n:  # (the capture takes the oldest first)
                assert reader.take(len(waiting[0])) == waiting.pop(0)
                ring.reclaim()
            assert _through_a_pipe(data, ring) == n
            waiting.append(data)
        for data in waiting:
            assert reader.take(len(data)) == data
        ring.reclaim()
        assert ring.used == 0
    finally:
        os.close(ring.fd)
        os.close(ring.taken_fd)


def test_room_comes_back_only_for_bytes_the_capture_took():
    ring = Ring.create(MIN_SIZE)
    reader = RingReader(ring.fd, ring.taken_fd, ring.size)
    try:
        assert _through_a_pipe(b"a" * 1000, ring) == 1000 and ring.room() == ring.size - 1000
        assert ring.reclaim() == 0 and ring.room() == ring.size - 1000  # nothing taken yet
        assert reader.take(600) == b"a" * 600
        assert ring.reclaim() == 600 and ring.room() == ring.size - 400
    finally:
        os.close(ring.fd)
        os.close(ring.taken_fd)


def _relay_a_flood(tmp_path, data: bytes, *, budget: int, resume_when_waited_for: bool, room_wait_ns: int):
    """`data` through the relay loop to a drain, the capture process stopped from the start (a busy
    machine gives it no CPU); resumed when the relay says it waits for it, or only after the relay
    is done. Returns (relayed bytes, records, times the relay waited, the capture process)."""
    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    feed = CaptureProcess(writer, budget=budget, live_lint=False, room_wait_ns=room_wait_ns)
    assert feed.ring is not None
    feed.start()
    waited = []
    hurry = feed.hurry

    def on_hurry(at_once: bool = False) -> None:
        if at_once:
            waited.append(True)
            if resume_when_waited_for:
                os.kill(feed.pid, signal.SIGCONT)
        hurry(*([True] if at_once else []))

    feed.hurry = on_hurry
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    way = relay_loop.Way(src_r, dst_w, STDOUT, on_end=lambda: os.close(dst_w))
    relayed: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(dst_r, 1 << 20):
            relayed.append(chunk)
        os.close(dst_r)

    deadline = time.monotonic() + BOUND_S
    os.kill(feed.pid, signal.SIGSTOP)
    while not _all_stopped(feed.pid) and time.monotonic() < deadline:
        time.sleep(0.001)
    relay = threading.Thread(target=relay_loop.relay_ways, args=([way], feed), kwargs={"spin_ns": 0})
    drainer = threading.Thread(target=drain)
    try:
        relay.start()
        drainer.start()
        view = memoryview(data)
        while view:
            view = view[os.write(src_w, view) :]
        os.close(src_w)
        relay.join(BOUND_S)
        drainer.join(BOUND_S)
        assert not relay.is_alive() and not drainer.is_alive()
        waits = len(waited)  # (while relaying: closing the capture hurries it too)
    finally:
        os.kill(feed.pid, signal.SIGCONT)
    assert feed.close(BOUND_S)
    os.close(src_r)
    writer.close()
    return b"".join(relayed), read_records(tmp_path / "cap.jsonl"), waits, feed


LINE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' % (b"x" * 950)


def test_a_flood_beyond_the_capture_pipe_goes_through_the_ring_and_is_captured_whole(tmp_path):
    data = LINE * (6 * 1024 * 1024 // len(LINE)) + b"tail without newline"  # 6 capture pipes' worth
    relayed, records, waited, _ = _relay_a_flood(
        tmp_path, data, budget=16 * 1024 * 1024, resume_when_waited_for=True, room_wait_ns=BOUND_S * 10**9
    )
    assert relayed == data
    assert waited == 0  # (the ring held what the stopped capture could not take: no wait)
    assert not [r for r in records if r.type is RecordType.EVENT]
    assert stream_of(records, Direction.S2C) == data


def test_a_ring_behind_waits_for_a_capture_that_takes_bytes_and_nothing_is_dropped(tmp_path):
    data = LINE * (8 * MIN_SIZE // len(LINE))  # eight rings' worth
    relayed, records, waited, _ = _relay_a_flood(
        tmp_path, data, budget=MIN_SIZE, resume_when_waited_for=True, room_wait_ns=BOUND_S * 10**9
    )
    assert relayed == data and waited >= 1
    assert not [r for r in records if r.type is RecordType.EVENT]
    assert stream_of(records, Direction.S2C) == data


def test_a_capture_that_takes_nothing_costs_one_bounded_wait_and_every_lost_byte_is_recorded(tmp_path):
    data = LINE * (8 * MIN_SIZE // len(LINE))
    relayed, records, waited, feed = _relay_a_flood(
        tmp_path, data, budget=MIN_SIZE, resume_when_waited_for=False, room_wait_ns=10**6
    )
    assert relayed == data  # every byte relayed while the capture took none
    assert waited == 1  # stalled: the rest was dropped without waiting again
    dropped = [r.data for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert dropped and sum(d["bytes"] for d in dropped) == feed.dropped_bytes[STDOUT]
    captured = sum(len(r.raw) + 1 for r in records if r.type is RecordType.MESSAGE)
    broken = sum(d["broken_line_bytes"] for d in dropped)
    assert captured + feed.dropped_bytes[STDOUT] + broken == len(data)  # captured or counted lost
    assert sum(d["count"] for d in dropped) > 0  # (the lines of what was lost are counted too)


def test_the_ring_gives_its_pages_back_once_a_flood_is_over_and_not_before(monkeypatch):
    import tracer.stdio.ring as ring_module

    monkeypatch.setattr(ring_module, "TRIM_AFTER_BYTES", 1)
    ring = Ring.create(4 * MIN_SIZE)
    reader = RingReader(ring.fd, ring.taken_fd, ring.size)
    try:
        for _ in range(3):
            assert _through_a_pipe(b"f" * 60_000, ring) == 60_000
        held = os.fstat(ring.fd).st_blocks
        assert held > 0  # the pages the flood's copies took
        reader.take(60_000)
        ring.reclaim()
        ring.trim()  # copies still wait: nothing is given back
        assert os.fstat(ring.fd).st_blocks == held
        assert reader.take(120_000) == b"f" * 120_000
        ring.reclaim()
        ring.trim()
        assert os.fstat(ring.fd).st_blocks == 0 and os.fstat(ring.fd).st_size == ring.size
        assert _through_a_pipe(b"after", ring) == 5 and reader.take(5) == b"after"  # (and it goes on)
    finally:
        os.close(ring.fd)
        os.close(ring.taken_fd)
