"""The summary's sessions say what the analyser's sessions established, and one per session.

A capture file is written here as the tee writes one (a header, then message records), read back
with the capture reader, and summarised the way the viewer's analysis does: every event of the
analyser goes to the summary.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tracer.analyser import Analyser
from tracer.capture import ReadProblem, read_capture
from tracer.events import SessionClosed
from tracer.model import Analysed
from tracer.summary import SummaryBuilder

T0 = 1_795_984_430_000_000_000


def _write(path: Path, recordings: list[list[tuple[str, dict]]], conn: str = "stdio-1") -> Path:
    """One capture file of RECORDINGS (each a header and its messages, (dir, message) pairs) on one
    connection name, as a host that restarted its server appends to the same file."""
    lines, seq = [], 0
    for messages in recordings:
        lines.append(
            {"type": "header", "format": "mcptrace", "version": 1, "t_ns": T0 + seq, "transport": "stdio"}
        )
        for direction, msg in messages:
            seq += 1
            lines.append(
                {
                    "type": "message",
                    "seq": seq,
                    "t_ns": T0 + seq * 1_000_000,
                    "dir": direction,
                    "transport": "stdio",
                    "conn": conn,
                    "text": orjson.dumps(msg).decode(),
                }
            )
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _summary(path: Path) -> dict:
    b, a = SummaryBuilder(), Analyser()
    with open(path, "rb") as fh:
        for rec in read_capture(fh, str(path)):
            if isinstance(rec, ReadProblem):
                continue
            b.add_record(rec)
            for ev in a.feed(rec):
                _event(b, ev)
    snap_open = b.snapshot(a)  # sessions still open: read from the analyser as it holds them
    for ev in a.finish():
        _event(b, ev)
    assert b.snapshot(a)["sessions"] == snap_open["sessions"]
    return snap_open


def _event(b: SummaryBuilder, ev) -> None:
    if ev.__class__ is Analysed:
        b.add(ev)
        return
    for f in ev.findings:
        b.add_finding(f)
    if ev.__class__ is SessionClosed:
        b.session_closed(ev.session, ev.name, ev.cell)


def _initialize(i: int, version: str, server: str) -> list[tuple[str, dict]]:
    return [
        (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            },
        ),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": i,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}} if server == "first" else {"prompts": {}},
                    "serverInfo": {"name": server, "version": "1"},
                },
            },
        ),
    ]


def test_a_second_initialize_in_a_session_does_not_change_what_the_summary_says_was_negotiated(tmp_path):
    # the analyser keeps the handshake the session opened with; the summary said the last one
    path = _write(
        tmp_path / "c.jsonl", [_initialize(1, "2025-06-18", "first") + _initialize(2, "2025-11-25", "second")]
    )
    (sess,) = _summary(path)["sessions"]
    assert sess["cell"] == "legacy (2025-06-18)"
    assert sess["requested_version"] == sess["negotiated_version"] == "2025-06-18"
    assert sess["server_info"] == {"name": "first", "version": "1"}
    assert sess["server_caps"] == {"tools": {}}


def test_two_recordings_appended_under_one_connection_name_are_two_sessions(tmp_path):
    path = _write(
        tmp_path / "c.jsonl", [_initialize(1, "2025-06-18", "first"), _initialize(1, "2025-11-25", "second")]
    )
    sessions = _summary(path)["sessions"]
    assert [(s["conn"], s["messages"], s["negotiated_version"]) for s in sessions] == [
        ("stdio-1", 2, "2025-06-18"),
        ("stdio-1#2", 2, "2025-11-25"),
    ]
    assert [s["cell"] for s in sessions] == ["legacy (2025-06-18)", "legacy (2025-11-25)"]


def test_replay_and_mock_see_two_recordings_under_one_connection_name_as_two_conversations(tmp_path):
    from tracer.replay.recording import build

    path = _write(
        tmp_path / "c.jsonl", [_initialize(1, "2025-06-18", "first"), _initialize(1, "2025-11-25", "second")]
    )
    with open(path, "rb") as fh:
        recording = build(read_capture(fh, str(path)), str(path))
    convs = recording.conversations
    assert [(c.conn, [ex.conn for ex in c.host_requests]) for c in convs] == [
        ("stdio-1", ["stdio-1"]),
        ("stdio-1#2", ["stdio-1#2"]),
    ]
    assert [c.host_requests[0].answer.result["serverInfo"]["name"] for c in convs] == ["first", "second"]
