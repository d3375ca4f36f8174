"""A terminal closed under `mcptrace proxy --no-ui` (SIGHUP, as an ssh session that drops) stops it
as Ctrl-C does: exit 0, every message so far in the capture, the open stream closed as
`capture-stopped`. Before, SIGHUP's default action killed the proxy (exit -1) and the exchanges
mitmproxy still held were never written (3 of 2,017 answers a client got, /tmp/H5/sig/sig_proxy.py)."""

from __future__ import annotations

import signal

from tests.addons.test_fault_stops import _assert_session_so_far, _client
from tests.proxy_peers import _stop, capture_records, start_proxy
from tests.sdk_peers import sdk_http_server
from tracer.model import RecordType


def test_sighup_to_the_proxy_mid_call_keeps_every_message_and_closes_the_call_as_capture_stopped(tmp_path):
    cap = tmp_path / "proxy.jsonl"
    with sdk_http_server("--slow-step", "60") as upstream:
        proxy, err, url = start_proxy(upstream, cap)
        client, out = _client("--url", url)
        try:
            out.wait_for("in flight", "the SDK client")  # the answer's stream is open, progress in it
            assert _stop(proxy, signal.SIGHUP) == 0
        finally:
            client.kill()
            client.wait()
            client.stdout.close()
        lines = err.rest()
        proxy.stdout.close()
        proxy.stderr.close()
    text = "\n".join(lines)
    assert "Traceback" not in text and "Error" not in text, text
    assert any("stopped;" in line for line in lines), lines
    records = capture_records(cap)
    _assert_session_so_far(records)
    closed = [
        r.data for r in records if r.type is RecordType.EVENT and r.data.get("event") == "stream-closed"
    ]
    assert [c["reason"] for c in closed][-1:] == ["capture-stopped"], closed
