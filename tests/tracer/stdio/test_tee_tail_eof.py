"""The server's last line, unterminated, stays in the capture when its stream ends while copies of a
flood still wait for the capture process (behind): in the relay's memory, or in the ring
(tracer.stdio.ring) where the relay now keeps them."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from unittest import mock

import pytest

import tracer.stdio.loop as relay_loop
from tests.tracer.stdio.test_tee_flood import _all_stopped
from tests.tracer.stdio.test_tee_relay import BOUND_S, read_records, stream_of
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDOUT


def _drain(fd: int, into: list[bytes]) -> None:
    while chunk := os.read(fd, 1 << 20):
        into.append(chunk)
    os.close(fd)


@pytest.mark.skipif(not tee_splice.available(), reason="the relay loop and capture process need Linux pipes")
@pytest.mark.parametrize("ring", [False, True], ids=["copies-in-relay-memory", "copies-in-the-ring"])
def test_a_final_line_without_newline_after_spilled_copies_is_captured_when_the_tee_closes_at_once(
    tmp_path, ring
):
    from tracer.stdio.process import CaptureProcess

    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' % (b"x" * 950)
    data = line * (4 * 1024 * 1024 // len(line)) + b"tail without newline"
    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False, ring=ring)
    assert (feed.ring is not None) is ring
    feed.start()
    closed = threading.Event()
    # The relay gives the flood's memory back (trim) once the copies are in the capture pipe; here
    # that takes until the tee has closed the capture, as a slow trim of a big heap may: whatever
    # the relay tells the capture only after `caught_up` must not be needed by then.
    feed.trim = lambda: closed.wait(BOUND_S)
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    ended = threading.Event()

    def stdout_ended() -> None:  # (as the tee's: the host sees EOF at once)
        os.close(dst_w)
        ended.set()

    caught_up = threading.Event()
    way = relay_loop.Way(src_r, dst_w, STDOUT, on_end=stdout_ended)
    relayed: list[bytes] = []
    deadline = time.monotonic() + BOUND_S
    os.kill(feed.pid, signal.SIGSTOP)  # (a busy machine gives the capture no CPU for a while)
    while not _all_stopped(feed.pid) and time.monotonic() < deadline:
        time.sleep(0.001)
    try:
        with mock.patch.object(relay_loop, "TRIM_AFTER_BYTES", 1):
            relay = threading.Thread(
                target=relay_loop.relay_ways,
                args=([way], feed),
                kwargs={"caught_up": caught_up, "spin_ns": 0},
            )
            drain = threading.Thread(target=_drain, args=(dst_r, relayed))
            relay.start()
            drain.start()
            view = memoryview(data)
            while view:
                view = view[os.write(src_w, view) :]
            os.close(src_w)
            assert ended.wait(BOUND_S)
            # the stream ended while copies wait in the relay's memory; in the ring they are the
            # capture process's already (their notes handed over): nothing waits in the relay
            assert caught_up.is_set() is ring
            os.kill(feed.pid, signal.SIGCONT)
            # What the tee does next: once no copy waits in the relay, it closes the capture.
            assert caught_up.wait(BOUND_S)
            assert feed.close(BOUND_S)
            closed.set()
            relay.join(BOUND_S)
            drain.join(BOUND_S)
    finally:
        with contextlib.suppress(ProcessLookupError):  # (reaped once closed)
            os.kill(feed.pid, signal.SIGCONT)
        closed.set()
    os.close(src_r)
    writer.close()
    assert b"".join(relayed) == data
    records = read_records(tmp_path / "cap.jsonl")
    assert not [r for r in records if r.type is RecordType.EVENT]
    assert stream_of(records, Direction.S2C) == data
    last = [r for r in records if r.type is RecordType.MESSAGE][-1]
    assert last.raw == b"tail without newline" and last.eol is False
