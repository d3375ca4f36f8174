"""SSE answers are teed while they stream: each chunk goes on unchanged and at once, each event
is recorded as soon as the chunk that completes it arrives, however the bytes are split."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mitmproxy import flow as mflow
from mitmproxy.test import taddons

from addons.mcp_capture import McpCapture
from tests.addon_helpers import INIT, INIT_RESULT, body, post, records, running_capture, sse_body, stream
from tracer.analyser import analyse_all
from tracer.model import Direction, RecordType

SSE = [(b"content-type", b"text/event-stream")]
CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "héllo wörld ✓"}, "_meta": {"progressToken": 7}},
}
PROGRESS = {
    "jsonrpc": "2.0",
    "method": "notifications/progress",
    "params": {"progressToken": 7, "progress": 1},
}
LOG = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "naïve — ok"}}
RESULT = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "héllo wörld ✓"}]}}
EVENTS = [("message", body(m).decode(), str(i)) for i, m in enumerate([PROGRESS, LOG, RESULT], 1)]


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "cap.jsonl"
    with running_capture(path) as (addon, _):
        yield addon, path


def _messages(path: Path):
    return [r for r in records(path) if r.type is RecordType.MESSAGE and r.dir is Direction.S2C]


def test_each_event_is_recorded_as_soon_as_its_chunk_arrives(capture):
    addon, path = capture
    chunks = [sse_body(e) for e in EVENTS]
    seen_after_chunk = []
    stream(
        addon,
        post(CALL, resp=None, resp_headers=SSE),
        chunks,
        on_chunk=lambda _c: seen_after_chunk.append([r.raw for r in _messages(path)]),
    )
    assert seen_after_chunk == [
        [body(PROGRESS)],
        [body(PROGRESS), body(LOG)],
        [body(PROGRESS), body(LOG), body(RESULT)],
    ]


def test_every_chunk_is_handed_on_unchanged_and_no_empty_chunk_is_sent(capture):
    addon, _ = capture
    whole = sse_body(*EVENTS)
    chunks = [whole[i : i + 5] for i in range(0, len(whole), 5)]
    sent = stream(addon, post(CALL, resp=None, resp_headers=SSE), chunks)
    assert sent == chunks, "same bytes, same boundaries: nothing is held back or merged"
    # an empty chunk on a chunked response would be its terminator


def _run_split(cuts: list[int], whole: bytes) -> list[tuple]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cap.jsonl"
        addon = McpCapture()
        with taddons.context(addon) as tctx:
            tctx.configure(addon, mcptrace_output=str(path))
            points = sorted({c % (len(whole) + 1) for c in cuts} | {0, len(whole)})
            chunks = [whole[a:b] for a, b in itertools.pairwise(points) if b > a]
            sent = stream(addon, post(CALL, resp=None, resp_headers=SSE), chunks)
            addon.done()
        assert b"".join(sent) == whole
        return [(r.raw, r.sse["id"], r.sse["event"]) for r in _messages(path)]


WHOLE = sse_body(*EVENTS).replace(b"\r\n", b"\n", 3)  # mixed LF and CRLF line ends
EXPECTED = [(body(m), str(i), "message") for i, m in enumerate([PROGRESS, LOG, RESULT], 1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_chunks_split_anywhere_give_the_same_events(cuts):
    assert _run_split(cuts, WHOLE) == EXPECTED


def test_a_split_inside_a_utf8_sequence_and_between_cr_and_lf_changes_nothing():
    whole = sse_body(*EVENTS)
    inside_utf8 = whole.index("✓".encode()) + 1
    between_cr_lf = whole.index(b"\r\n") + 1
    assert _run_split([inside_utf8, between_cr_lf], whole) == EXPECTED


def test_the_stream_is_framed_by_open_and_close_records_with_time_to_first_event(capture):
    addon, path = capture
    stream(
        addon,
        post(CALL, resp=None, resp_headers=[*SSE, (b"x-accel-buffering", b"no")]),
        [sse_body(e) for e in EVENTS],
    )
    recs = records(path)
    opened = [r for r in recs if (r.data or {}).get("event") == "stream-open"]
    closed = [r for r in recs if (r.data or {}).get("event") == "stream-closed"]
    assert len(opened) == len(closed) == 1
    assert ["x-accel-buffering", "no"] in opened[0].http["resp_headers"]
    data = closed[0].data
    assert data["reason"] == "end" and data["events"] == 3 and data["messages"] == 3
    assert 0 <= data["first_event_ms"] <= data["duration_ms"]
    msgs, _ = analyse_all(recs)
    result = [m for m in msgs if m.kind.value == "result"]
    assert result and result[0].partner_seq == msgs[0].seq


def test_priming_events_are_recorded_and_comments_are_not(capture):
    addon, path = capture
    chunks = [b": keep-alive\n\n", b"id: p-0\ndata:\n\n", b"retry: 3000\n\n", sse_body(EVENTS[2])]
    stream(addon, post(CALL, resp=None, resp_headers=SSE), chunks)
    events = [r.data for r in records(path) if (r.data or {}).get("event") == "sse-event"]
    assert [(e["id"], e["retry"]) for e in events] == [("p-0", None), (None, 3000)]
    assert len(_messages(path)) == 1


def test_a_client_that_closes_the_stream_is_recorded_as_such(capture):
    addon, path = capture
    f = post(CALL, resp=None, resp_headers=SSE)
    stream(addon, f, [sse_body(EVENTS[0])], end=False)
    f.error = mflow.Error("Client disconnected.")
    addon.error(f)
    closed = [r.data for r in records(path) if (r.data or {}).get("event") == "stream-closed"]
    assert closed[0]["reason"] == "client-closed" and closed[0]["events"] == 1


def test_a_buffered_sse_body_gives_the_same_records_as_a_streamed_one(capture, tmp_path):
    addon, path = capture
    stream(
        addon,
        post(INIT, resp=None, resp_headers=SSE),
        [sse_body(("message", body(INIT_RESULT).decode(), None))],
    )
    streamed = [(r.type, r.raw) for r in records(path)]
    # the same exchange where mitmproxy buffered the body (e.g. another addon turned streaming off)
    other = McpCapture()
    out = tmp_path / "buffered.jsonl"
    with taddons.context(other) as tctx:
        tctx.configure(other, mcptrace_output=str(out))
        f = post(INIT, resp=sse_body(("message", body(INIT_RESULT).decode(), None)), resp_headers=SSE)
        other.request(f)
        other.responseheaders(f)
        f.response.stream = False
        other.response(f)
        other.done()
    assert [(r.type, r.raw) for r in records(out)] == streamed
