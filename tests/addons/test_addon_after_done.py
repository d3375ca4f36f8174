"""Once the capture addon is done (the proxy stops: Ctrl-C, SIGTERM, SIGHUP), mitmproxy keeps its
connections going until the process ends. Nothing may reach the host then that the capture, already
closed, does not hold: an answer of an exchange closed as capture-stopped, or a new exchange.

Found with 24 real SDK clients flooding `mcptrace proxy` and a SIGTERM mid-flood (/tmp/S9/
killproxy.sh): 1 to 8 answers the clients got were not in the capture, in 4 of 6 runs."""

from __future__ import annotations

import asyncio

from mitmproxy.test import taddons

from addons.mcp_capture import McpCapture
from tests.addon_helpers import INIT, INIT_RESULT, body, post, records, sse_body
from tracer.model import RecordType

SSE = [(b"content-type", b"text/event-stream")]


def _stopped_addon(path, opened):
    """An addon on its recording thread with the exchanges OPENED(addon) left open at done()."""

    async def main():
        addon = McpCapture(background=True)
        with taddons.context(addon) as tctx:
            tctx.configure(addon, mcptrace_output=str(path))
            addon.running()
            flows = opened(addon)
            addon.done()
        return addon, flows

    return asyncio.run(main())


def test_an_sse_answer_still_streaming_when_the_capture_stops_hands_no_further_chunk_to_the_host(tmp_path):
    def opened(addon):
        f = post({**INIT, "id": "s"}, resp=None, resp_headers=SSE)
        addon.request(f)
        addon.responseheaders(f)
        return [f]

    _, (f,) = _stopped_addon(tmp_path / "cap.jsonl", opened)
    late = sse_body(("message", body({**INIT_RESULT, "id": "s"}).decode(), "1"))
    assert list(f.response.stream(late)) == [], "a chunk the capture cannot hold never reaches the host"
    recs = records(tmp_path / "cap.jsonl")
    assert [r.raw for r in recs if r.type is RecordType.MESSAGE] == [body({**INIT, "id": "s"})]
    assert recs[-1].data["event"] == "stream-closed" and recs[-1].data["reason"] == "capture-stopped"


def test_a_buffered_answer_coming_after_the_capture_stopped_is_not_delivered(tmp_path):
    def opened(addon):
        f = post({**INIT, "id": 7}, resp=INIT_RESULT)
        addon.request(f)  # (its answer comes once the capture is closed)
        return [f]

    addon, (f,) = _stopped_addon(tmp_path / "cap.jsonl", opened)
    addon.responseheaders(f)
    addon.response(f)
    assert f.error is not None and not f.killable, "the answer was stopped, not sent on"
    recs = records(tmp_path / "cap.jsonl")
    assert [r.raw for r in recs if r.type is RecordType.MESSAGE] == [body({**INIT, "id": 7})]
    assert recs[-1].type is RecordType.HTTP and recs[-1].http["error"] == "capture-stopped"


def test_a_request_coming_after_the_capture_stopped_is_refused_and_not_recorded(tmp_path):
    addon, _ = _stopped_addon(tmp_path / "cap.jsonl", lambda addon: [])
    f = post({**INIT, "id": 8}, resp=INIT_RESULT)
    addon.request(f)
    assert f.error is not None, "it never reaches the server, whose side effects nobody would see"
    assert not [r for r in records(tmp_path / "cap.jsonl") if r.type is RecordType.MESSAGE]
