"""The HTTP face of the mock (in-process, loopback): sessions, SSE or JSON, statuses, the Origin guard."""

from __future__ import annotations

import json

import pytest

from tests.replay_support import note, recording, req, res
from tracer.framing import SseParser
from tracer.http.wire import Url, iter_body, open_request
from tracer.mock.engine import MockServer
from tracer.mock.http import MockHttpServer

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
INIT = req(
    1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h"}}
)


@pytest.fixture
async def mock_url():
    rec = recording(
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25", "capabilities": {}})),
        ("c2s", req(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})),
        ("s2c", note("notifications/message", {"level": "info", "data": "echo called"})),
        ("s2c", res(2, {"content": [{"type": "text", "text": "hi"}]})),
        ("c2s", req(3, "tools/list", {"_meta": MODERN_META})),
        ("s2c", res(3, {"tools": [], "resultType": "complete"})),
    )
    server = MockHttpServer(MockServer(rec), "127.0.0.1", 0)
    host, port = await server.start()
    try:
        yield f"http://{host}:{port}/mcp"
    finally:
        await server.close()


async def call(url: str, method: str, body: object = None, **headers: str):
    hs = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        *[(k.replace("_", "-"), v) for k, v in headers.items()],
    ]
    data = json.dumps(body).encode() if body is not None else b""
    head, reader, writer = await open_request(Url.parse(url), method, hs, data, timeout=10)
    raw = b"".join([c async for c in iter_body(reader, head.headers, until_close=True)])
    writer.close()
    if head.content_type == "text/event-stream":
        events = SseParser().feed(raw)
        return head, [json.loads(e.data) for e in events if e.has_data]
    return head, (json.loads(raw) if raw else None)


async def test_initialize_opens_a_session_named_by_a_fresh_session_id(mock_url):
    head, body = await call(mock_url, "POST", INIT)
    sid = head.headers.get("mcp-session-id")
    assert head.status == 200 and sid and body["result"]["protocolVersion"] == "2025-11-25"
    head, _ = await call(mock_url, "POST", note("notifications/initialized"), Mcp_Session_Id=sid)
    assert head.status == 202
    head, _ = await call(mock_url, "DELETE", Mcp_Session_Id=sid)
    assert head.status == 200


async def test_an_answer_preceded_by_notifications_streams_as_sse_and_a_plain_one_is_json(mock_url):
    head, events = await call(
        mock_url, "POST", req(9, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    )
    assert head.content_type == "text/event-stream"
    assert [e.get("method") or e["id"] for e in events] == ["notifications/message", 9]
    head, body = await call(mock_url, "POST", req(10, "tools/list", {"_meta": MODERN_META}))
    assert head.content_type == "application/json" and body["id"] == 10 and body["result"]["tools"] == []


async def test_an_unknown_modern_method_is_404_with_method_not_found(mock_url):
    head, body = await call(mock_url, "POST", req(4, "prompts/list", {"_meta": MODERN_META}))
    assert head.status == 404 and body["error"]["code"] == -32601 and body["id"] == 4


async def test_a_page_from_another_origin_is_refused(mock_url):
    head, body = await call(mock_url, "POST", INIT, Origin="https://evil.example")
    assert head.status == 403 and "not allowed" in body["error"]["message"]
    head, _ = await call(mock_url, "POST", INIT, Origin="http://localhost:3000")
    assert head.status == 200


async def test_get_without_a_session_and_other_methods_are_refused(mock_url):
    head, _ = await call(mock_url, "GET")
    assert head.status == 405
    head, _ = await call(mock_url, "PUT", {})
    assert head.status == 405
