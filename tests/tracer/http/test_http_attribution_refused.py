"""Handshakes and answers of session-less legacy clients that only one session can own
(tracer.http.tracks, tracer.http.conns): driven through the mitmproxy addon as in
test_http_attribution, each exchange on a TCP connection of its own."""

from __future__ import annotations

import json

import pytest

from tests.addon_helpers import exchange, post, sse_body, stream
from tests.cases import initialize
from tests.tracer.http.test_http_attribution import (
    LEGACY,
    _analysed,
    _c2s_by_conn,
    _call,
    _events,
    _init,
    _initialized,
    _ports,
    _send,
    capture,  # noqa: F401  (the fixture)
)

REFUSED = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unsupported protocol version"}}


def _refused_by_jsonrpc(addon):
    _send(addon, initialize(1, version="2099-01-01"), REFUSED)


def _refused_by_http(addon):
    f = post(
        initialize(1, version="2099-01-01"),
        headers=LEGACY,
        resp=b"Bad Request",
        status=400,
        resp_headers=[(b"content-type", b"text/plain")],
        client=("127.0.0.1", next(_ports)),
    )
    exchange(addon, f)
    addon.client_disconnected(f.client_conn)


def _refused_in_sse(addon):
    f = post(
        initialize(1, version="2099-01-01"),
        headers=LEGACY,
        resp=None,
        resp_headers=[(b"content-type", b"text/event-stream")],
        client=("127.0.0.1", next(_ports)),
    )
    stream(addon, f, [sse_body((None, json.dumps(REFUSED), None))])
    addon.client_disconnected(f.client_conn)


@pytest.mark.parametrize("refuse", [_refused_by_jsonrpc, _refused_by_http, _refused_in_sse])
def test_a_client_that_retries_a_refused_initialize_has_one_session_judged_by_its_handshake(
    capture,  # noqa: F811
    refuse,
):
    addon, path = capture
    refuse(addon)
    _init(addon)  # the same client tries again (another protocol version): its one session
    _initialized(addon)
    for n in (2, 3):
        _call(addon, n)
    subscribe = {"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe", "params": {"uri": "x:/"}}
    _send(addon, subscribe, {"jsonrpc": "2.0", "id": 4, "result": {}})
    assert _events(path, "unattributed") == [] and _events(path, "session-continued") == []
    assert sorted(_c2s_by_conn(path).values(), key=len) == [[1], [1, "notifications/initialized", 2, 3, 4]]
    # the server's capabilities (tools only) do not allow the subscribe: found on the session
    assert _analysed(path)[1] == ["MCP417"]
    # the refused handshake's connection ended with its TCP connection (nothing joins it)
    closed = {r.conn for r in _events(path, "connection-closed")}
    assert next(c for c, ids in _c2s_by_conn(path).items() if ids == [1]) in closed


def test_an_answer_to_a_servers_request_that_cannot_be_placed_leaves_it_not_never_answered(capture):  # noqa: F811
    addon, path = capture
    _init(addon)  # A
    _initialized(addon)
    _call(addon, 2)
    _init(addon)  # B
    _initialized(addon)
    asked = {"jsonrpc": "2.0", "id": 7, "method": "ping"}  # the server asks A while A's call runs
    done = {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}
    f = post(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        headers=LEGACY,
        resp=None,
        resp_headers=[(b"content-type", b"text/event-stream")],
        client=("127.0.0.1", next(_ports)),
    )
    answered = []

    def answer(_chunk):  # A answers on a TCP connection of its own, which HTTP cannot tie to A
        if not answered:
            answered.append(_send(addon, {"jsonrpc": "2.0", "id": 7, "result": {}}))

    stream(
        addon,
        f,
        [sse_body((None, json.dumps(asked), None)), sse_body((None, json.dumps(done), None))],
        on_chunk=answer,
    )
    (note,) = _events(path, "unattributed")
    assert note.data["answers"] == 7
    assert _analysed(path)[1] == []  # was MCP211: "ping id 7 was never answered"


def test_an_initialize_whose_client_went_away_unanswered_ends_its_connection(capture):  # noqa: F811
    from mitmproxy import flow as mflow

    addon, path = capture
    _init(addon)  # another session of the client, so the lost one is one of several handshakes
    f = post(initialize(1), headers=LEGACY, resp=None, client=("127.0.0.1", next(_ports)))
    addon.request(f)
    addon.client_disconnected(f.client_conn)  # gone before the server answered
    f.error = mflow.Error("client disconnected")
    addon.error(f)
    lost = next(c for c, ids in _c2s_by_conn(path).items() if ids == [1] and c != _first(path))
    # it is no session: it ends (the analysis forgets it) rather than staying open to the end
    assert lost in {r.conn for r in _events(path, "connection-closed")}


def _first(path) -> str:
    return next(iter(_c2s_by_conn(path)))
