"""The one-thread relay of both stdio directions (tracer.stdio.loop) is byte-exact both ways in any
chunking, captures every line at its offset, keeps one direction flowing while the other's reader
is full, holds copies for a stalled capture within its budget, waits (bounded) for a capture a whole
budget behind rather than drop, and survives a reader going away."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tracer.stdio.test_tee_relay import BOUND_S, TEE, read_records, split, stream_of
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, RecordType
from tracer.stdio import loop as relay_loop
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDIN, STDOUT, CaptureSink

pytestmark = pytest.mark.skipif(not tee_splice.available(), reason="tee(2)/splice(2) are Linux system calls")


def _write_all(fd: int, chunks: list[bytes]) -> None:
    for c in chunks:
        view = memoryview(c)
        while view:
            view = view[os.write(fd, view) :]
    os.close(fd)


class Pipes:
    """Both directions of a tee on real pipes: feeders write the sources, drains read the destinations."""

    def __init__(
        self,
        up: list[bytes],
        down: list[bytes],
        *,
        up_read_after_down: bool = False,
        stop_up_after: int | None = None,
    ):
        self.up_src, up_w = os.pipe()
        up_r, self.up_dst = os.pipe()
        self.down_src, down_w = os.pipe()
        down_r, self.down_dst = os.pipe()
        self.got = {STDIN: bytearray(), STDOUT: bytearray()}
        self.broken_at: list[int] = []
        self.down_read = threading.Event()
        hold_up = self.down_read if up_read_after_down else None
        self.threads = [
            threading.Thread(target=_write_all, args=(up_w, up)),
            threading.Thread(target=_write_all, args=(down_w, down)),
            threading.Thread(target=self._drain, args=(up_r, STDIN, hold_up, stop_up_after)),
            threading.Thread(target=self._drain, args=(down_r, STDOUT, None, None)),
        ]

    def _drain(self, fd: int, stream: int, hold: threading.Event | None, stop_after: int | None) -> None:
        if hold is not None:
            assert hold.wait(BOUND_S)
        while b := os.read(fd, 1 << 16):
            self.got[stream] += b
            if stop_after is not None and len(self.got[stream]) >= stop_after:
                break  # the reader goes away
        os.close(fd)
        if stream == STDOUT:
            self.down_read.set()

    def ways(self) -> list[relay_loop.Way]:
        return [
            relay_loop.Way(
                self.up_src,
                self.up_dst,
                STDIN,
                on_end=lambda: os.close(self.up_dst),
                on_broken=self.broken_at.append,
            ),
            relay_loop.Way(self.down_src, self.down_dst, STDOUT, on_end=lambda: os.close(self.down_dst)),
        ]

    def start(self) -> None:
        for t in self.threads:
            if t.ident is None:
                t.start()

    def run(self, sink, **kw) -> None:
        self.start()
        relay_loop.relay_ways(self.ways(), sink, **kw)
        for t in self.threads:
            t.join(BOUND_S)
        assert not any(t.is_alive() for t in self.threads)
        os.close(self.up_src)
        os.close(self.down_src)


def capture_sink(path: Path, *, budget: int | None = None, writer_cls=CaptureWriter):
    writer = writer_cls(path, header_record("stdio"))
    sink = CaptureSink(writer, "t", **({"budget": budget} if budget is not None else {}))
    sink.start()
    return sink, writer


def finish(sink, writer, path: Path):
    assert sink.close(BOUND_S)
    writer.close()
    return read_records(path)


def assert_lines_at_their_offsets(records, direction: Direction, data: bytes) -> None:
    pos = 0
    for r in (r for r in records if r.type is RecordType.MESSAGE and r.dir is direction):
        assert r.offset == pos and data[pos : pos + len(r.raw)] == r.raw
        pos += len(r.raw) + (1 if r.eol else 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=100_000),
    st.lists(st.integers(min_value=0, max_value=100_000), max_size=20),
    st.binary(max_size=100_000),
    st.lists(st.integers(min_value=0, max_value=100_000), max_size=20),
    st.booleans(),
)
def test_loop_relays_both_directions_unchanged_and_captures_every_line_at_its_offset(
    up, up_cuts, down, down_cuts, spin
):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cap.jsonl"
        sink, writer = capture_sink(path)
        pipes = Pipes(split(up, up_cuts), split(down, down_cuts))
        pipes.run(sink, spin_ns=relay_loop.SPIN_NS if spin else 0)
        records = finish(sink, writer, path)
    assert bytes(pipes.got[STDIN]) == up and bytes(pipes.got[STDOUT]) == down
    assert stream_of(records, Direction.C2S) == up and stream_of(records, Direction.S2C) == down
    assert_lines_at_their_offsets(records, Direction.C2S, up)
    assert_lines_at_their_offsets(records, Direction.S2C, down)


def test_loop_keeps_one_direction_flowing_while_the_other_destination_is_full(tmp_path):
    # The host reads nothing of what goes up until everything coming down has arrived: a relay
    # that waited on the full upward pipe would never deliver the rest of the downward stream.
    up = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(100_000))
    down = b"".join(b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % i for i in range(100_000))
    sink, writer = capture_sink(tmp_path / "cap.jsonl")
    pipes = Pipes([up[i : i + 4096] for i in range(0, len(up), 4096)], [down], up_read_after_down=True)
    pipes.run(sink)
    records = finish(sink, writer, tmp_path / "cap.jsonl")
    assert bytes(pipes.got[STDOUT]) == down and bytes(pipes.got[STDIN]) == up
    assert stream_of(records, Direction.C2S) == up and stream_of(records, Direction.S2C) == down


def test_loop_holds_copies_for_a_stalled_capture_and_the_capture_ends_complete(tmp_path):
    # Nothing reads the capture until the relay is done: the capture pipe fills, the loop copies
    # the rest into memory (within the budget) and feeds it to the pipe once the capture reads.
    lines = [
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d}}\n' % i
        for i in range(40_000)
    ]
    up = b"".join(lines)
    assert len(up) > 2 * relay_loop.CHUNK  # more than the capture pipe holds
    path = tmp_path / "cap.jsonl"
    sink = CaptureSink(CaptureWriter(path, header_record("stdio")), "t", budget=16 * 1024 * 1024)
    caught_up = threading.Event()
    pipes = Pipes([up[i : i + 65536] for i in range(0, len(up), 65536)], [b"tail without a newline"])
    relay = threading.Thread(target=pipes.run, args=(sink,), kwargs={"caught_up": caught_up, "spin_ns": 0})
    pipes.start()
    relay.start()
    for t in pipes.threads:
        t.join(BOUND_S)
    assert bytes(pipes.got[STDIN]) == up  # everything was relayed...
    assert not caught_up.is_set()  # ...while copies wait for the capture, which has not started
    sink.start()
    relay.join(BOUND_S)
    assert not relay.is_alive() and caught_up.is_set()
    records = finish(sink, sink.writer, path)
    assert stream_of(records, Direction.C2S) == up
    assert stream_of(records, Direction.S2C) == b"tail without a newline"
    assert not [r for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]


class LateCapture(CaptureSink):
    """A capture that gets no CPU (its writer does not run) until the relay says it is about to wait
    for it (`hurry(at_once=True)`), as a capture process on idle CPU of a busy machine."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.asked = 0
        self._started = False

    def hurry(self, at_once: bool = False) -> None:
        if at_once:
            self.asked += 1
            if not self._started:
                self.start()

    def start(self) -> None:
        if not self._started:
            self._started = True
            super().start()


def _flood_beyond(budget: int) -> bytes:
    lines = (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}\n' % i for i in range(200_000)
    )
    up = b"".join(lines)
    assert len(up) > budget + 2 * relay_loop.CHUNK  # more than the budget and the capture pipe hold
    return up


def test_a_flood_beyond_the_budget_waits_for_a_capture_that_keeps_up_and_nothing_is_dropped(tmp_path):
    budget = 2 * 1024 * 1024
    up = _flood_beyond(budget)
    path = tmp_path / "cap.jsonl"
    sink = LateCapture(CaptureWriter(path, header_record("stdio")), "t", budget=budget)
    pipes = Pipes([up[i : i + 65536] for i in range(0, len(up), 65536)], [b"bye\n"])
    relay = threading.Thread(
        target=pipes.run, args=(sink,), kwargs={"spin_ns": 0, "room_wait_ns": BOUND_S * 10**9}
    )
    pipes.start()
    relay.start()
    for t in pipes.threads:
        t.join(BOUND_S)
    sink.start()  # (a relay that never waited has relayed everything by now, dropping what did not fit)
    relay.join(BOUND_S)
    assert not relay.is_alive()
    records = finish(sink, sink.writer, path)
    assert bytes(pipes.got[STDIN]) == up
    assert not [r for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert stream_of(records, Direction.C2S) == up and stream_of(records, Direction.S2C) == b"bye\n"
    assert sink.asked >= 1


class StoppedCapture(LateCapture):
    """A capture that does not run at all until the test starts it (stopped, or starved)."""

    def hurry(self, at_once: bool = False) -> None:
        if at_once:
            self.asked += 1


def test_a_stalled_capture_costs_the_relay_one_bounded_wait_and_its_losses_are_recorded(tmp_path):
    budget = 2 * 1024 * 1024
    up = _flood_beyond(budget)
    path = tmp_path / "cap.jsonl"
    sink = StoppedCapture(CaptureWriter(path, header_record("stdio")), "t", budget=budget)
    pipes = Pipes([up[i : i + 65536] for i in range(0, len(up), 65536)], [b"bye\n"])
    relay = threading.Thread(target=pipes.run, args=(sink,), kwargs={"spin_ns": 0, "room_wait_ns": 10**6})
    pipes.start()
    relay.start()
    for t in pipes.threads:
        t.join(BOUND_S)
    assert bytes(pipes.got[STDIN]) == up  # every byte relayed while the capture took none
    assert sink.asked == 1  # one wait: stalled, the relay dropped the rest without waiting again
    sink.start()
    relay.join(BOUND_S)
    assert not relay.is_alive()
    records = finish(sink, sink.writer, path)
    dropped = [r.data for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert dropped and sum(d["bytes"] for d in dropped) == sink.dropped_bytes[STDIN]
    captured = sum(len(r.raw) + 1 for r in records if r.type is RecordType.MESSAGE and r.dir is Direction.C2S)
    broken = sum(d["broken_line_bytes"] for d in dropped)
    assert captured + sink.dropped_bytes[STDIN] + broken == len(up)  # every byte: captured or counted lost


def test_loop_goes_on_capturing_after_a_reader_goes_away_and_says_where(tmp_path):
    up = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(50_000))
    sink, writer = capture_sink(tmp_path / "cap.jsonl")
    pipes = Pipes([up[i : i + 10_000] for i in range(0, len(up), 10_000)], [b"bye\n"], stop_up_after=100_000)
    pipes.run(sink, spin_ns=0)
    records = finish(sink, writer, tmp_path / "cap.jsonl")
    assert len(pipes.broken_at) == 1 and 100_000 <= pipes.broken_at[0] <= len(up)
    assert bytes(pipes.got[STDIN]) == up[: len(pipes.got[STDIN])]  # what arrived is exact
    assert stream_of(records, Direction.C2S) == up  # the capture still holds all the host sent


def test_spin_goes_on_after_small_chunks_and_pauses_while_the_cpu_is_contended(monkeypatch):
    preempted = [0]
    monkeypatch.setattr(relay_loop, "_preemptions", lambda: preempted[0])
    spin = relay_loop.Spin(relay_loop.SPIN_NS)
    spin.after(1_000, 200)
    assert spin.until == 1_000 + relay_loop.SPIN_NS  # a message went by: keep polling a while
    spin.until = 0
    spin.after(2_000, relay_loop.SPIN_BELOW)
    assert spin.until == 0  # a flood's chunk: leave the CPU to the peers
    now = 2_000 + relay_loop.CHECK_NS
    preempted[0] = 1  # one preemption: normal, a peer woken onto our CPU
    spin.after(now, 200)
    assert spin.until == now + relay_loop.SPIN_NS
    pauses = []
    for _ in range(3):  # another task keeps taking our CPU: pause, longer each time
        now += relay_loop.CHECK_NS
        preempted[0] += relay_loop.BUSY_PREEMPTIONS
        spin.after(now, 200)
        assert spin.until == 0  # sleep in poll like any relay
        pauses.append(spin.paused_until - now)
    assert pauses == [relay_loop.PAUSE_NS, 2 * relay_loop.PAUSE_NS, 4 * relay_loop.PAUSE_NS]
    now = spin.paused_until
    spin.after(now, 200)  # calm again: spin again, and the next pause starts short
    assert spin.until == now + relay_loop.SPIN_NS and spin.pause == 0


def test_spin_is_off_on_a_single_cpu(monkeypatch):
    monkeypatch.setattr(relay_loop.os, "sched_getaffinity", lambda pid: {0})
    assert relay_loop.spin_default() == 0
    spin = relay_loop.Spin(relay_loop.spin_default())
    spin.after(1_000, 10)
    assert spin.until == 0


def test_tee_relays_both_ways_over_a_socket_pair_as_node_based_hosts_give_it(tmp_path):
    # Not pipes: the loop does not apply and a thread per direction relays (same guarantees).
    lines = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(3000)) + b"no newline"
    host, ours = socket.socketpair()
    cap = tmp_path / "cap.jsonl"
    cat = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"]
    p = subprocess.Popen([*TEE, "-q", "-o", str(cap), "--", *cat], stdin=ours, stdout=ours)
    ours.close()
    sender = threading.Thread(target=lambda: (host.sendall(lines), host.shutdown(socket.SHUT_WR)))
    sender.start()
    got = bytearray()
    host.settimeout(BOUND_S)
    while b := host.recv(1 << 16):
        got += b
    sender.join(BOUND_S)
    assert p.wait(BOUND_S) == 0
    host.close()
    records = read_records(cap)
    assert bytes(got) == lines
    assert stream_of(records, Direction.C2S) == lines and stream_of(records, Direction.S2C) == lines
