"""How much memory a flood costs the tee, and that it comes back (tracer.stdio.ring, capture_child):
the ring is longer than the capture process's queue, so a flood that outgrows the queue waits in it
rather than holding the relay back, and once the flood is over the ring's pages and the capture
process's heap go back to the system while the tee keeps running (an idle tee holds no flood)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import tracer.stdio.loop as relay_loop
from tests.tracer.stdio.test_tee_flood import _all_stopped
from tests.tracer.stdio.test_tee_relay import BOUND_S, read_records, stream_of
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDOUT
from tracer.stdio.ring import FLOOD_FACTOR, MIN_SIZE, Ring, ring_size

pytestmark = pytest.mark.skipif(
    not tee_splice.available() or Ring.create(MIN_SIZE) is None,
    reason="memfd, eventfd and splice are Linux's",
)

BUDGET = 4 * 1024 * 1024
LINE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' % (b"m" * 950)


def _ring_pages(ring: Ring) -> int:
    return os.fstat(ring.fd).st_blocks * 512


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", "rb") as fh:
        for line in fh:
            if line.startswith(b"VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _until(cond, what: str, show=None) -> None:
    deadline = time.monotonic() + BOUND_S
    while not cond():
        assert time.monotonic() < deadline, what if show is None else f"{what}: {show()}"
        time.sleep(0.01)


class _Tee:
    """The relay loop of one stream into a capture process, its source held open by the test."""

    def __init__(self, tmp_path, *, stopped: bool, budget: int = BUDGET):
        from tracer.stdio.process import CaptureProcess

        self.path = tmp_path / "cap.jsonl"
        self.writer = CaptureWriter(self.path, header_record("stdio"))
        self.feed = CaptureProcess(self.writer, budget=budget, live_lint=False, room_wait_ns=BOUND_S * 10**9)
        assert self.feed.ring is not None
        self.waited: list[bool] = []
        hurry = self.feed.hurry

        def on_hurry(at_once: bool = False) -> None:
            if at_once:  # (the relay waits for the capture: it must not while the ring has room)
                self.waited.append(True)
                os.kill(self.feed.pid, signal.SIGCONT)
            hurry(*([True] if at_once else []))

        self.feed.hurry = on_hurry
        self.feed.start()
        if stopped:  # (a busy machine gives the capture process no CPU for a while)
            os.kill(self.feed.pid, signal.SIGSTOP)
            _until(lambda: _all_stopped(self.feed.pid), "the capture process stopped")
        self.src_r, self.src_w = os.pipe()
        dst_r, dst_w = os.pipe()
        self.dst_r = dst_r
        way = relay_loop.Way(self.src_r, dst_w, STDOUT, on_end=lambda: os.close(dst_w))
        self.relayed: list[bytes] = []
        self.got = 0
        self.relay = threading.Thread(
            target=relay_loop.relay_ways, args=([way], self.feed), kwargs={"spin_ns": 0}
        )
        self.drainer = threading.Thread(target=self._drain)
        self.relay.start()
        self.drainer.start()

    def _drain(self) -> None:
        while chunk := os.read(self.dst_r, 1 << 20):
            self.relayed.append(chunk)
            self.got += len(chunk)
        os.close(self.dst_r)

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.src_w, view) :]

    def finish(self) -> list:
        os.kill(self.feed.pid, signal.SIGCONT)
        os.close(self.src_w)
        self.relay.join(BOUND_S)
        self.drainer.join(BOUND_S)
        assert not self.relay.is_alive() and not self.drainer.is_alive()
        assert self.feed.close(BOUND_S)
        os.close(self.src_r)
        self.writer.close()
        return read_records(self.path)


def test_the_ring_is_several_capture_budgets_long_and_never_shorter_than_one():
    assert ring_size(BUDGET) == FLOOD_FACTOR * BUDGET  # (this machine has far more than 32 x 16 MiB free)
    assert ring_size(1 << 50) == 1 << 50  # (within the memory available: but never below the budget)


def test_a_flood_longer_than_the_capture_budget_waits_in_the_ring_and_the_relay_never_waits(tmp_path):
    data = LINE * (3 * BUDGET // len(LINE))  # three capture budgets, the capture process stopped
    tee = _Tee(tmp_path, stopped=True)
    try:
        tee.send(data)
        _until(lambda: tee.got == len(data), "every byte relayed while the capture process is stopped")
        assert not tee.waited  # the ring held the flood: the relay went on at its own pace
    finally:
        records = tee.finish()
    assert b"".join(tee.relayed) == data
    assert not [r for r in records if r.type is RecordType.EVENT]  # nothing dropped
    assert stream_of(records, Direction.S2C) == data


def test_after_a_flood_the_ring_and_the_capture_process_give_their_memory_back_while_the_tee_runs(tmp_path):
    budget = 16 * 1024 * 1024  # (a queue of megabytes the capture process fills once resumed)
    data = LINE * (3 * budget // len(LINE))  # (under the 64 MB after which memory went back before)
    tee = _Tee(tmp_path, stopped=True, budget=budget)
    try:
        at_rest = _rss(tee.feed.pid)
        tee.send(data)
        _until(lambda: tee.got == len(data), "every byte relayed")
        assert _ring_pages(tee.feed.ring) > 0  # the flood's copies, waiting for the stopped capture
        os.kill(tee.feed.pid, signal.SIGCONT)
        # the source stays open: the tee is idle, not ending
        _until(lambda: _ring_pages(tee.feed.ring) == 0, "the ring's pages given back")
        _until(
            lambda: _rss(tee.feed.pid) <= at_rest + budget // 2,
            "the capture process's heap given back",
            lambda: f"RSS {_rss(tee.feed.pid)} at rest {at_rest}",
        )
    finally:
        records = tee.finish()
    assert stream_of(records, Direction.S2C) == data
