"""A capture that records a gap in itself is not linted as clean: a `dropped` event (the tee's
capture fell behind and lost bytes the relay delivered) or a `capture-incomplete` event (its
capture process died mid-session) is a read problem on its line, exit 3 ("read in part"), the same
byte for byte with `--jobs`. Before, such a file said "0 errors" and exited 0: a user linting it in
CI could not tell that part of the session was never analysed."""

from __future__ import annotations

import orjson
import pytest

from tests.tracer.test_lint_jobs import _interleaved_cases, _lint, _write
from tracer.capture import CaptureWriter, header_record
from tracer.model import Record, RecordType
from tracer.stdio.lost import record_capture_incomplete

EXIT_READ_IN_PART = 3


def _event(conn: str, data: dict) -> Record:
    return Record(RecordType.EVENT, transport="stdio", conn=conn, data=data)


def test_a_capture_whose_capture_process_died_is_read_in_part(tmp_path, capsys):
    path = tmp_path / "cap.jsonl"
    writer = CaptureWriter(path, header_record("stdio"))
    writer.write(_event("stdio-7", {"event": "spawn"}))
    writer.close()
    assert record_capture_incomplete(str(path), "stdio-7", "the capture process ended (killed by SIGKILL)")
    rc, out, _ = _lint(capsys, 1, "--format", "json", str(path))
    problems = orjson.loads(out)["problems"]
    assert rc == EXIT_READ_IN_PART
    assert [(p["line"], "incomplete" in p["message"]) for p in problems] == [(3, True)]
    rc, out, _ = _lint(capsys, 1, str(path))
    assert "is incomplete from here on" in out and "1 read problem" in out


@pytest.mark.parametrize(
    "data",
    [
        {"event": "dropped", "stream": "stdout", "offset": 0, "bytes": 12_345, "chunks": 1, "count": 3},
        {"event": "dropped", "stream": "\x1b[31mred", "bytes": "lots"},  # (hostile values: not echoed)
        {"event": "dropped", "stream": "stdout", "bytes": -1},
    ],
)
def test_a_dropped_event_is_a_read_problem_that_never_echoes_a_hostile_value(tmp_path, capsys, data):
    path = tmp_path / "cap.jsonl"
    _write(path, [[_event("c1", data)]])
    rc, out, _ = _lint(capsys, 1, "--format", "json", str(path))
    (problem,) = orjson.loads(out)["problems"]
    assert rc == EXIT_READ_IN_PART and "dropped" in problem["message"]
    assert "\x1b" not in problem["message"] and "lots" not in problem["message"]
    assert ("12,345 bytes of stdout" in problem["message"]) == (data["bytes"] == 12_345)


def test_other_events_are_not_gaps(tmp_path, capsys):
    # (an event whose fields have the wrong types is a broken record at the boundary already)
    path = tmp_path / "cap.jsonl"
    _write(path, [[_event("c1", {"event": "exit", "code": 0}), _event("c1", {"event": "closed"})]])
    rc, out, _ = _lint(capsys, 1, "--format", "json", str(path))
    assert rc == 0 and orjson.loads(out)["problems"] == []


def test_gaps_are_reported_the_same_with_jobs(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MCPTRACE_LINT_POOL_MIN", "0")  # (sharded by connection even when small)
    monkeypatch.setenv("MCPTRACE_LINT_SHARD_MIN", "0")
    records = _interleaved_cases("")
    for at in (len(records) // 3, len(records) // 2, len(records) - 5):
        records.insert(at, _event(records[at].conn, {"event": "dropped", "stream": "stdout", "bytes": 9}))
    path = tmp_path / "gaps.jsonl"
    _write(path, [records])
    one = _lint(capsys, 1, "--format", "json", str(path))
    messages = [p["message"] for p in orjson.loads(one[1])["problems"]]
    assert len(messages) == 3 and all(m.startswith("the capture records that it dropped 9") for m in messages)
    for jobs in (2, 4):
        assert _lint(capsys, jobs, "--format", "json", str(path)) == one
