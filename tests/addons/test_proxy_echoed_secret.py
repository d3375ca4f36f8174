"""A credential the proxy has seen in a header or a URL stays out of the capture wherever the traffic
repeats it: a tool call's arguments and its result (the real SDK server's `echo` tool sends it
back, in an SSE event or a JSON body), and an error page. The headers were redacted already; the
bodies kept the value. Each record that had a value hidden stays well-formed and says so
(`data.redacted`); the host and the server still get every byte as sent."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from tests.proxy_peers import LegacyHttpSession, _stop, capture_records, start_proxy
from tests.sdk_peers import sdk_http_server
from tracer.model import RecordType

TOKEN = "tok-ECHOED-5f3a9c0d21"
API_KEY = "key/ECHOED-77b1"  # (sent in the URL; a "/" JSON encoders may escape)


def _traffic(port: int) -> list[bytes]:
    """One session that calls `echo` with the token and the key; returns the answers' bodies."""
    target = f"/mcp?api_key={API_KEY.replace('/', '%2F')}"
    with LegacyHttpSession(port, target, {"Authorization": f"Bearer {TOKEN}"}) as s:
        body = s.open()
        call = {"name": "echo", "arguments": {"text": f"my token is {TOKEN}, my key {API_KEY}"}}
        resp, echoed = s.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert resp.status == 200, echoed
    return [body, echoed]


def _capture(tmp_path, *extra: str, json_response: bool = False):
    cap = tmp_path / "cap.jsonl"
    server_flags = ("--json-response",) if json_response else ()
    with sdk_http_server(*server_flags) as url:
        proc, err, proxy_url = start_proxy(url, cap, *extra)
        try:
            answers = _traffic(urlsplit(proxy_url).port)
        finally:
            assert _stop(proc) == 0
            err.rest()
            proc.stdout.close()
            proc.stderr.close()
    return cap, answers


def _check_hidden(tmp_path, json_response: bool) -> None:
    cap, answers = _capture(tmp_path, json_response=json_response)
    assert TOKEN.encode() in answers[1] and API_KEY.encode() in answers[1]  # the host got it as sent
    stored = cap.read_bytes()
    for value in (TOKEN, API_KEY, API_KEY.replace("/", "\\/")):
        assert value.encode() not in stored, value
    recs = capture_records(cap)
    calls = [r for r in recs if r.type is RecordType.MESSAGE and b"my token is" in r.raw]
    assert len(calls) == 2  # the request and the echo tool's answer
    for rec in calls:
        text = json.dumps(json.loads(rec.raw))  # well-formed JSON still
        assert "my token is <redacted>, my key <redacted>" in text
        assert rec.data["redacted"] == rec.raw.count(b"<redacted>") >= 2  # (the result may repeat it)


def test_a_token_and_key_echoed_by_the_sdk_server_in_an_sse_answer_are_hidden_in_the_capture(tmp_path):
    _check_hidden(tmp_path, json_response=False)


def test_a_token_and_key_echoed_by_the_sdk_server_in_a_json_answer_are_hidden_in_the_capture(tmp_path):
    _check_hidden(tmp_path, json_response=True)


def test_no_redact_keeps_the_echoed_token(tmp_path):
    cap, _ = _capture(tmp_path, "--no-redact")
    assert TOKEN.encode() in cap.read_bytes()
    assert not any(r.data for r in capture_records(cap) if r.type is RecordType.MESSAGE)
