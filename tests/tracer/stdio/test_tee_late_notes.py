"""What the relay hands the capture process after the capture closed (a relay going on after the
session: a process the server started holds its pipes open) or after it went away (killed) is not
in the capture: the tee counts those bytes and says so on stderr at exit, never silently."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.tracer.stdio.test_tee_relay import BOUND_S, read_records
from tracer.capture import CaptureWriter, header_record
from tracer.cli.stdio import _summary
from tracer.model import RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDOUT
from tracer.stdio.notes import Notes

LINE = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def _said(feed, path) -> str:
    r, w = os.pipe()
    notes = Notes(w, capture=str(path))
    _summary(notes, feed, str(path), True)
    notes.close()
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        return fh.read().decode()


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_bytes_relayed_after_the_capture_closed_are_counted_and_said_at_exit(tmp_path):
    from tracer.stdio.process import CaptureProcess

    path = tmp_path / "cap.jsonl"
    writer = CaptureWriter(path, header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    feed.set_conn("stdio-1")
    assert feed.inline(STDOUT, time.time_ns(), LINE)
    assert feed.close(BOUND_S)
    writer.close()
    assert _said(feed, path) == ""  # (a session that ended with its capture: nothing to say)
    # the relay goes on: a grandchild still writes on the server's stdout, and its pipe closes
    feed.inline(STDOUT, time.time_ns(), LINE * 3)
    feed.event("host-stdout-closed", offset=4 * len(LINE))
    feed.eof(STDOUT)
    assert (feed.late_bytes, feed.late_events, feed.late_notes) == (3 * len(LINE), 1, 3)
    said = _said(feed, path)
    assert f"{3 * len(LINE)} bytes and 1 event record came after the capture closed" in said
    assert str(path) in said
    messages = [r for r in read_records(path) if r.type is RecordType.MESSAGE]
    assert [m.raw for m in messages] == [LINE.rstrip(b"\n")]  # (what came before the close is all there)


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_bytes_handed_to_a_capture_process_that_was_killed_are_counted(tmp_path):
    from tracer.stdio.process import CaptureProcess

    path = tmp_path / "cap.jsonl"
    writer = CaptureWriter(path, header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    os.kill(feed.pid, signal.SIGKILL)
    os.waitid(os.P_PID, feed.pid, os.WEXITED | os.WNOWAIT)  # (gone, not yet reaped: close reaps it)
    feed.inline(STDOUT, time.time_ns(), LINE)  # the control pipe has no reader: EPIPE
    assert feed.late_bytes == len(LINE)
    feed.close(BOUND_S)
    writer.close()
    said = _said(feed, path)
    assert "ended before it finished" in said
    assert f"{len(LINE)} bytes came after the capture closed" in said
