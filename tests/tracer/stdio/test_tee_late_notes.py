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
from tracer.stdio.capture import STDIN, STDOUT
from tracer.stdio.notes import Notes

LINE = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def _said(feed, path, server_stopped_reading: bool = False) -> str:
    r, w = os.pipe()
    notes = Notes(w, capture=str(path))
    _summary(notes, feed, str(path), True, server_stopped_reading=server_stopped_reading)
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
    # the cause is the capture process that ended, not one the server started (a false cause: a
    # real tee whose capture process was SIGKILLed mid-session, /tmp/S9/killwriter.py)
    assert "hold its pipes open" not in said and "the relay went on: the capture could not be written" in said


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_host_bytes_after_the_server_stopped_reading_are_said_undelivered_not_a_relay_going_on(tmp_path):
    # Ctrl-C stops the server while the host goes on writing: what the tee reads from the host then
    # reached nobody. Saying "a process the server started may hold its pipes open" was a false cause.
    from tracer.stdio.process import CaptureProcess

    path = tmp_path / "cap.jsonl"
    writer = CaptureWriter(path, header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    feed.set_conn("stdio-1")
    assert feed.close(BOUND_S)
    writer.close()
    request = b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n'
    feed.event("server-stdin-closed", offset=0, note="the server stopped reading")
    feed.inline(STDIN, time.time_ns(), request * 4)
    feed.event("stdin-eof")
    feed.eof(STDIN)
    said = _said(feed, path, server_stopped_reading=True)
    assert f"{4 * len(request)} bytes the host sent after the server had stopped reading" in said
    assert "not delivered to the server" in said
    assert "hold its pipes open" not in said  # (nothing else came late)
    # a grandchild writing on after the session is still said as before, beside it
    feed.inline(STDOUT, time.time_ns(), LINE)
    said = _said(feed, path, server_stopped_reading=True)
    assert f"{len(LINE)} bytes came after the capture closed" in said and "hold its pipes open" in said
