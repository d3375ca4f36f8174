"""A GET the official SDK server refuses as the session rules ask is no MCP714: the real mcp server
answers a GET for a session it ended (DELETE) with 404 (MCP723's rule: the session is gone), and
lint called that a failed stream negotiation (an error: "must be text/event-stream or 405")."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from tests.proxy_peers import BOUND_S, LegacyHttpSession, lint_findings, mcptrace_proxy
from tests.sdk_peers import sdk_http_server

VERSION = {"MCP-Protocol-Version": "2025-11-25"}


def _request(port: int, method: str, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
    try:
        conn.request(method, "/mcp", headers=headers)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def test_a_get_for_a_session_the_sdk_server_ended_is_answered_404_without_a_finding(tmp_path):
    cap = tmp_path / "cap.jsonl"
    with sdk_http_server() as upstream, mcptrace_proxy(upstream, cap) as url:
        port = urlsplit(url).port
        with LegacyHttpSession(port, "/mcp") as session:
            session.open()
            ended = {"Mcp-Session-Id": session.sid, **VERSION}
            assert _request(port, "DELETE", ended) == 200
            assert _request(port, "GET", {"Accept": "text/event-stream", **ended}) == 404
    found = {f.rule for f in lint_findings(cap)}
    assert not found & {"MCP714", "MCP723"}, found
