"""A HAR without `connection` ids (mitmproxy's HAR export writes none): its session-less legacy
sessions are told apart by the same evidence the proxy uses (tracer.http.tracks), each entry read
as a request on a TCP connection of its own; and what a HAR records is read at the HAR's times
(a connection that ends where two sessions met ends then, not when the file is read)."""

from __future__ import annotations

import json

from tests.cases import initialize, initialize_result
from tests.tracer.inputs.test_har_import import entry, har
from tracer.analyser import analyse_all
from tracer.inputs import open_input
from tracer.model import Direction, Record, RecordType

JSON = [["content-type", "application/json"]]
VERSION = [["mcp-protocol-version", "2025-11-25"]]


def _at(ms: int) -> str:
    return f"2026-11-18T11:06:40.{ms:03d}Z"


def _call(ms: int, n: int) -> dict:
    req = {"jsonrpc": "2.0", "id": n, "method": "tools/list"}
    res = {"jsonrpc": "2.0", "id": n, "result": {"tools": []}}
    return entry(
        _at(ms), "POST", req, 200, JSON, {"mimeType": "application/json", "text": json.dumps(res)}, VERSION
    )


def _handshake(ms: int) -> list[dict]:
    res = json.dumps(initialize_result(1))
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    return [
        entry(_at(ms), "POST", initialize(1), 200, JSON, {"mimeType": "application/json", "text": res}),
        entry(_at(ms + 30), "POST", note, 202, [], {"size": 0, "text": ""}, VERSION),
    ]


def _read(tmp_path, entries) -> list[Record]:
    path = tmp_path / "x.har"
    path.write_text(json.dumps(har(entries)))
    return [r for r in open_input(str(path)).records if isinstance(r, Record)]


def _by_conn(recs) -> dict[str, list]:
    out: dict[str, list] = {}
    for r in recs:
        if r.type is RecordType.MESSAGE and r.dir is Direction.C2S:
            obj = json.loads(r.raw)
            out.setdefault(r.conn, []).append(obj.get("id", obj.get("method")))
    return out


def _found(recs) -> list[str]:
    msgs, ends = analyse_all(recs)
    return [f.rule for m in msgs for f in m.findings] + [f.rule for f in ends]


def test_two_interleaved_session_less_sessions_of_a_har_without_connection_ids_are_told_apart(tmp_path):
    entries = [*_handshake(0), _call(60, 2), _call(90, 3), *_handshake(120)]  # A at 3, then B
    entries += [_call(180, 4), _call(210, 2), _call(240, 5), _call(270, 3)]  # A, B, A, B
    recs = _read(tmp_path, entries)
    assert sorted(_by_conn(recs).values(), key=len) == [
        [1, "notifications/initialized", 2, 3],
        [1, "notifications/initialized", 2, 3, 4, 5],
    ]
    assert _found(recs) == []  # before: MCP201 (id 2 and 3 reused), MCP402 (a second initialize)


def test_one_session_of_a_har_without_connection_ids_stays_one_connection(tmp_path):
    recs = _read(tmp_path, [*_handshake(0), _call(60, 2), _call(90, 3)])
    assert len({r.conn for r in recs}) == 1 and _found(recs) == []


def test_a_connection_that_ends_where_har_sessions_met_ends_at_the_hars_time(tmp_path):
    entries = [*_handshake(0), *_handshake(60), _call(120, 2), _call(150, 3)]  # they meet at id 2
    recs = _read(tmp_path, entries)
    closed = [r for r in recs if r.type is RecordType.EVENT and r.data.get("event") == "connection-closed"]
    assert len(closed) == 2
    first, last = min(r.t_ns for r in recs), max(r.t_ns for r in recs)
    assert last - first < 10**9  # the file spans 170 ms: no record at the time it was read
    assert _found(recs) == []


def test_a_continued_session_waits_for_a_handshake_answered_later_in_the_file(tmp_path):
    # B's initialize is answered only after both sessions went on from id 1: the continued
    # connection takes their handshake once that answer is read, and is judged by it (the server
    # declared no prompts: MCP417 for the prompts/list, whichever session sent it)
    late = entry(
        _at(10),
        "POST",
        initialize(1),
        200,
        JSON,
        {"mimeType": "application/json", "text": json.dumps(initialize_result(1))},
        time_ms=30.0,
    )
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    prompts = {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"}
    answer = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"prompts": []}})
    entries = [*_handshake(0), late, _call(20, 2)]
    entries += [entry(_at(45), "POST", note, 202, [], {"size": 0, "text": ""}, VERSION)]
    entries += [
        entry(_at(50), "POST", prompts, 200, JSON, {"mimeType": "application/json", "text": answer}, VERSION)
    ]
    recs = _read(tmp_path, entries)
    assert [r for r in recs if r.type is RecordType.EVENT and r.data.get("event") == "session-continued"]
    assert "MCP417" in _found(recs)


def _initialize_again(ms: int, n: int) -> dict:
    res = json.dumps(initialize_result(n))
    return entry(_at(ms), "POST", initialize(n), 200, JSON, {"mimeType": "application/json", "text": res})


def test_a_session_less_client_that_initializes_again_in_a_har_without_connection_ids_is_flagged(tmp_path):
    # the client numbers its second initialize as its next request (4, after 1-3), as one
    # client's counter does: the same session initializing again (MCP402), not a second client
    entries = [*_handshake(0), _call(60, 2), _call(90, 3), _initialize_again(120, 4), _call(150, 5)]
    recs = _read(tmp_path, entries)
    assert list(_by_conn(recs).values()) == [[1, "notifications/initialized", 2, 3, 4, 5]]
    assert _found(recs) == ["MCP402"]  # (before: a connection of its own, and MCP407 on it)


def test_a_second_client_whose_first_id_continues_another_is_not_taken_for_it(tmp_path):
    # A initialized with id 1 and sent nothing since; B starts its count at 2: no request of A's
    # says its counter went on, so B is a session of its own (no MCP402)
    entries = [*_handshake(0), _initialize_again(60, 2), _call(90, 3)]
    recs = _read(tmp_path, entries)
    assert len(_by_conn(recs)) == 2
    assert "MCP402" not in _found(recs)


def test_concurrent_session_less_clients_each_starting_at_id_1_raise_no_second_initialize(tmp_path):
    entries = [*_handshake(0), _call(60, 2), *_handshake(80), _call(140, 3), _call(150, 2), *_handshake(160)]
    entries += [_call(220, 4), _call(230, 3), _call(240, 2)]
    recs = _read(tmp_path, entries)
    assert len(_by_conn(recs)) == 3
    assert "MCP402" not in _found(recs)


MODERN = [["mcp-protocol-version", "2026-07-28"], ["mcp-method", "tools/call"], ["mcp-name", "echo"]]


def _modern_echo(ms: int, n: int, text: str, time_ms: float) -> dict:
    # the official SDK 2.3 client's and server's bytes (modern era, stateless_http=True)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": f"client-{text}", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    req = {"jsonrpc": "2.0", "id": n, "method": "tools/call"}
    req["params"] = {"name": "echo", "arguments": {"text": text}, "_meta": meta}
    res = {"jsonrpc": "2.0", "id": n}
    res["result"] = {
        "content": [{"text": text, "type": "text"}],
        "isError": False,
        "resultType": "complete",
        "structuredContent": {"result": text},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mcptrace-fixture", "version": "1.0.0"}},
    }
    content = {"mimeType": "application/json", "text": json.dumps(res)}
    return entry(_at(ms), "POST", req, 200, JSON, content, MODERN, time_ms=time_ms)


def test_concurrent_modern_clients_of_a_har_without_connection_ids_are_not_judged_as_one_session(tmp_path):
    # Modern requests stand alone (stateless). Two SDK clients' calls, both id 2, overlapping in
    # time (what stock mitmdump's hardump wrote for 24 concurrent modern SDK clients: /tmp/S9/har.sh).
    # Before, every modern entry went on one connection: 278 false MCP202/MCP204 for those 24
    # clients, here MCP202 (id 2 reused while pending) and MCP204 (id 2 answered twice)
    recs = _read(tmp_path, [_modern_echo(0, 2, "a", 400.0), _modern_echo(100, 2, "b", 20.0)])
    assert _found(recs) == []
    msgs, _ = analyse_all(recs)
    sent = {
        (m.rec.conn, m.seq): m.obj["params"]["arguments"]["text"] for m in msgs if m.kind.value == "request"
    }
    answered = {
        m.obj["result"]["content"][0]["text"]: sent[m.rec.conn, m.partner_seq]
        for m in msgs
        if m.kind.value == "result"
    }
    assert answered == {"a": "a", "b": "b"}, "each answer pairs with its own request"
