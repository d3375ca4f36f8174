"""What the proxy keeps of a body cut short, and of a session id a peer repeats, stays free of
secrets. The real SDK server sits behind a gateway (tests/servers/sdk_gateway.py) that answers one
path with a 66 KB error page quoting the bearer token across the 64 KiB the capture keeps of a body
that is no JSON-RPC, and repeats the session id in a trace header; the SDK's `echo` tool repeats
it in its SSE answer. Whoever holds a session id can act in that session (the spec's session
hijacking), so the capture hides it there as it hides a credential, and keeps the keyed hash in
the session's own header, which the session rules and the connections read. The host gets every
byte as sent."""

from __future__ import annotations

import http.client
import json
import sys
from urllib.parse import urlsplit

from tests.cases import initialize
from tests.proxy_peers import REPO, _stop, capture_records, lint_findings, mitmdump, start_proxy
from tests.sdk_peers import serve_http
from tracer.model import Record, RecordType

TOKEN = "tok-GATEWAY-0d9c8b7a6f5e4d3c"
KEPT = 20  # bytes of the token inside the 64 KiB the capture keeps of the error page
INIT = initialize()  # (id 1, client "t", 2025-11-25)


def _traffic(port: int) -> tuple[str, bytes, bytes, str]:
    """One session: initialize, echo a text naming the session id, a POST the gateway refuses.
    Returns the id, the echo's answer, the error page and the trace header, as the host got them."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    base = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {TOKEN}",
    }

    def post(path: str, msg: dict, sid: str | None) -> tuple[http.client.HTTPResponse, bytes]:
        hs = dict(base, **({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"} if sid else {}))
        conn.request("POST", path, json.dumps(msg), hs)
        resp = conn.getresponse()
        return resp, resp.read()

    resp, body = post("/mcp", INIT, None)
    sid = resp.getheader("mcp-session-id")
    trace = resp.getheader("x-trace")
    assert resp.status == 200 and sid, (resp.status, body)
    post("/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    call = {"name": "echo", "arguments": {"text": f"resume with session {sid}"}}
    resp, echoed = post("/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, sid)
    assert resp.status == 200, echoed
    resp, page = post("/mcp/denied", {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid)
    assert resp.status == 403
    conn.close()
    return sid, echoed, page, trace


def _capture(tmp_path, *extra: str):
    cap = tmp_path / "cap.jsonl"
    gateway = [sys.executable, str(REPO / "tests" / "servers" / "sdk_gateway.py"), str(KEPT)]
    with serve_http(gateway, "the SDK server behind a gateway") as url:
        proc, err, proxy_url = start_proxy(url, cap, *extra)
        try:
            got = _traffic(urlsplit(proxy_url).port)
        finally:
            assert _stop(proc) == 0
            err.rest()
            proc.stdout.close()
            proc.stderr.close()
    return cap, got


def test_a_token_cut_by_the_64_kib_body_limit_leaves_no_start_of_it_in_the_kept_part(tmp_path):
    cap, (_sid, _echoed, page, _trace) = _capture(tmp_path)
    assert TOKEN.encode() in page and len(page) > 64 * 1024  # the host got the whole page
    (denied,) = [r for r in capture_records(cap) if r.type is RecordType.HTTP and r.http.get("status") == 403]
    assert len(denied.raw) < len(page) and page.startswith(denied.raw.removesuffix(b"<redacted>"))
    assert not denied.raw.endswith(TOKEN[:KEPT].encode())
    assert denied.raw.endswith(b"x" * 10 + b"denied: <redacted>")
    assert denied.data == {"redacted": 1}


def test_a_session_id_echoed_in_an_sse_answer_and_a_header_is_hidden_and_its_own_header_hashed(tmp_path):
    cap, (sid, echoed, _page, trace) = _capture(tmp_path)
    assert sid in trace and sid.encode() in echoed  # the host got them as sent
    assert sid.encode() not in cap.read_bytes()
    recs = capture_records(cap)
    echoes = [r for r in recs if r.type is RecordType.MESSAGE and b"resume with session" in r.raw]
    assert {r.dir.value for r in echoes} == {"c2s", "s2c"}  # the call, and the tool's answer
    for rec in echoes:
        assert "resume with session <redacted>" in json.dumps(json.loads(rec.raw))
        assert rec.data["redacted"] >= 1
    traced = [
        dict((k.lower(), v) for k, v in r.http["resp_headers"])
        for r in recs
        if r.http and "resp_headers" in r.http
    ]
    traced = [h for h in traced if "x-trace" in h]  # (every answer in the session)
    assert traced and {h["x-trace"] for h in traced} == {"upstream=sdk sess=<redacted>"}
    headers = traced[0]
    hashed = {
        v for r in recs if r.http for k, v in r.http.get("req_headers") or () if k.lower() == "mcp-session-id"
    }
    assert hashed == {headers["mcp-session-id"]} and hashed.pop().startswith("hmac:")
    # one session, one connection, as before: the session rules read the hash
    assert len({r.conn for r in recs if r.type is RecordType.MESSAGE}) == 1
    assert not [f for f in lint_findings(cap) if f.rule.startswith(("MCP4", "MCP72"))]


def test_no_redact_keeps_the_echoed_session_id_and_the_cut_token(tmp_path):
    cap, (sid, *_rest) = _capture(tmp_path, "--no-redact")
    stored = cap.read_bytes()
    assert sid.encode() in stored and TOKEN[:KEPT].encode() in stored


def _imported(path) -> list:
    from tracer.cli.inputs import register_optional_inputs
    from tracer.inputs import open_input

    register_optional_inputs()
    return [r for r in open_input(str(path)).records if isinstance(r, Record)]


def test_a_flow_file_and_a_har_of_the_same_traffic_read_with_the_echoed_id_and_the_cut_token_hidden(tmp_path):
    flows, har = tmp_path / "session.mitm", tmp_path / "session.har"
    gateway = [sys.executable, str(REPO / "tests" / "servers" / "sdk_gateway.py"), str(KEPT)]
    with serve_http(gateway, "the SDK server behind a gateway") as url:
        origin = url.removesuffix("/mcp")
        with mitmdump("--mode", f"reverse:{origin}", "-w", str(flows), "--set", f"hardump={har}") as port:
            sid, *_ = _traffic(port)
    for path in (flows, har):
        recs = _imported(path)
        assert sum(r.type is RecordType.MESSAGE for r in recs) >= 6, path
        for r in recs:
            assert sid.encode() not in (r.raw or b""), (path, r)
            for key in ("req_headers", "resp_headers"):
                for name, value in (r.http or {}).get(key) or ():
                    # (in memory a session's own header keeps its id: the analysis pairs on it, and
                    # the capture writer stores its keyed hash)
                    assert sid not in value or name.lower() == "mcp-session-id", (path, name, value)
        (denied,) = [r for r in recs if r.type is RecordType.HTTP and (r.http or {}).get("status") == 403]
        assert denied.raw.endswith(b"denied: <redacted>") and denied.data == {"redacted": 1}, path
    # the flow file's one client connection is one connection, as before (the session header read)
    assert len({r.conn for r in _imported(flows) if r.type is RecordType.MESSAGE}) == 1
