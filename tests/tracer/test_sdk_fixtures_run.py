"""The SDK fixture peers work: the scripted client against the real SDK server, directly, stdio and HTTP.

Other tests lean on these two scripts (tee, proxy, replay, mock, demo), so they must do what they say
in every era. Each era's session is run once per transport; the checks read its reported results.
"""

from __future__ import annotations

import pytest

from tests.sdk_peers import (
    ops_by_name,
    run_client,
    run_clients,
    sdk_http_server,
    server_cmd,
    text_of,
    tool_call,
)

ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28", "auto": "2026-07-28"}


@pytest.fixture(scope="module")
def stdio_sessions():
    return dict(zip(ERAS, run_clients([(era, None, server_cmd()) for era in ERAS]), strict=True))


@pytest.fixture(scope="module")
def http_sessions():
    with sdk_http_server() as url:
        return dict(zip(ERAS, run_clients([(era, url, None) for era in ERAS]), strict=True))


def check_session(ops: list[dict], era: str) -> None:
    assert ops[0] == {"op": "connect", "protocol_version": ERAS[era]}
    tools = {t["name"]: t for t in ops_by_name(ops, "list_tools")[0]["tools"]}
    assert set(tools) == {"echo", "add", "fail", "slow", "weather"}
    assert set(tools["weather"]["outputSchema"]["properties"]) == {"city", "celsius", "sky"}
    assert [r["uri"] for r in ops_by_name(ops, "list_resources")[0]["resources"]] == [
        "fixture://static/greeting"
    ]
    templates = ops_by_name(ops, "list_resource_templates")[0]["templates"]
    assert [t["uriTemplate"] for t in templates] == ["fixture://items/{item_id}"]
    prompt = ops_by_name(ops, "list_prompts")[0]["prompts"][0]
    assert prompt["name"] == "review" and [a["name"] for a in prompt["arguments"]] == ["code", "language"]

    assert text_of(tool_call(ops, "echo")[0]) == "hello mcptrace"
    logs = ops_by_name(ops, "logs")[0]["messages"]
    assert [(m["level"], m["data"]) for m in logs] == [("info", "echo called with 14 characters")]
    assert [text_of(r) for r in tool_call(ops, "add")] == ["5", "42"]
    failed = tool_call(ops, "fail")[0]
    assert failed["isError"] is True and "on purpose" in text_of(failed)
    assert tool_call(ops, "weather")[0]["structuredContent"] == {
        "city": "Lyon",
        "celsius": 21.5,
        "sky": "clear",
    }

    reads = {o["uri"]: o["result"]["contents"][0]["text"] for o in ops_by_name(ops, "read_resource")}
    assert reads == {
        "fixture://static/greeting": "Hello from the mcptrace fixture server.\n",
        "fixture://items/42": "item 42",
    }
    prompt_text = ops_by_name(ops, "get_prompt")[0]["result"]["messages"][0]["content"]["text"]
    assert prompt_text == "Please review this python code:\nprint(1)"

    slow = ops_by_name(ops, "call_tool_progress")[0]
    assert [(p["progress"], p["total"]) for p in slow["progress"]] == [(1, 3), (2, 3), (3, 3)]
    assert text_of(slow["result"]) == "done after 3 steps"
    assert ops_by_name(ops, "cancel_tool") == [{"op": "cancel_tool", "name": "slow", "cancelled": True}]


@pytest.mark.parametrize("era", ERAS)
def test_sdk_client_runs_its_whole_session_against_the_sdk_server_over_stdio(stdio_sessions, era):
    check_session(stdio_sessions[era], era)


@pytest.mark.parametrize("era", ERAS)
def test_sdk_client_runs_its_whole_session_against_the_sdk_server_over_streamable_http(http_sessions, era):
    check_session(http_sessions[era], era)


@pytest.mark.parametrize("era", ERAS)
def test_sdk_client_reports_the_same_results_over_stdio_and_http(stdio_sessions, http_sessions, era):
    # What makes "through the tee/proxy" vs "direct" comparisons meaningful: the report has no
    # transport-, run- or time-dependent content.
    assert stdio_sessions[era] == http_sessions[era]


def test_changed_variant_answers_add_differently_and_nothing_else(stdio_sessions):
    changed = run_client("legacy", command=server_cmd("--variant", "changed"))
    normal = stdio_sessions["legacy"]
    assert [text_of(r) for r in tool_call(changed, "add")] == ["6", "43"]
    differing = [(a["op"], a.get("name")) for a, b in zip(normal, changed, strict=True) if a != b]
    assert differing == [("call_tool", "add"), ("call_tool", "add")]
