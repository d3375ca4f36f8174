"""A tee whose capture process was killed mid-session (the OOM killer, a `kill -9` of the wrong pid)
goes on relaying; what it carried after that is not in the capture. The file itself must say so,
not only the tee's stderr at exit: before, the capture ended at the last record the dead process
wrote and read as a complete, clean session (found with a real SDK session: 2,700 of 3,000 answers
missing, `mcptrace lint` said "0 errors")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.tracer.stdio.test_tee_relay import BOUND_S, read_records
from tracer.capture import CaptureWriter, header_record, read_capture
from tracer.model import Record, RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.lost import EVENT, last_record, record_capture_incomplete

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
LINE = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n'


def _children(pid: int) -> list[int]:
    kids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as fh:
                fields = fh.read().rsplit(b") ", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(p))
    return kids


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _wait_for(what, bound_s: float = BOUND_S):
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"not within {bound_s} s")


def _run(tee: subprocess.Popen, cap) -> None:
    try:
        tee.stdin.write(LINE % 1)
        tee.stdin.flush()
        assert tee.stdout.readline() == LINE % 1
        _wait_for(lambda: cap.exists() and b'"id":1' in cap.read_bytes().replace(b'\\"', b'"'))
        # the capture process is the tee's fork: its command line is the tee's own
        mine = _cmdline(tee.pid)
        writer = _wait_for(lambda: [p for p in _children(tee.pid) if _cmdline(p) == mine])
        os.kill(writer[0], signal.SIGKILL)
        for n in (2, 3):  # the relay goes on without it
            tee.stdin.write(LINE % n)
            tee.stdin.flush()
            assert tee.stdout.readline() == LINE % n
        tee.stdin.close()
        assert tee.wait(BOUND_S) == 0
    except BaseException:
        tee.kill()
        raise


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_a_capture_whose_capture_process_was_killed_ends_with_a_capture_incomplete_event(tmp_path):
    cap = tmp_path / "cap.jsonl"
    cmd = [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(cap), "--", sys.executable, "-c", ECHO]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as tee:
        _run(tee, cap)
        said = tee.stderr.read().decode()
    assert "ended before it finished" in said
    recs = read_records(cap)
    last = recs[-1]
    assert last.type is RecordType.EVENT and last.data["event"] == EVENT
    assert "killed by SIGKILL" in last.data["error"]
    assert {r.conn for r in recs if r.type is RecordType.MESSAGE} == {last.conn}  # (its session's)
    seqs = [r.seq for r in recs if r.type is not RecordType.HEADER]
    assert seqs == sorted(set(seqs)) and last.seq == seqs[-2] + 1  # numbered after the dead writer's
    assert b"ping" in b"".join(r.raw for r in recs if r.type is RecordType.MESSAGE)


def test_the_event_goes_on_a_line_of_its_own_after_a_record_cut_short(tmp_path):
    path = tmp_path / "cap.jsonl"
    writer = CaptureWriter(path, header_record("stdio"))
    writer.write(Record(RecordType.EVENT, transport="stdio", conn="stdio-7", data={"event": "spawn"}))
    writer.close()
    with open(path, "ab") as fh:  # the capture process died inside its next record
        fh.write(b'{"type":"message","seq":2,"t_ns":1,"dir":"c2s","transport":"stdio","raw_te')
    assert record_capture_incomplete(str(path), "stdio-7", "the capture process ended")
    with open(path, "rb") as fh:
        items = list(read_capture(fh, str(path)))
    problems = [i for i in items if not isinstance(i, Record)]
    assert len(problems) == 1 and problems[0].line == 3  # the torn record, said by its number
    last = items[-1]
    assert isinstance(last, Record) and last.seq == 2 and last.data["event"] == EVENT


def test_after_a_header_alone_the_event_is_the_sessions_first_record(tmp_path):
    path = tmp_path / "cap.jsonl"
    CaptureWriter(path, header_record("stdio")).close()
    fd = os.open(path, os.O_RDONLY)
    try:
        assert last_record(fd) == (0, False)
    finally:
        os.close(fd)
    assert record_capture_incomplete(str(path), "stdio-7", "gone")
    assert [r.seq for r in read_records(path) if r.type is not RecordType.HEADER] == [1]


def test_a_file_with_no_whole_record_is_left_as_it_is(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b"not a capture")
    assert not record_capture_incomplete(str(path), "stdio-7", "gone")
    assert path.read_bytes() == b"not a capture"
