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

from tests.proxy_peers import REPO, _stop, capture_records, start_proxy
from tests.sdk_peers import serve_http
from tracer.model import RecordType

TOKEN = "tok-GATEWAY-0d9c8b7a6f5e4d3c"
KEPT = 20  # bytes of the token inside the 64 KiB the capture keeps of the error page
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


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


def test_no_redact_keeps_the_echoed_session_id_and_the_cut_token(tmp_path):
    cap, (sid, *_rest) = _capture(tmp_path, "--no-redact")
    stored = cap.read_bytes()
    assert sid.encode() in stored and TOKEN[:KEPT].encode() in stored
