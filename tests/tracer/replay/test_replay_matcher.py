"""Which recorded request an incoming one stands for, in each --match mode, and the error when none does."""

from __future__ import annotations

from tests.replay_support import note, recording, req, res
from tracer.replay.matcher import INVALID_PARAMS, METHOD_NOT_FOUND, Matcher, MatchMode

META_A = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "a"},
}
META_B = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "b"},
}


def session():
    return recording(
        (
            "c2s",
            req(
                1,
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "host"}},
            ),
        ),
        ("s2c", res(1, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "srv"}})),
        ("c2s", note("notifications/initialized")),
        ("c2s", req(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": META_A})),
        ("s2c", res(2, {"content": [{"type": "text", "text": "5"}]})),
        ("c2s", req(3, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": META_A})),
        ("s2c", res(3, {"content": [{"type": "text", "text": "5 again"}]})),
        ("c2s", req(4, "tools/list")),
        ("s2c", res(4, {"tools": []})),
    )


def matcher(mode=MatchMode.PARAMS):
    return Matcher(session().host_requests(), mode)


def answer_text(m):
    return m.exchange.answer.result["content"][0]["text"]


def test_params_mode_ignores_ids_and_meta():
    m = matcher().match("tools/call", {"name": "add", "arguments": {"b": 3, "a": 2}, "_meta": META_B})
    assert m.ok and answer_text(m) == "5"


def test_identical_requests_get_their_recorded_answers_in_order_then_the_last_again():
    mt = matcher()
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    assert [answer_text(mt.match("tools/call", params)) for _ in range(3)] == ["5", "5 again", "5 again"]


def test_initialize_matches_whatever_the_host_says_about_itself():
    m = matcher().match(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "another host"},
        },
    )
    assert m.ok and m.exchange.answer.result["serverInfo"] == {"name": "srv"}


def test_other_params_give_invalid_params_naming_the_closest_request_and_the_differing_path():
    m = matcher().match("tools/call", {"name": "add", "arguments": {"a": 2, "b": 4}})
    assert not m.ok and m.code == INVALID_PARAMS
    assert "closest recorded request: tools/call" in m.message
    assert '"arguments":{"a":2,"b":3}' in m.message
    assert "$.params.arguments.b (recorded 3, got 4)" in m.message
    assert m.error()["data"]["closest"]["params"] == {"name": "add", "arguments": {"a": 2, "b": 3}}


def test_an_unrecorded_method_is_method_not_found_and_still_names_the_closest_request():
    m = matcher().match("tools/lists", None)
    assert not m.ok and m.code == METHOD_NOT_FOUND
    assert m.message.startswith("Method not found: the recording has no tools/lists request")
    assert "closest recorded request: tools/list" in m.message


def test_sequential_mode_follows_the_recorded_order_by_method_only():
    mt = matcher(MatchMode.SEQUENTIAL)
    assert mt.match("initialize", {}).ok
    assert answer_text(mt.match("tools/call", {"name": "anything"})) == "5"
    wrong = mt.match("tools/list", None)
    assert not wrong.ok and "expected tools/call" in wrong.message


def test_strict_mode_wants_the_recorded_order_and_the_same_meta():
    mt = matcher(MatchMode.STRICT)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "host"}}
    assert mt.match("initialize", init).ok
    other_meta = mt.match("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": META_B})
    assert not other_meta.ok
    assert "$.params._meta" in other_meta.message
    same = mt.match(
        "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {**META_A, "progressToken": 99}}
    )
    assert same.ok  # the caller picks its progress token


def test_an_mrtr_retry_matches_with_other_input_responses_but_the_same_request_state():
    rec = recording(
        ("c2s", req(1, "tools/call", {"name": "greet", "arguments": {}})),
        (
            "s2c",
            res(
                1,
                {
                    "resultType": "input_required",
                    "requestState": "S1",
                    "inputRequests": {"q": {"method": "elicitation/create", "params": {"message": "Name?"}}},
                },
            ),
        ),
        (
            "c2s",
            req(
                2,
                "tools/call",
                {
                    "name": "greet",
                    "arguments": {},
                    "requestState": "S1",
                    "inputResponses": {"q": {"action": "accept", "content": {"name": "Ada"}}},
                },
            ),
        ),
        ("s2c", res(2, {"resultType": "complete", "content": [{"type": "text", "text": "Hello, Ada!"}]})),
    )
    mt = Matcher(rec.host_requests())
    first = mt.match("tools/call", {"name": "greet", "arguments": {}})
    assert first.ok and first.exchange.input_required
    retry = mt.match(
        "tools/call",
        {
            "name": "greet",
            "arguments": {},
            "requestState": "S1",
            "inputResponses": {"q": {"action": "accept", "content": {"name": "Bob"}}},
        },
    )
    assert retry.ok and retry.exchange.answer.result["content"][0]["text"] == "Hello, Ada!"
    forged = mt.match(
        "tools/call", {"name": "greet", "arguments": {}, "requestState": "S2", "inputResponses": {"q": {}}}
    )
    assert not forged.ok and "$.params.requestState" in forged.message
