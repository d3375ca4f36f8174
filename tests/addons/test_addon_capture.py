"""The mitmproxy capture addon, driven with mitmproxy's own test helpers (taddons, tflow, tutils).

JSON answers, notification POSTs, legacy HTTP+SSE sessions, traffic that is not MCP, options,
annotations and listeners. SSE streaming is in test_addon_sse.py.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

from addons.mcp_capture import McpCapture
from tests.addon_helpers import (
    ACCEPT_BOTH,
    INIT,
    INIT_RESULT,
    body,
    exchange,
    flow,
    post,
    records,
    running_capture,
    sse_body,
    stream,
)
from tracer.analyser import analyse_all
from tracer.model import Direction, Kind, RecordType
from tracer.redact import PROCESS_HASHER

REPO = Path(__file__).resolve().parents[2]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


@pytest.fixture
def capture(tmp_path):
    """(addon, taddons context, capture path)."""
    path = tmp_path / "cap.jsonl"
    with running_capture(path) as (addon, tctx):
        yield addon, tctx, path


def test_a_json_answer_becomes_a_request_and_its_paired_response_with_http_metadata(capture):
    addon, _, path = capture
    exchange(
        addon,
        post(
            INIT,
            resp=INIT_RESULT,
            resp_headers=[(b"content-type", b"application/json"), (b"mcp-session-id", b"s-1")],
        ),
    )
    recs = records(path)
    assert [(r.type, r.dir) for r in recs] == [
        (RecordType.MESSAGE, Direction.C2S),
        (RecordType.MESSAGE, Direction.S2C),
    ]
    req, resp = recs
    assert req.raw == body(INIT) and resp.raw == body(INIT_RESULT)
    assert req.http["method"] == "POST" and req.http["url"] == "http://127.0.0.1:8765/mcp"
    assert ["accept", "application/json, text/event-stream"] in req.http["req_headers"]
    assert (
        resp.http["status"] == 200 and ["mcp-session-id", PROCESS_HASHER("s-1")] in resp.http["resp_headers"]
    )
    assert req.conn == resp.conn and req.http["flow"] == resp.http["flow"]
    msgs, _ = analyse_all(recs)
    assert msgs[1].partner_seq == msgs[0].seq and msgs[1].answers_method == "initialize"


def test_a_notification_post_answered_202_is_a_message_then_an_http_record(capture):
    addon, _, path = capture
    exchange(
        addon,
        post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, resp=b"", status=202, resp_headers=[]
        ),
    )
    recs = records(path)
    assert [r.type for r in recs] == [RecordType.MESSAGE, RecordType.HTTP]
    assert recs[1].http["status"] == 202 and recs[1].raw == b""


def test_a_session_keeps_the_connection_its_initialize_used(capture):
    addon, _, path = capture
    sid = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s-1")]
    exchange(addon, post(INIT, resp=INIT_RESULT, resp_headers=sid, client=("127.0.0.1", 50001)))
    later = (ACCEPT_BOTH, (b"mcp-session-id", b"s-1"), (b"mcp-protocol-version", b"2025-11-25"))
    exchange(
        addon,
        post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=later,
            resp=b"",
            status=202,
            resp_headers=[],
            client=("127.0.0.1", 50003),
        ),
    )
    exchange(
        addon,
        post(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers=later,
            resp={"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
            client=("127.0.0.1", 50002),
        ),
    )
    # another client process, same machine, after that session was minted: a connection of its own
    exchange(
        addon,
        post(
            INIT,
            resp=INIT_RESULT,
            resp_headers=[(b"content-type", b"application/json"), (b"mcp-session-id", b"s-2")],
        ),
    )
    conns = [r.conn for r in records(path)]
    assert len(set(conns[:6])) == 1, "one session over three TCP connections"
    assert conns[6] == conns[7] != conns[0]
    msgs, ends = analyse_all(records(path))
    assert [m.era.value for m in msgs[:5]] == ["legacy"] * 5
    assert not [f for m in msgs for f in m.findings] and not ends


def test_a_legacy_http_sse_session_is_followed_and_paired(capture):
    addon, _, path = capture
    get = flow(
        method=b"GET",
        path=b"/sse",
        headers=[(b"accept", b"text/event-stream")],
        resp_headers=[(b"content-type", b"text/event-stream")],
        resp_content=None,
    )
    addon.request(get)
    addon.responseheaders(get)
    tee = get.response.stream
    list(tee(b"event: endpoint\ndata: /message?sessionId=abc\n\n"))
    note = flow(
        path=b"/message?sessionId=abc",
        content=body(INIT),
        headers=[(b"content-type", b"application/json")],
        status=202,
        resp_headers=[],
        resp_content=b"Accepted",
        client=("127.0.0.1", 50010),
    )
    exchange(addon, note)
    list(tee(b"event: message\ndata: " + body(INIT_RESULT) + b"\n\n"))
    list(tee(b""))
    addon.response(get)
    recs = records(path)
    assert {r.transport for r in recs} == {"http+sse"}
    assert len({r.conn for r in recs}) == 1, "the stream and the POSTs to its endpoint are one session"
    kinds = [(r.type.value, (r.data or {}).get("event") or (r.dir.value if r.dir else None)) for r in recs]
    assert kinds == [
        ("event", "stream-open"),
        ("event", "endpoint"),
        ("message", "c2s"),
        ("http", None),
        ("message", "s2c"),
        ("event", "stream-closed"),
        ("event", "closed"),
    ]
    # stored with the session id hashed, as the POSTs' URLs are (MCP902 compares them)
    assert recs[1].data["url"] == f"http://127.0.0.1:8765/message?sessionId={PROCESS_HASHER('abc')}"
    msgs, _ = analyse_all(recs)
    assert msgs[1].partner_seq == msgs[0].seq
    findings = [f.rule for m in msgs for f in m.findings]
    assert findings == [], findings


def test_other_traffic_passes_unrecorded(capture):
    addon, _, path = capture
    exchange(addon, post({"query": "{ user { id } }"}, resp={"data": {}}))  # a GraphQL POST
    exchange(
        addon,
        flow(
            method=b"GET",
            path=b"/index.html",
            resp_headers=[(b"content-type", b"text/html")],
            resp_content=b"<html></html>",
        ),
    )
    news = flow(
        method=b"GET",
        path=b"/feed",
        headers=[(b"accept", b"text/event-stream")],
        resp_headers=[(b"content-type", b"text/event-stream")],
        resp_content=None,
    )
    stream(addon, news, [b"event: news\ndata: hello\n\n"] * 20)
    assert records(path) == []


def test_flows_are_byte_identical_after_the_addon(capture):
    addon, _, _ = capture
    flows = [
        post(INIT, resp=INIT_RESULT),
        post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, resp=b"", status=202, resp_headers=[]
        ),
        post({"query": "x"}, resp={"data": 1}),
        post(
            INIT,
            resp=sse_body(("message", body(INIT_RESULT).decode(), None)),
            resp_headers=[(b"content-type", b"text/event-stream")],
        ),
    ]
    for f in flows:
        before = copy.deepcopy(f.get_state())
        exchange(addon, f)
        after = f.get_state()
        for state in (before, after):
            for key in ("comment", "marked", "metadata"):  # the addon's annotations, nothing else
                state.pop(key)
        assert after == before


def test_annotations_show_method_kind_era_and_findings_in_the_flow_list(capture):
    addon, _, _ = capture
    ok = post(INIT, resp=INIT_RESULT)
    exchange(addon, ok)
    assert ok.comment.startswith("MCP initialize") and "legacy" in ok.comment and "0 findings" in ok.comment
    assert ok.metadata["mcp.era"] == "legacy" and ok.metadata["mcp.kind"] == "request/result"
    assert not ok.marked
    # a modern tools/list without the Mcp-Method header the transport requires (MCP742)
    bad = post(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": MODERN_META}},
        headers=(ACCEPT_BOTH, (b"mcp-protocol-version", b"2026-07-28")),
        resp={"jsonrpc": "2.0", "id": 2, "result": {"tools": [], "resultType": "complete"}},
    )
    exchange(addon, bad)
    assert "MCP742" in bad.comment and bad.metadata["mcp.findings"] >= 1
    assert bad.marked == ":red_circle:"


def test_a_comment_the_user_wrote_is_left_alone(capture):
    addon, _, _ = capture
    f = post(INIT, resp=INIT_RESULT)
    f.comment = "mine"
    exchange(addon, f)
    assert f.comment == "mine" and f.metadata["mcp.method"] == "initialize"


def test_the_filter_option_limits_which_flows_are_looked_at(capture):
    addon, tctx, path = capture
    tctx.configure(addon, mcptrace_filter="~d example.com")
    exchange(addon, post(INIT, resp=INIT_RESULT))
    assert records(path) == []


def test_a_bad_filter_expression_is_an_options_error(capture):
    addon, tctx, _ = capture
    with pytest.raises(exceptions.OptionsError, match="mcptrace_filter"):
        tctx.configure(addon, mcptrace_filter="~nonsense(")


def test_an_output_in_a_missing_directory_is_an_options_error(capture, tmp_path):
    addon, tctx, _ = capture
    with pytest.raises(exceptions.OptionsError, match="no such directory"):
        tctx.configure(addon, mcptrace_output=str(tmp_path / "missing" / "cap.jsonl"))


def test_listeners_get_every_record_and_a_failing_one_does_not_stop_the_capture(capture):
    addon, _, path = capture
    seen = []
    addon.listeners.append(lambda rec: 1 / 0)
    addon.listeners.append(seen.append)
    exchange(addon, post(INIT, resp=INIT_RESULT))
    assert [r.seq for r in seen] == [r.seq for r in records(path)] == [1, 2]


def test_credentials_are_redacted_unless_asked_not_to(capture):
    addon, tctx, path = capture
    exchange(addon, post(INIT, resp=INIT_RESULT, headers=(ACCEPT_BOTH, (b"authorization", b"Bearer s3cret"))))
    assert ["authorization", "Bearer <redacted>"] in records(path)[0].http["req_headers"]
    other = path.with_name("raw.jsonl")
    tctx.configure(addon, mcptrace_output=str(other), mcptrace_redact=False)
    exchange(addon, post(INIT, resp=INIT_RESULT, headers=(ACCEPT_BOTH, (b"authorization", b"Bearer s3cret"))))
    assert ["authorization", "Bearer s3cret"] in records(other)[0].http["req_headers"]


def test_the_addon_file_loads_as_a_stock_mitmproxy_script():
    with taddons.context() as tctx:
        module = tctx.script(str(REPO / "addons" / "mcp_capture.py"))
        (loaded,) = module.addons
        assert type(loaded).__name__ == "McpCapture"
        for name in ("mcptrace_output", "mcptrace_redact", "mcptrace_filter", "mcptrace_annotate"):
            assert name in tctx.options, name
    # a real `mitmdump -s addons/mcp_capture.py` run is in test_proxy_mitm_files.py


def test_a_batch_post_is_one_message(capture):
    addon, _, path = capture
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    exchange(addon, post(batch, resp=[{"jsonrpc": "2.0", "id": 1, "result": {}}]))
    recs = records(path)
    assert len(recs) == 2
    msgs, _ = analyse_all(recs)
    assert msgs[0].kind is Kind.BATCH and len(msgs[0].members) == 2


class _ViewSpy:
    """Stands in for mitmweb's view: records the flows mitmproxy announces as updated."""

    def __init__(self):
        self.updated = []
        self.changed = asyncio.Event()

    def update(self, flows):
        self.updated.extend(flows)
        self.changed.set()


async def test_annotations_are_made_off_the_forwarding_path_and_announced_to_mitmproxys_views(tmp_path):
    addon, spy = McpCapture(), _ViewSpy()
    with taddons.context(addon, spy) as tctx:  # inside a running loop, as in mitmproxy
        tctx.configure(addon, mcptrace_output=str(tmp_path / "cap.jsonl"))
        try:
            f = post(INIT, resp=None, resp_headers=[(b"content-type", b"text/event-stream")])
            stream(addon, f, [sse_body(("message", body(INIT_RESULT).decode(), None))])
            assert f.comment == "", "the hooks returned before any analysis"
            async with asyncio.timeout(10):
                while f not in spy.updated:
                    spy.changed.clear()
                    await spy.changed.wait()
            assert f.comment.startswith("MCP initialize · request/result")
        finally:
            addon.done()


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}',  # an id beyond 64 bits
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800"}}',  # a lone surrogate
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\xff"}}',  # not UTF-8
    ],
)
def test_a_json_rpc_post_orjson_refuses_is_recorded_all_the_same(capture, raw):
    addon, _, path = capture
    exchange(addon, post(raw, resp=b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    recs = records(path)
    assert [(r.type, r.dir) for r in recs][:1] == [(RecordType.MESSAGE, Direction.C2S)]
    assert recs[0].raw == raw
