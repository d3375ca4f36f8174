"""From a capture to the host's script: exchanges, what the server sent around them, and the waits."""

from __future__ import annotations

from tests.replay_support import note, recording, records, req, res
from tests.sdk_peers import CAPTURES
from tracer.model import Analysed
from tracer.replay.recording import Exchange, build, load
from tracer.replay.script import plan


def legacy_capture():
    return load(str(CAPTURES / "sdk-stdio-legacy.jsonl"))


def test_a_real_capture_pairs_every_request_and_knows_the_cancelled_one():
    rec = legacy_capture()
    reqs = rec.host_requests()
    assert reqs[0].method == "initialize" and reqs[0].answer is not None
    cancelled = [ex for ex in reqs if ex.cancelled]
    assert [ex.label() for ex in cancelled] == ["tools/call slow"]
    assert cancelled[0].answer is None
    assert rec.unanswered() == []  # a cancelled request is not a hole in the capture


def test_server_messages_belong_to_the_request_they_were_sent_for():
    rec = legacy_capture()
    echo = next(ex for ex in rec.host_requests() if ex.label() == "tools/call echo")
    assert [m.method for m in echo.during] == ["notifications/message"]
    slow = next(ex for ex in rec.host_requests() if ex.label() == "tools/call slow" and not ex.cancelled)
    assert [m.method for m in slow.during] == ["notifications/progress"] * 3


def test_each_step_waits_for_what_the_recorded_host_had_seen_before_sending_it():
    p = plan(legacy_capture().conversations[0])
    kinds = [(s.kind, s.method) for s in p.steps]
    assert kinds[:3] == [
        ("request", "initialize"),
        ("notification", "notifications/initialized"),
        ("request", "logging/setLevel"),
    ]
    assert [w.exchange.method for w in p.steps[1].waits] == ["initialize"]
    cancel = next(s for s in p.steps if s.method == "notifications/cancelled")
    # The host cancelled at the first progress notification, before any answer: that is the wait.
    assert [(w.exchange.label(), w.progress) for w in cancel.waits] == [("tools/call slow", 1)]
    # The host's answers to server requests are not steps: they are given when the new server asks.
    assert all(s.kind in ("request", "notification") for s in p.steps)


def test_requests_the_host_sent_without_waiting_are_not_made_to_wait():
    rec = recording(
        ("c2s", req(1, "tools/call", {"name": "a"})),
        ("c2s", req(2, "tools/call", {"name": "b"})),
        ("s2c", res(2, {})),
        ("s2c", res(1, {})),
        ("c2s", req(3, "tools/list")),
        ("s2c", res(3, {})),
    )
    steps = plan(rec.conversations[0]).steps
    assert steps[1].waits == []
    assert sorted(w.exchange.request.id for w in steps[2].waits) == [1, 2]


def test_an_mrtr_retry_is_linked_to_the_round_it_retries():
    rec = recording(
        ("c2s", req(1, "tools/call", {"name": "greet", "arguments": {}})),
        ("s2c", res(1, {"resultType": "input_required", "requestState": "S1"})),
        ("c2s", req(2, "tools/call", {"name": "other", "arguments": {}})),
        ("s2c", res(2, {"resultType": "complete"})),
        ("c2s", req(3, "tools/call", {"name": "greet", "arguments": {}, "requestState": "S1"})),
        ("s2c", res(3, {"resultType": "input_required", "requestState": "S2"})),
        ("c2s", req(4, "tools/call", {"name": "greet", "arguments": {}, "requestState": "S2"})),
        ("s2c", res(4, {"resultType": "complete"})),
    )
    steps = plan(rec.conversations[0]).steps
    assert steps[0].retry_of is None and steps[1].retry_of is None
    assert steps[2].retry_of is steps[0]
    assert steps[3].retry_of is steps[2]


def test_a_legacy_session_captured_after_its_handshake_gets_one_synthesised():
    rec = recording(
        ("c2s", req(5, "logging/setLevel", {"level": "info"})),
        ("s2c", res(5, {})),
        ("c2s", req(6, "tools/list")),
        ("s2c", res(6, {"tools": []})),
    )
    p = plan(rec.conversations[0])
    assert [s.method for s in p.steps] == [
        "initialize",
        "notifications/initialized",
        "logging/setLevel",
        "tools/list",
    ]
    assert p.steps[0].synthetic and p.steps[0].obj["params"]["protocolVersion"] == "2025-11-25"
    assert "no initialize handshake" in p.notes[0]


def test_on_http_a_message_on_another_stream_follows_the_last_answer_instead():
    recs = records(
        ("c2s", req(1, "initialize", {"protocolVersion": "2025-11-25"})),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", req(2, "tools/call", {"name": "slow"})),
        ("s2c", note("notifications/tools/list_changed")),  # on the GET stream
        ("s2c", note("notifications/message", {"level": "info", "data": "x"})),  # on the POST's stream
        ("s2c", res(2, {})),
    )
    flows = ["f1", "f1", "f2", "get", "f2", "f2"]
    for r, flow in zip(recs, flows, strict=True):
        r.http = {"method": "GET" if flow == "get" else "POST", "url": "http://x/mcp", "flow": flow}
        r.transport = "http"
    rec = build(recs, "test", "capture")
    init, call = rec.host_requests()
    assert [m.method for m in init.after] == ["notifications/tools/list_changed"]
    assert [m.method for m in call.during] == ["notifications/message"]


def test_a_server_request_is_an_exchange_of_its_own_with_the_hosts_recorded_answer():
    rec = recording(
        ("c2s", req(1, "tools/call", {"name": "greet"})),
        ("s2c", req(1, "elicitation/create", {"message": "Name?"})),
        ("c2s", res(1, {"action": "accept", "content": {"name": "Ada"}})),
        ("s2c", res(1, {"content": []})),
    )
    (call,) = rec.host_requests()
    (ask,) = rec.server_requests()
    assert isinstance(call.during[0], Exchange) and call.during[0] is ask
    assert ask.parent is call and ask.answer.result == {"action": "accept", "content": {"name": "Ada"}}
    assert isinstance(call.answer, Analysed) and call.answer.result == {"content": []}
    # elicitation/create exists only before 2026-07-28: a legacy session, so a handshake is synthesised first
    steps = plan(rec.conversations[0]).steps
    assert [s.method for s in steps] == ["initialize", "notifications/initialized", "tools/call"]
    assert steps[2].exchange is call


def test_on_http_a_legacy_session_and_stateless_modern_requests_in_one_connection_are_kept_apart():
    modern = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    recs = records(
        ("c2s", req(1, "tools/list", modern)),
        ("c2s", req(1, "initialize", {"protocolVersion": "2025-11-25"})),
        ("s2c", res(1, {"tools": []})),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", note("notifications/initialized")),
        ("c2s", req(2, "tools/list")),
        ("s2c", res(2, {"tools": []})),
    )
    flows = ["m1", "l1", "m1", "l1", "l2", "l3", "l3"]
    for r, flow in zip(recs, flows, strict=True):
        r.http = {"method": "POST", "url": "http://x/mcp", "flow": flow}
        r.transport = "http"
    rec = build(recs, "test", "capture")
    by_name = {c.conn: c for c in rec.conversations}
    assert sorted(by_name) == ["0", "0 [modern]"]
    assert [ex.method for ex in by_name["0 [modern]"].host_requests] == ["tools/list"]
    assert by_name["0 [modern]"].host_requests[0].answer is not None
    assert [ex.method for ex in by_name["0"].host_requests] == ["initialize", "tools/list"]
    assert [s.method for s in plan(by_name["0"]).steps] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
