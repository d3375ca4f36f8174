"""The mock under hostile hosts: values orjson cannot write, unknown and endless sessions, many big
bodies at once. Over real loopback HTTP (in-process server) and a real `mcptrace mock` over stdio."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.replay_support import recording, req, res
from tests.tracer.cli.test_mock_cli import serve, small_capture
from tests.tracer.mock.test_mock_http import INIT, MODERN_META, call
from tracer.http.wire import Url, iter_body, open_request
from tracer.mock.engine import MockServer
from tracer.mock.http import MockHttpServer

BIG_ID = 2**65  # beyond 64 bits: orjson refuses to write it
HOSTILE = {
    "a 65-bit id": b'{"jsonrpc":"2.0","id":36893488147419103232,"method":"tools/list"}',
    "a lone surrogate as the tool name": b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"\\ud800"}}',
    "params nested 300 deep": b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":'
    + b"[" * 300
    + b"]" * 300
    + b"}}",
    "a 65-bit integer in the arguments": b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo",'
    b'"arguments":{"n":36893488147419103232}}}',
}


def _recording():
    return recording(
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25", "capabilities": {}})),
        ("c2s", req(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})),
        ("s2c", res(2, {"content": [{"type": "text", "text": "hi"}]})),
        ("c2s", req(3, "tools/list")),
        ("s2c", res(3, {"tools": []})),
    )


async def _started(**limits) -> tuple[MockHttpServer, str]:
    server = MockHttpServer(MockServer(_recording()), "127.0.0.1", 0, **limits)
    host, port = await server.start()
    return server, f"http://{host}:{port}/mcp"


async def _post_raw(url: str, body: bytes, *headers: tuple[str, str]):
    hs = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"), *headers]
    head, reader, writer = await open_request(Url.parse(url), "POST", hs, body, timeout=10)
    raw = b"".join([c async for c in iter_body(reader, head.headers, until_close=True)])
    writer.close()
    return head, raw


@pytest.mark.parametrize("what", list(HOSTILE))
async def test_a_request_orjson_cannot_write_back_gets_a_complete_answer_over_http(what, caplog):
    server, url = await _started()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            _head, raw = await _post_raw(url, HOSTILE[what])
            answer = json.loads(raw)  # a whole JSON document, the caller's id in it
            assert answer["id"] == json.loads(HOSTILE[what])["id"]
            assert "result" in answer or answer["error"]["code"] in (-32601, -32602, -32603)
            _head, again = await call(url, "POST", req(3, "tools/list"))  # and the mock goes on serving
            assert again["result"] == {"tools": []}
        assert not caplog.records, [r.getMessage() for r in caplog.records]
    finally:
        await server.close()


def test_over_stdio_a_surrogate_tool_name_and_a_65_bit_id_are_answered_and_the_mock_goes_on(tmp_path):
    lines = [
        HOSTILE["a lone surrogate as the tool name"].decode(),
        HOSTILE["a 65-bit id"].decode(),
        HOSTILE["params nested 300 deep"].decode(),
        req(3, "tools/list"),
    ]
    _code, out, err = serve(small_capture(tmp_path), INIT, *lines)
    by_id = {m["id"]: m for m in out if "id" in m}
    assert by_id[7]["error"]["code"] == -32602  # no recorded tools/call has that name: the usual miss
    assert by_id[BIG_ID]["result"]["tools"][0]["name"] == "slow"
    assert by_id[8]["error"]["code"] == -32602
    assert by_id[3]["result"]["tools"][0]["name"] == "slow", "served after the hostile ones"
    assert "internal error" not in err


async def test_a_legacy_request_naming_an_unknown_session_gets_404_and_a_modern_one_is_served():
    server, url = await _started()
    try:
        head, body = await call(url, "POST", req(3, "tools/list"), Mcp_Session_Id="never-minted")
        assert head.status == 404 and body["id"] == 3
        head, _ = await call(url, "GET", Mcp_Session_Id="never-minted")
        assert head.status == 404
        head, body = await call(url, "POST", req(4, "tools/list", {"_meta": MODERN_META}), Mcp_Session_Id="x")
        assert head.status == 200 and body["id"] == 4, "2026-07-28 has no sessions: the header is ignored"
        assert not server.sessions
    finally:
        await server.close()


async def test_the_session_table_is_bounded_the_least_recently_used_idle_session_goes_first():
    server, url = await _started(max_sessions=3)
    try:
        sids = []
        for _ in range(20):
            head, body = await call(url, "POST", INIT)
            assert head.status == 200 and body["result"]["protocolVersion"] == "2025-11-25"
            sids.append(head.headers.get("mcp-session-id"))
        assert len(set(sids)) == 20 and len(server.sessions) == 3
        assert list(server.sessions) == sids[-3:]
        head, _ = await call(url, "POST", req(3, "tools/list"), Mcp_Session_Id=sids[0])
        assert head.status == 404, "a forgotten session is unknown: the host starts a new one"
        head, body = await call(url, "POST", req(3, "tools/list"), Mcp_Session_Id=sids[-1])
        assert head.status == 200 and body["result"] == {"tools": []}
    finally:
        await server.close()


async def test_an_idle_session_past_the_timeout_is_forgotten_and_a_busy_table_answers_503():
    server, url = await _started(max_sessions=1, idle_s=600)
    try:
        head, _ = await call(url, "POST", INIT)
        first = head.headers.get("mcp-session-id")
        server.sessions[first].last_used -= 601  # as if ten minutes went by
        head, _ = await call(url, "POST", INIT)
        second = head.headers.get("mcp-session-id")
        assert head.status == 200 and list(server.sessions) == [second]
        # a session with an open server stream is in use: it is not forgotten to make room
        stream_head, _reader, writer = await open_request(
            Url.parse(url),
            "GET",
            [("Mcp-Session-Id", second), ("Accept", "text/event-stream")],
            b"",
            timeout=10,
        )
        assert stream_head.status == 200
        head, body = await call(url, "POST", INIT)
        assert head.status == 503 and body["error"]["code"] == -32603 and list(server.sessions) == [second]
        writer.close()
    finally:
        await server.close()


async def test_request_bodies_held_at_once_are_bounded_in_total():
    server, url = await _started(body_budget=1000)
    u = Url.parse(url)
    try:
        body = json.dumps(
            req(2, "tools/call", {"name": "echo", "arguments": {"text": "hi", "pad": "x" * 700}})
        ).encode()
        reader, writer = await asyncio.open_connection(u.host, u.port)
        writer.write(
            f"POST {u.target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:-10]
        )
        await writer.drain()
        for _ in range(10_000):  # until the server holds the first body's bytes (no sleeps: yield to it)
            if server.bodies.held >= len(body) - 10:
                break
            await asyncio.sleep(0)
        assert server.bodies.held >= len(body) - 10
        head, _raw = await _post_raw(url, json.dumps(req(3, "tools/list", {"pad": "y" * 300})).encode())
        assert head.status == 503, "a second body does not fit beside the first"
        writer.write(body[-10:])
        await writer.drain()
        answer = await reader.read(65536)
        assert answer.startswith(b"HTTP/1.1 200") and b'"id":2' in answer, "the first one is still answered"
        writer.close()
        head, _raw = await _post_raw(url, json.dumps(req(3, "tools/list")).encode())
        assert head.status == 200 and server.bodies.held == 0
    finally:
        await server.close()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)  # (JSON has neither)
    | st.text(alphabet=st.characters(codec=None, exclude_categories=())),  # lone surrogates included
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "arguments", "_meta", "k"]), kids, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(st.integers(min_value=-(2**80), max_value=2**80), st.text()),
    st.sampled_from(["tools/call", "tools/list", "ping", "initialize", "\ud800"]),
    json_values,
    st.integers(min_value=0, max_value=400),
)
def test_any_request_gets_exactly_one_complete_answer_with_its_id(rid, method, params, depth):
    for _ in range(depth):
        params = [params]
    line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()

    async def run() -> list[dict]:
        session = MockServer(_recording()).session()
        out: list[bytes] = []

        async def emit(data: bytes) -> None:
            out.append(data)

        await session.receive(line, emit)
        await session.drain(5)
        await session.close()
        return [json.loads(d) for d in out]

    answers = [m for m in asyncio.run(run()) if "method" not in m]
    assert len(answers) == 1 and answers[0]["id"] == rid


def test_requests_that_wait_for_a_cancel_are_bounded_per_session(monkeypatch):
    from tracer.mock import engine

    monkeypatch.setattr(engine, "MAX_PENDING", 3)
    rec = recording(
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", req(2, "tools/call", {"name": "slow"})),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
    )

    async def run() -> tuple[int, list[dict]]:
        session = MockServer(rec).session()
        out: list[bytes] = []

        async def emit(data: bytes) -> None:
            out.append(data)

        for i in range(10, 15):  # the recorded server never answered: each waits for the host's cancel
            await session.receive(json.dumps(req(i, "tools/call", {"name": "slow"})).encode(), emit)
        await session.drain(5)
        pending = len(session.tasks)
        await session.close()
        return pending, [json.loads(d) for d in out]

    pending, answers = asyncio.run(run())
    assert pending == 3
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(13, -32603), (14, -32603)]


def test_over_stdio_a_megabyte_method_costs_one_short_error_not_its_echo(tmp_path):
    method = "x" * 1_000_000
    _code, out, err = serve(small_capture(tmp_path), INIT, req(5, method), req(3, "tools/list"))
    by_id = {m["id"]: m for m in out if "id" in m}
    answer = by_id[5]["error"]
    assert answer["code"] == -32601 and "more characters" in answer["message"]
    assert (
        len(json.dumps(by_id[5])) < 10_000
    )  # (before: the million characters came back, and went to stderr)
    assert len(err) < 10_000
    assert by_id[3]["result"]["tools"][0]["name"] == "slow", "served after it"


async def test_over_http_an_empty_batch_and_a_batch_of_garbage_each_get_invalid_request_errors():
    server, url = await _started()
    try:
        head, raw = await _post_raw(url, b"[]")
        assert head.status == 400 and json.loads(raw)["error"]["code"] == -32600
        head, raw = await _post_raw(url, b'[1, "x"]')
        assert head.status == 200 and [a["error"]["code"] for a in json.loads(raw)] == [-32600, -32600]
    finally:
        await server.close()
