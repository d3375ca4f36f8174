"""When the tee's capture process ends before it finished (the OOM killer, a `kill -9` of the wrong
pid), what the relay went on carrying is not in the capture. The tee says so on stderr at exit, but
a capture must say it too: whoever lints or views the file later was not watching that terminal.
The tee then appends one `capture-incomplete` event record to its session, numbered after the last
record the capture process wrote, on a line of its own even when that process died mid-line."""

from __future__ import annotations

import os
import time

import orjson

from tracer.capture import record_to_dict
from tracer.model import Record, RecordType
from tracer.safejson import dumps as safe_dumps

EVENT = "capture-incomplete"
FIRST_WINDOW = 1 << 20  # the tail read first for the last whole record
MAX_WINDOW = 256 << 20  # above the line cap (tracer.lines): a record longer than that is not one


def last_record(fd: int) -> tuple[int | None, bool]:
    """(the seq after which a record of this session goes, whether the file ends inside a line).
    The seq is the last whole record's (0 after the session's header), None if no whole record is
    found in the last MAX_WINDOW bytes."""
    size = os.fstat(fd).st_size
    if size == 0:
        return None, False
    torn = os.pread(fd, 1, size - 1) != b"\n"
    window = FIRST_WINDOW
    while True:
        start = max(0, size - window)
        lines = os.pread(fd, size - start, start).split(b"\n")
        whole = lines[1:-1] if start else lines[:-1]  # (the first piece may be a line's end)
        for line in reversed(whole):
            seq = _seq_of(line)
            if seq is not None:
                return seq, torn
        if start == 0 or window >= MAX_WINDOW:
            return None, torn
        window *= 4


def _seq_of(line: bytes) -> int | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    if obj.get("type") == RecordType.HEADER.value:
        return 0  # (a session's records are numbered from 1 after its header)
    seq = obj.get("seq")
    return seq if type(seq) is int and seq >= 0 else None


def record_capture_incomplete(path: str, conn: str, why: str) -> bool:
    """Append the `capture-incomplete` event; False if it could not be (the note on stderr stays
    the only word of it)."""
    try:  # (as tracer.output.open_output opened it: a symlink swapped in at the path is not followed)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        seq, torn = last_record(fd)
        if seq is None:
            return False
        rec = Record(
            RecordType.EVENT,
            seq=seq + 1,
            t_ns=time.time_ns(),
            transport="stdio",
            conn=conn,
            data={"event": EVENT, "error": why},
        )
        line = (b"\n" if torn else b"") + safe_dumps(record_to_dict(rec)) + b"\n"
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
