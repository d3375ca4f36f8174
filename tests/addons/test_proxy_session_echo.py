"""A session id stays out of the capture wherever the traffic repeats it outside a body or a header:
in an SSE event's `id:` (a server building its event ids from the session), in the error mitmproxy
records for a response it cannot parse (it quotes the bad line), and, for the legacy HTTP+SSE
transport, on the stream before the client's first POST names it. Its own header and the
`?session_id=` of the endpoint and the POSTs keep the keyed hash the session rules read, so a
legacy capture lints the same as before."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from mcp import Client
from mcp.client.sse import sse_client

from tests.factory import legacy_sse_stream
from tests.proxy_peers import (
    LegacyHttpSession,
    _stop,
    capture_records,
    lint_findings,
    mcptrace_proxy,
    start_proxy,
)
from tests.sdk_peers import serve_http, server_cmd
from tracer.capture import record_to_dict
from tracer.model import RecordType

SID = "sid-4f0c2a9b7e115d3c"
ECHO_SERVER = Path(__file__).resolve().parents[1] / "servers" / "session_echo_http.py"


def test_a_session_id_in_sse_event_ids_and_in_a_parse_error_is_hidden_in_the_capture(tmp_path):
    cap = tmp_path / "cap.jsonl"
    with serve_http([sys.executable, str(ECHO_SERVER), SID], "the session-echo server") as url:
        proc, err, proxy_url = start_proxy(url, cap)
        try:
            with LegacyHttpSession(urlsplit(proxy_url).port, "/mcp") as s:
                s.open()
                _, events = s.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                broken, _ = s.post(
                    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}}
                )
        finally:
            assert _stop(proc) == 0
            err.rest()
            proc.stdout.close()
            proc.stderr.close()
    assert f"id: {SID}-1".encode() in events and broken.status == 502  # (the host got them as sent)
    assert SID.encode() not in cap.read_bytes()
    recs = capture_records(cap)
    assert [r.sse["id"] for r in recs if r.sse and "id" in r.sse] == ["<redacted>-0", "<redacted>-1"]
    priming = [r.data for r in recs if (r.data or {}).get("event") == "sse-event"]
    assert [d["id"] for d in priming] == ["<redacted>-0"]
    errors = [r.http["error"] for r in recs if r.type is RecordType.HTTP and "error" in r.http]
    assert errors == ["Cannot parse HTTP response: Invalid header line: b'X-Trace <redacted>'"]


async def _legacy_session(url: str) -> None:
    with anyio.fail_after(60):
        async with Client(sse_client(url), mode="legacy", cache=None) as c:
            await c.list_tools()
            await c.call_tool("echo", {"text": "hello"})


def test_the_sdk_legacy_sse_servers_session_id_is_one_keyed_hash_in_the_endpoint_and_the_posts(tmp_path):
    cap = tmp_path / "sse.jsonl"
    with (
        serve_http([*server_cmd("--sse", "--port", "0")], "the SDK HTTP+SSE server") as url,
        mcptrace_proxy(url, cap) as proxy_url,
    ):
        anyio.run(_legacy_session, proxy_url)
    stored = cap.read_text()
    assert not re.search(r"[0-9a-f]{32}", stored)  # (the SDK's id: uuid4().hex)
    recs = capture_records(cap)
    endpoint = [r.data for r in recs if (r.data or {}).get("event") == "endpoint"]
    posts = {r.http["url"] for r in recs if r.http and r.http["method"] == "POST"}
    assert len(endpoint) == 1 and posts == {endpoint[0]["url"]}
    assert re.search(r"/messages/\?session_id=hmac:[0-9a-f]{16}$", endpoint[0]["url"])
    # the session rules link the endpoint to the POSTs: the transport's own note is all there is
    assert [(f.rule, f.severity.label) for f in lint_findings(cap)] == [("MCP904", "info")]


def test_a_session_id_the_endpoint_announces_is_hidden_in_events_before_the_first_post():
    out: list = []
    tee = legacy_sse_stream(out)
    log = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"session %s"}}'
    tee.feed(f"event: endpoint\nid: {SID}-0\ndata: /messages?sessionId={SID}\n\n".encode())
    tee.feed(f"event: message\ndata: {log % SID}\n\n".encode())
    stored = [record_to_dict(r) for r in out]
    assert SID not in repr(stored)
    (message,) = [d for d in stored if d["type"] == "message"]
    assert message["text"] == log % "<redacted>" and message["data"] == {"redacted": 1}
    (endpoint,) = [d["data"] for d in stored if (d.get("data") or {}).get("event") == "endpoint"]
    assert re.fullmatch(r"/messages\?sessionId=hmac:[0-9a-f]{16}", endpoint["uri"])
    assert [d["sse"]["id"] for d in stored if "id" in d.get("sse", {})] == ["<redacted>-0"]
