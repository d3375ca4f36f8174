"""HAR files (browser devtools, HTTP Toolkit, Charles, mitmproxy's hardump) become the same
envelopes as a live capture: detected from content, replayed in wire order, SSE bodies split into
events, bad entries reported and skipped, never a crash."""

from __future__ import annotations

import base64
import json

from tests.cases import initialize, initialize_result
from tracer.analyser import analyse_all
from tracer.capture import ReadProblem
from tracer.cli import main
from tracer.inputs import open_input
from tracer.model import Direction, Record, RecordType

URL = "https://mcp.example.com/mcp"
INIT = initialize(client="web")
INIT_RESULT = initialize_result()
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LIST_RESULT = {
    "jsonrpc": "2.0",
    "id": 2,
    "result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]},
}
SESSION = [["mcp-session-id", "s-1"], ["mcp-protocol-version", "2025-11-25"]]


def _h(pairs):
    return [{"name": k, "value": v} for k, v in pairs]


def entry(
    started,
    method,
    body,
    status,
    resp_headers,
    content,
    req_headers=(),
    time_ms=20.0,
    accept="application/json, text/event-stream",
    **extra,
):
    req = {
        "method": method,
        "url": URL,
        "httpVersion": "HTTP/1.1",
        "headers": _h([["accept", accept], ["content-type", "application/json"], *req_headers]),
    }
    if body is not None:
        req["postData"] = {"mimeType": "application/json", "text": json.dumps(body)}
    return {
        "startedDateTime": started,
        "time": time_ms,
        "request": req,
        "response": {"status": status, "headers": _h(resp_headers), "content": content},
        "timings": {"blocked": -1, "dns": -1, "connect": -1, "send": 1, "wait": 5, "receive": time_ms - 6},
        **extra,
    }


def sse_text(*messages) -> str:
    return "".join(f"event: message\r\ndata: {json.dumps(m)}\r\n\r\n" for m in messages)


def har(entries) -> dict:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "entries": entries,
        }
    }


def _read(path):
    items = list(open_input(str(path)).records)
    return [i for i in items if isinstance(i, Record)], [i for i in items if isinstance(i, ReadProblem)]


def _session() -> list[dict]:
    return [
        # out of order on purpose: devtools writes entries as they finish
        entry(
            "2026-11-29T10:00:01.000Z",
            "POST",
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            202,
            [],
            {"size": 0, "mimeType": "", "text": ""},
            req_headers=SESSION,
        ),
        entry(
            "2026-11-29T10:00:00.000+00:00",
            "POST",
            INIT,
            200,
            [["content-type", "application/json"], ["mcp-session-id", "s-1"]],
            {
                "size": 10,
                "mimeType": "application/json",
                "text": base64.b64encode(json.dumps(INIT_RESULT).encode()).decode(),
                "encoding": "base64",
            },
        ),
        entry(
            "2026-11-29T10:00:02.000Z",
            "POST",
            LIST,
            200,
            [["content-type", "text/event-stream"]],
            {"size": 10, "mimeType": "text/event-stream", "text": sse_text(LIST_RESULT)},
            req_headers=SESSION,
        ),
    ]


def test_a_browser_har_becomes_paired_envelopes_in_wire_order(tmp_path):
    path = tmp_path / "devtools-export.json"  # the name is not what decides
    path.write_text(json.dumps(har(_session()), indent=2))
    inp = open_input(str(path))
    inp.fh.close()
    assert inp.format.name == "har"
    recs, problems = _read(path)
    assert not problems
    msgs = [r for r in recs if r.type is RecordType.MESSAGE]
    assert [(r.dir, json.loads(r.raw).get("method") or json.loads(r.raw).get("id")) for r in msgs] == [
        (Direction.C2S, "initialize"),
        (Direction.S2C, 1),
        (Direction.C2S, "notifications/initialized"),
        (Direction.C2S, "tools/list"),
        (Direction.S2C, 2),
    ]
    assert len({r.conn for r in recs}) == 1 and {r.transport for r in recs} == {"http"}
    sse = msgs[-1]
    assert sse.sse["event"] == "message" and sse.http["status"] == 200
    analysed, ends = analyse_all(recs)
    assert analysed[1].partner_seq == analysed[0].seq and analysed[4].partner_seq == analysed[3].seq
    assert [f for a in analysed for f in a.findings] == [] and ends == []
    assert [r.line for r in msgs] == [2, 2, 1, 3, 3], "findings point at the HAR entry"


def test_traffic_that_is_not_mcp_is_left_out(tmp_path):
    other = entry(
        "2026-11-29T10:00:00Z",
        "GET",
        None,
        200,
        [["content-type", "text/html"]],
        {"size": 5, "mimeType": "text/html", "text": "<html>"},
    )
    path = tmp_path / "site.har"
    path.write_text(json.dumps(har([other, *_session()])))
    recs, _ = _read(path)
    assert all("mcp.example.com" in r.http["url"] for r in recs)
    assert len([r for r in recs if r.type is RecordType.MESSAGE]) == 5


def test_an_aborted_request_and_a_broken_entry_are_reported_not_fatal(tmp_path):
    aborted = entry(
        "2026-11-29T10:00:03Z",
        "POST",
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}},
        0,
        [],
        {},
        req_headers=SESSION,
        _error="net::ERR_ABORTED",
    )
    path = tmp_path / "broken.har"
    path.write_text(json.dumps(har([*_session(), aborted, {"nonsense": True}])))
    recs, problems = _read(path)
    assert [p.line for p in problems] == [5]
    failed = [r for r in recs if r.type is RecordType.HTTP and r.http.get("error")]
    assert failed and "ERR_ABORTED" in failed[0].http["error"]


def test_a_file_that_only_looks_like_har_is_a_read_problem(tmp_path):
    path = tmp_path / "cut.har"
    path.write_text('{"log": {"entries": [ {"request": ')
    recs, problems = _read(path)
    assert recs == [] and len(problems) == 1 and "HAR" in problems[0].message


def test_lint_reads_a_har_and_reports_its_findings(tmp_path, capsys):
    bad = entry(
        "2026-11-29T10:00:00Z",
        "POST",
        INIT,
        200,
        [["content-type", "text/plain"]],
        {"size": 2, "mimeType": "text/plain", "text": "ok"},
        accept="application/json",
    )
    path = tmp_path / "bad.har"
    path.write_text(json.dumps(har([bad])))
    assert main(["lint", "--format", "json", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {"MCP702", "MCP704"} <= {f["rule"] for f in doc["findings"]}


def test_an_event_stream_stored_as_latin_1_is_read_back_as_the_utf8_it_was(tmp_path):
    # SSE is UTF-8 by definition; mitmproxy's hardump decodes text/* without a charset as Latin-1
    result = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "héllo ✓"}]}}
    wire = sse_text(result).encode("utf-8")
    entries = [
        *_session()[:2],
        entry(
            "2026-11-29T10:00:02Z",
            "POST",
            LIST,
            200,
            [["content-type", "text/event-stream"]],
            {"size": len(wire), "mimeType": "text/event-stream", "text": wire.decode("latin-1")},
            req_headers=SESSION,
        ),
        entry(
            "2026-11-29T10:00:03Z",
            "POST",
            {**LIST, "id": 3},
            200,
            [["content-type", "text/event-stream"]],
            {"size": len(wire), "mimeType": "text/event-stream", "text": sse_text({**result, "id": 3})},
            req_headers=SESSION,
        ),
    ]
    path = tmp_path / "hardump.har"
    path.write_text(json.dumps(har(entries)))
    recs, _ = _read(path)
    answers = [json.loads(r.raw) for r in recs if r.type is RecordType.MESSAGE and r.dir is Direction.S2C]
    assert [a["result"]["content"][0]["text"] for a in answers[1:]] == ["héllo ✓", "héllo ✓"]


def test_the_request_lines_http_version_is_kept_from_a_har_to_the_spans_and_back_to_a_har(tmp_path):
    from tracer.analyser import Analyser
    from tracer.export import build_spans
    from tracer.export.har import HarBuilder

    entries = _session()
    for e in entries:
        e["request"]["httpVersion"] = "HTTP/2.0"  # devtools writes what the browser spoke
    path = tmp_path / "h2.har"
    path.write_text(json.dumps(har(entries)))
    recs, problems = _read(path)
    assert not problems
    heads = [r.http for r in recs if r.http and "req_headers" in r.http]
    assert heads and all(h["http_version"] == "HTTP/2.0" for h in heads)
    spans = []
    build_spans(recs, spans.append, source=str(path), identity="h2", analyser=Analyser())
    requests = [s for s in spans if "jsonrpc.request.id" in s.attrs]
    assert requests and all(s.attrs["network.protocol.version"] == "2" for s in requests)
    builder = HarBuilder()
    for r in recs:
        builder.feed(r)
    assert {e["request"]["httpVersion"] for e in builder.entries()} == {"HTTP/2.0"}


def _asking_session(messages) -> list[dict]:
    """The session, then a tools/call whose SSE stream (2 s long) carries the server's `ping` at
    once and the tool's result at its end, while the client POSTs its answer to the ping after 1 s.
    MESSAGES: the stream entry's `_eventSourceMessages`."""
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}}
    ping = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    done = {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}
    stream = entry(
        "2026-11-29T10:00:03.000Z",
        "POST",
        call,
        200,
        [["content-type", "text/event-stream"]],
        {"size": 10, "mimeType": "text/event-stream", "text": sse_text(ping, done)},
        req_headers=SESSION,
        time_ms=2000.0,
    )
    stream["_eventSourceMessages"] = messages
    pong = {"jsonrpc": "2.0", "id": 0, "result": {}}
    answer = entry("2026-11-29T10:00:04.000Z", "POST", pong, 202, [], {"size": 0, "text": ""}, SESSION)
    return [*_session(), stream, answer]


def test_sse_events_of_a_har_read_at_their_own_times(tmp_path):
    """An SSE stream's events read at the times `_eventSourceMessages` gives them (mcptrace's HAR
    export writes it): the server's ping goes before the client's answer to it, as on the wire.
    Read at the stream's end, as before, the answer came first: a false MCP203 (an answer to no
    request) and MCP211 (a ping never answered)."""
    t0 = 1_795_946_403.0  # 2026-11-29T10:00:03Z
    timed = [{"time": t0 + 0.01, "eventName": "message"}, {"time": t0 + 2.0, "eventName": "message"}]
    path = tmp_path / "asking.har"
    path.write_text(json.dumps(har(_asking_session(timed))))
    recs, problems = _read(path)
    assert not problems
    order = [json.loads(r.raw) for r in recs if r.type is RecordType.MESSAGE][-3:]
    assert [m.get("method") or ("result", m["id"]) for m in order] == ["ping", ("result", 0), ("result", 3)]
    analysed, ends = analyse_all(recs)
    assert [f.rule for a in analysed for f in a.findings] == [] and ends == []


def test_event_times_a_har_cannot_vouch_for_leave_its_events_at_the_stream_end(tmp_path):
    """Times of the wrong type or count, negative or past any clock: the events read at the stream's
    end, as a HAR without them reads; never a crash."""
    t0 = 1_795_946_403.0
    for bad in (
        [{"time": t0}],
        [{"time": "soon"}, {"time": t0}],
        [{"time": True}, {"time": -1}],
        [{"time": 1e308}, {"time": t0}],
        [{"time": 0.01}, {"time": 2.0}],  # seconds from the stream's start: another clock
        [{"time": (t0 + 0.01) * 1000}, {"time": (t0 + 2) * 1000}],  # milliseconds
        ["x", 5],
        {"time": t0},
    ):
        path = tmp_path / "bad.har"
        path.write_text(json.dumps(har(_asking_session(bad))))
        recs, problems = _read(path)
        assert not problems
        order = [json.loads(r.raw) for r in recs if r.type is RecordType.MESSAGE][-3:]
        assert [m.get("method") or ("result", m["id"]) for m in order] == [
            ("result", 0),
            "ping",
            ("result", 3),
        ]
