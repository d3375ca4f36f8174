"""Known credentials hidden wherever they are echoed (tracer.redact_echo): in place when the JSON
stays JSON, re-written compact when it would not, counted; and total on anything a peer sends."""

from __future__ import annotations

import json

from tracer.http.recorder import Exchange, HttpRecorder
from tracer.model import Record
from tracer.redact_echo import (
    MAX_KNOWN,
    MAX_SESSIONS,
    EchoGuard,
    header_secrets,
    hide_cut_tail,
    hide_echoed,
    hide_kept,
    secret_forms,
    url_secrets,
)


def test_a_key_inside_a_json_string_is_hidden_in_place_keeping_every_other_byte():
    forms = secret_forms([b"sk-live/abc12345"])
    line = b'{"level": "info",  "msg": "using key sk-live\\/abc12345"}'
    assert hide_echoed(line, forms) == (b'{"level": "info",  "msg": "using key <redacted>"}', 1)


def test_a_key_that_would_break_the_json_is_hidden_in_a_compact_rewrite_that_still_parses():
    forms = secret_forms([b'a"b,"c":1234567', b"98765432"])
    line = json.dumps({"x": 'a"b,"c":1234567', "pin": 98765432, "n": 1}).encode()
    out, n = hide_echoed(line, forms)
    assert json.loads(out) == {"x": "<redacted>", "pin": "<redacted>", "n": 1} and n == 2


def test_a_line_that_is_no_json_is_hidden_as_text_and_a_line_without_a_key_is_untouched():
    forms = secret_forms([b"ghp_0123456789abcdef"])
    assert hide_echoed(b"{not json ghp_0123456789abcdef", forms) == (b"{not json <redacted>", 1)
    line = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert hide_echoed(line, forms) == (line, 0)


def test_hostile_bytes_never_raise():
    forms = secret_forms([b"secret-value-1", b"\xff\xfe-not-utf8-secret"])
    for raw in (
        b"",
        b"\xff" * 10,
        b"[" * 100_000 + b"secret-value-1",
        b'{"a":"secret-value-1"' + b"\x00",
        b"\xff\xfe-not-utf8-secret",
    ):
        out, n = hide_echoed(raw, forms)
        assert b"secret-value-1" not in out and isinstance(n, int)


def test_credential_values_are_learned_from_headers_and_urls_but_not_session_ids():
    got = header_secrets(
        [
            ["Authorization", "Bearer tok-1234567890"],
            ["Cookie", "a=cookie-value-1; b=1"],
            ["Mcp-Session-Id", "s" * 20],
            ["X-Api-Key", 12],
            "junk",
            ["Accept", "application/json"],
        ]
    )
    assert got == ["Bearer tok-1234567890", "tok-1234567890", "cookie-value-1"]
    assert url_secrets("https://u:pw%40word99@h/mcp?api_key=k%2F12345678&sessionId=abcdefghijk&x=1") == [
        "pw%40word99",
        "k%2F12345678",
        "pw@word99",
        "k/12345678",
    ]
    assert header_secrets(None) == header_secrets("x") == url_secrets(None) == []


def test_the_guard_remembers_a_bounded_number_of_values():
    guard = EchoGuard()
    guard.learn(f"token-number-{i:06d}" for i in range(MAX_KNOWN * 10))
    assert guard.hide(b"token-number-000000")[1] == 0  # forgotten
    assert guard.hide(f"token-number-{MAX_KNOWN * 10 - 1:06d}".encode())[1] == 1


def test_the_recorder_hides_a_bearer_token_a_non_credential_header_repeats():
    out: list[Record] = []
    rec = HttpRecorder(out.extend, redact=True)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    ex = Exchange(
        "f1", "127.0.0.1:5000", "POST", "http://h/mcp", [["Authorization", "Bearer tok-ABCDEF123"]], body
    )
    rec.request(ex)
    ex.status = 401
    ex.resp_headers = [
        ["WWW-Authenticate", 'Bearer error="invalid_token", error_description="tok-ABCDEF123 expired"']
    ]
    rec.response(ex, b"token tok-ABCDEF123 is expired")
    assert b"tok-ABCDEF123" not in out[-1].raw and out[-1].data == {"redacted": 1}
    assert "tok-ABCDEF123" not in json.dumps(out[-1].http)


def test_a_credential_header_holding_a_lone_surrogate_is_learned_and_hidden_without_raising(tmp_path):
    # a HAR's JSON can hold "\ud800" in a header value: learning it raised UnicodeEncodeError, and
    # the whole HAR was refused ("cannot be read as HTTP Archive") for one hostile header
    guard = EchoGuard()
    guard.learn(header_secrets([["Authorization", "Bearer \ud800abcdefghij"]]))
    assert guard.forms
    assert guard.hide_text("x-echo \ud800abcdefghij") == "x-echo <redacted>"
    assert guard.hide_text("x-echo \udcffabc") == "x-echo \udcffabc"  # (nothing known: as it was)

    from tracer.inputs import open_input

    req = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    entry = {
        "startedDateTime": "2026-12-01T00:00:00.000Z",
        "time": 5,
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:8000/mcp",
            "httpVersion": "HTTP/1.1",
            "headers": [
                {"name": "Content-Type", "value": "application/json"},
                {"name": "Authorization", "value": "Bearer \ud800abcdefghij"},
            ],
            "postData": {"mimeType": "application/json", "text": json.dumps(req)},
        },
        "response": {
            "status": 200,
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"mimeType": "application/json", "text": '{"jsonrpc":"2.0","id":1,"result":{}}'},
        },
    }
    path = tmp_path / "t.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))
    records = [r for r in open_input(str(path)).records if isinstance(r, Record)]
    assert next(r.raw for r in records if r.type.value == "message") == json.dumps(req).encode()


def test_a_cut_tail_that_starts_a_known_value_is_hidden_from_four_bytes_or_half_a_short_value():
    forms = secret_forms([b"ghp_0123456789abcdef", b"pin7"])
    assert hide_cut_tail(b"page ... ghp_01", forms) == (b"page ... <redacted>", 1)
    assert hide_cut_tail(b"page ... ghp_", forms) == (b"page ... <redacted>", 1)  # 4 bytes
    assert hide_cut_tail(b"page ... ghp", forms) == (b"page ... ghp", 0)  # 3: could be any word
    assert hide_cut_tail(b"code pi", forms) == (b"code <redacted>", 1)  # half of a 4-byte value
    assert hide_cut_tail(b"code p", forms) == (b"code p", 0)
    # the longest start wins; a whole value is no tail (hide_echoed's), and a line not cut keeps it
    assert hide_cut_tail(b"ghp_0 ghp_0123", forms) == (b"ghp_0 <redacted>", 1)
    assert hide_kept(b"x ghp_0123", forms) == (b"x ghp_0123", 0)
    assert hide_kept(b"ghp_0123456789abcdef ghp_0123", forms, cut=9) == (b"<redacted> <redacted>", 2)
    for raw in (b"", b"\xff\xfe", b"g", b"ghp_0123456789abcde"):
        hide_kept(raw, forms, cut=1)


def test_session_ids_are_kept_apart_so_a_flood_of_sessions_does_not_push_the_token_out():
    guard = EchoGuard()
    guard.learn(["tok-kept-0123456789"])
    guard.learn_sessions(f"session-{i:08d}" for i in range(MAX_SESSIONS + 10))
    assert guard.hide(b"tok-kept-0123456789")[1] == 1
    assert guard.hide(f"session-{MAX_SESSIONS + 9:08d}".encode())[1] == 1
    assert guard.hide(b"session-00000009")[1] == 0  # (bounded: the oldest went)
    assert len(guard.forms) == MAX_SESSIONS + 1  # (and what they were indexed under with them)
    # (a request's session id header and the legacy transport's ?sessionId=, as written and unquoted)
    guard = EchoGuard()
    guard.learn_exchange([["Mcp-Session-Id", "abcdef0123456789"]], "http://h/m?sessionId=a%2Fb-123456")
    for sid in (b"abcdef0123456789", b"a%2Fb-123456", b"a/b-123456"):
        assert guard.hide(b"id " + sid) == (b"id <redacted>", 1)
    guard = EchoGuard()
    guard.learn_exchange([["Mcp-Session-Id", "short"]], "http://h/?q=1")
    assert guard.forms == ()  # (too short to look for: it would blank words)


def test_thousands_of_live_sessions_ids_are_all_hidden_where_echoed_the_oldest_too():
    # a proxy in front of more than 64 sessions forgot the oldest ones' ids: their echoes were kept
    guard = EchoGuard()
    sids = [f"{i:08x}-4ead-6e5b-0bca-48c38ab8459c" for i in range(MAX_KNOWN * 40)]
    guard.learn_sessions(sids)
    for sid in (sids[0], sids[len(sids) // 2], sids[-1]):
        line = json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": f"{sid} ok"}}
        )
        assert guard.hide(line.encode()) == (line.replace(sid, "<redacted>").encode(), 1)
    assert guard.hide(b"00000000-4ead-6e5b-0bca-48c38ab8459") == (b"00000000-4ead-6e5b-0bca-48c38ab8459", 0)
    assert guard.hide(b"page ... 00000000-4ead-6e", cut=10) == (b"page ... <redacted>", 1)


def test_an_sse_event_left_unterminated_keeps_its_start_with_the_known_token_hidden():
    # (a stream that ends inside an event: its first 200 characters go in the stream-closed event)
    out: list[Record] = []
    rec = HttpRecorder(out.extend, redact=True)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    auth = [["Authorization", "Bearer tok-ABCDEF123456"]]
    ex = Exchange("f1", "127.0.0.1:5000", "POST", "http://h/mcp", auth, body)
    rec.request(ex)
    ex.status, ex.resp_headers = 200, [["Content-Type", "text/event-stream"]]
    tee = rec.response_headers(ex)
    tee.feed(b"data: " + b"a" * 150 + b" tok-ABCDEF123456 " + b"b" * 25 + b" tok-ABCDEF123456\n")
    tee.end("server-closed")
    (closed,) = [r for r in out if r.data and r.data.get("event") == "stream-closed"]
    assert closed.data["unterminated"] == "a" * 150 + " <redacted> " + "b" * 25 + " <redacted>"
