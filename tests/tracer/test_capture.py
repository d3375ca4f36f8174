"""Capture format v1: exact bytes, 0600 files, redaction, streaming reads that survive damage."""

from __future__ import annotations

import io
import os
import stat

import orjson

from tests.factory import message as _msg
from tracer.capture import (
    FORMAT_VERSION,
    CaptureWriter,
    ReadProblem,
    header_record,
    read_capture,
    record_from_dict,
    record_to_dict,
)
from tracer.model import Record, RecordType


def _read(path):
    with open(path, "rb") as fh:
        return list(read_capture(fh, str(path)))


def test_writer_creates_the_file_private_and_writes_a_header_first(tmp_path):
    path = tmp_path / "cap.jsonl"
    with CaptureWriter(path, header_record("stdio", command=["python", "s.py"], label="demo")):
        pass
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    head = orjson.loads(path.read_bytes().splitlines()[0])
    assert head["type"] == "header" and head["format"] == "mcptrace" and head["version"] == FORMAT_VERSION
    assert head["command"] == ["python", "s.py"] and head["label"] == "demo"


def test_raw_bytes_round_trip_exactly_text_or_base64(tmp_path):
    path = tmp_path / "cap.jsonl"
    payloads = [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        "caf\u00e9 \u2603".encode(),
        b"\xff\xfe bad utf8",
        b"",
        b'{"a":1}\r',
        b"\x00\x01",
    ]
    with CaptureWriter(path, header_record("stdio")) as w:
        for p in payloads:
            w.write(_msg(p))
    recs = [r for r in _read(path) if r.type is RecordType.MESSAGE]
    assert [r.raw for r in recs] == payloads
    stored = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    assert "b64" in stored[2] and "text" not in stored[2]
    assert stored[0]["text"] == payloads[0].decode()


def test_sequence_numbers_are_monotonic_and_timestamps_in_nanoseconds(tmp_path):
    path = tmp_path / "cap.jsonl"
    with CaptureWriter(path, header_record("stdio")) as w:
        for _ in range(5):
            w.write(_msg(b"{}"))
    recs = [r for r in _read(path) if r.type is RecordType.MESSAGE]
    assert [r.seq for r in recs] == [1, 2, 3, 4, 5]
    assert all(r.t_ns > 1_600_000_000 * 10**9 for r in recs)
    assert [r.t_ns for r in recs] == sorted(r.t_ns for r in recs)


def test_every_record_is_on_disk_as_soon_as_it_is_written(tmp_path):
    path = tmp_path / "cap.jsonl"
    w = CaptureWriter(path, header_record("stdio"))
    w.write(_msg(b'{"x":1}'))
    # read while the writer is still open: the record is already there
    assert len([r for r in _read(path) if r.type is RecordType.MESSAGE]) == 1
    w.close()


def test_credential_headers_are_redacted_by_default_and_kept_with_no_redact(tmp_path):
    headers = [
        ["Authorization", "Bearer s3cret"],
        ["Cookie", "sid=1"],
        ["X-Api-Key", "k"],
        ["Content-Type", "application/json"],
    ]
    rec = _msg(b"{}", http={"method": "POST", "req_headers": headers})
    d = record_to_dict(rec)
    assert d["http"]["req_headers"] == [
        ["Authorization", "Bearer <redacted>"],
        ["Cookie", "sid=<redacted>"],
        ["X-Api-Key", "<redacted>"],
        ["Content-Type", "application/json"],
    ]
    assert record_to_dict(rec, redact=False)["http"]["req_headers"] == headers
    assert rec.http["req_headers"] == headers, "redaction never changes the record in memory"


def test_a_broken_line_is_reported_by_number_and_the_rest_is_read():
    lines = [
        orjson.dumps(header_record("stdio")),
        orjson.dumps({"type": "message", "seq": 1, "t_ns": 1, "dir": "c2s", "text": "{}"}),
        b"{this is not json",
        orjson.dumps({"type": "message", "seq": 2, "t_ns": 2, "dir": "sideways", "text": "{}"}),
        orjson.dumps({"type": "message", "seq": 3, "t_ns": 3, "dir": "s2c", "text": "{}"}),
    ]
    items = list(read_capture(io.BytesIO(b"\n".join(lines) + b"\n"), "cap.jsonl"))
    problems = [i for i in items if isinstance(i, ReadProblem)]
    assert [(p.line, p.torn) for p in problems] == [(3, False), (4, False)]
    assert "direction" in problems[1].message
    assert [r.seq for r in items if isinstance(r, Record) and r.type is RecordType.MESSAGE] == [1, 3]


def test_a_torn_last_line_is_tolerated_as_such():
    data = (
        orjson.dumps(header_record("stdio"))
        + b"\n"
        + orjson.dumps({"type": "message", "seq": 1, "t_ns": 1, "dir": "c2s", "text": "{}"})
        + b"\n"
        + b'{"type":"message","seq":2,"t_'
    )
    items = list(read_capture(io.BytesIO(data), "cap.jsonl"))
    assert isinstance(items[-1], ReadProblem) and items[-1].torn and items[-1].line == 3
    assert sum(isinstance(i, Record) for i in items) == 2


def test_a_newer_format_version_is_read_with_a_notice():
    head = header_record("stdio")
    head["version"] = FORMAT_VERSION + 1
    data = (
        orjson.dumps(head)
        + b"\n"
        + orjson.dumps(
            {"type": "message", "seq": 1, "t_ns": 1, "dir": "c2s", "text": "{}", "future_field": 1}
        )
        + b"\n"
    )
    items = list(read_capture(io.BytesIO(data), "x"))
    assert any(isinstance(i, ReadProblem) and "newer" in i.message for i in items)
    assert any(isinstance(i, Record) and i.type is RecordType.MESSAGE for i in items)


def test_a_plain_message_record_reads_exactly_as_the_general_reader_reads_it():
    # Plain message records (seven members) take a fast path; an extra member the reader ignores
    # sends the same record through the general path, which must agree, or refuse alike.
    text = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    plain = {
        "type": "message",
        "seq": 3,
        "t_ns": 9,
        "dir": "c2s",
        "transport": "stdio",
        "conn": "c1",
        "text": text,
    }
    variants = [
        plain,
        {**plain, "dir": "s2c"},
        {**plain, "conn": 7},
        {**plain, "seq": 3.0},
        {**plain, "seq": True},
        {**plain, "t_ns": "9"},
        {**plain, "dir": "up"},
        {**plain, "dir": None},
        {**plain, "text": None},
        {**plain, "text": 5},
        {**plain, "text": "x\ud800"},
        {**plain, "type": "stderr"},
        {**plain, "type": "nope"},
        {**plain, "transport": None},
        {k: v for k, v in plain.items() if k != "transport"} | {"offset": 0},
    ]
    for obj in variants:
        results = []
        for o in (obj, {**obj, "x-unknown-member": 1}):
            try:
                results.append(record_from_dict(o, line=4, source="s"))
            except ValueError as exc:
                results.append(str(exc))
        assert results[0] == results[1], obj


def test_a_record_whose_type_or_direction_is_a_list_is_a_broken_line_not_a_crash():
    head = orjson.dumps(header_record("stdio"))
    lines = [
        b'{"type":["message"],"seq":1,"t_ns":2,"dir":"c2s","conn":"a","text":"{}"}',
        b'{"type":"message","seq":2,"t_ns":3,"dir":{"d":1},"conn":"a","text":"{}"}',
    ]
    out = list(read_capture(io.BytesIO(b"\n".join([head, *lines]) + b"\n"), "cap"))
    problems = [p for p in out if isinstance(p, ReadProblem)]
    assert [p.line for p in problems] == [2, 3]
    assert "unknown record type" in problems[0].message and "unknown direction" in problems[1].message
