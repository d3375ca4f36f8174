"""A session-less legacy client that starts again (a host restarted, a reconnect) against a server
without session ids: its new `initialize` is what a second client starting beside it sends, so it
is not taken as the end of the first session (tracer.http.tracks; `mcptrace help proxy`). What
that costs is honest: no message is placed in the wrong session and no finding is false; where
the new session's ids reach the old one's, the rest is a continued session judged by their common
handshake, so a wrong request is still found there."""

from __future__ import annotations

from tests.cases import initialize, initialize_result
from tests.tracer.http.test_http_attribution import (
    _analysed,
    _c2s_by_conn,
    _call,
    _events,
    _initialized,
    _send,
    capture,  # noqa: F401  (the fixture)
)


def _handshake(addon):
    _send(addon, initialize(1), initialize_result(1, capabilities={"tools": {}}))
    _initialized(addon)


def test_a_client_that_starts_again_is_never_placed_in_its_old_session_and_is_still_judged(capture):  # noqa: F811
    addon, path = capture
    _handshake(addon)
    for n in (2, 3, 4):
        _call(addon, n)
    _handshake(addon)  # the same client, started again: nothing on the wire says the first ended
    for n in (2, 3, 4):  # ids the first session already used: only the new one can send them
        _call(addon, n)
    prompts = {"jsonrpc": "2.0", "id": 5, "method": "prompts/list"}  # no prompts declared: MCP417
    _send(addon, prompts, {"jsonrpc": "2.0", "id": 5, "result": {"prompts": []}})
    by_conn = _c2s_by_conn(path)
    assert sorted(by_conn.values(), key=len) == [
        [5],  # the rest of one of them (both were at 4): a continued session
        [1, "notifications/initialized", 2, 3, 4],
        [1, "notifications/initialized", 2, 3, 4],
    ]
    [note] = _events(path, "session-continued")
    assert "request id 5 continues 2 session-less sessions" in note.data["why"]
    assert _events(path, "unattributed") == []
    assert _analysed(path)[1] == ["MCP417"]  # judged by the handshake both had
