"""MRTR: a call that took several rounds (InputRequiredResult, then retries) is one operation.

Every round (requests and responses) carries `op_seq` = the seq of the first request, and the final
response knows the operation's true total latency. Checked on real traffic (the official SDK's MRTR
client and server, recorded through mcptrace's stdio tee) and on hand-made rounds for the cases the
SDK never produces (three rounds, arguments that differ, unrelated calls).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cases import build_records
from tests.sdk_peers import REPO
from tracer.analyser import analyse_all
from tracer.capture import read_capture
from tracer.model import Kind, Severity
from tracer.pairing import operation_latency_ns, operation_rounds

ASKING_SERVER = REPO / "fixtures" / "sdk" / "asking_server.py"
ASKING_CLIENT = REPO / "fixtures" / "sdk" / "asking_client.py"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def record_asking_session(era: str, tmp_path):
    """Run the SDK's asking client against the asking server through `mcptrace stdio`."""
    cap = tmp_path / f"ask-{era}.jsonl"
    tee = [sys.executable, "-m", "tracer", "stdio", "-o", str(cap), "--", sys.executable, str(ASKING_SERVER)]
    done = subprocess.run(
        [sys.executable, str(ASKING_CLIENT), "--era", era, "--", *tee],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    with open(cap, "rb") as fh:
        msgs, ends = analyse_all(read_capture(fh, str(cap)))
    return msgs, ends


def calls_of(msgs, tool: str):
    """The requests calling `tool` and the responses answering them, in wire order."""
    seqs = {
        m.seq
        for m in msgs
        if m.kind is Kind.REQUEST and m.method == "tools/call" and (m.params or {}).get("name") == tool
    }
    return [m for m in msgs if m.seq in seqs or (m.request is not None and m.request.seq in seqs)]


@pytest.fixture(scope="module")
def modern_session(tmp_path_factory):
    return record_asking_session("modern", tmp_path_factory.mktemp("mrtr"))


def test_sdk_elicitation_call_shows_as_one_operation_with_its_total_latency(modern_session):
    msgs, _ = modern_session
    rounds = calls_of(msgs, "greet")
    first, asked, retry, final = rounds
    assert [m.kind for m in rounds] == [Kind.REQUEST, Kind.RESULT, Kind.REQUEST, Kind.RESULT]
    assert asked.result["resultType"] == "input_required"
    assert "inputResponses" in retry.params and retry.id != first.id
    assert {m.op_seq for m in rounds} == {first.seq}
    total = operation_latency_ns(final)
    assert total == final.rec.t_ns - first.rec.t_ns
    assert total > final.latency_ns  # the final round alone is only part of the operation
    assert operation_rounds(final) == 2


def test_sdk_sampling_call_is_its_own_operation(modern_session):
    msgs, _ = modern_session
    greet_first = calls_of(msgs, "greet")[0]
    haiku = calls_of(msgs, "haiku")
    assert len(haiku) == 4
    assert {m.op_seq for m in haiku} == {haiku[0].seq} != {greet_first.seq}


def test_plain_requests_outside_mrtr_carry_no_operation(modern_session):
    msgs, _ = modern_session
    listing = [m for m in msgs if m.label == "tools/list"]
    assert listing and all(m.op_seq is None for m in listing)
    answer = next(m for m in listing if m.kind is Kind.RESULT)
    assert operation_latency_ns(answer) == answer.latency_ns


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_sdk_traffic_that_asks_for_input_lints_without_errors_or_warnings(era, modern_session, tmp_path):
    msgs, ends = modern_session if era == "modern" else record_asking_session(era, tmp_path)
    found = [f for m in msgs for f in m.findings] + ends
    assert [f for f in found if f.severity >= Severity.WARNING] == []


def _three_rounds():
    call = {"name": "deploy", "arguments": {"env": "prod"}}
    return build_records(
        [
            {
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**call, "_meta": META}},
                "t_ms": 0,
            },
            {
                "s2c": {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "result": {"resultType": "input_required", "requestState": "r1"},
                },
                "t_ms": 10,
            },
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {**call, "requestState": "r1", "_meta": META},
                },
                "t_ms": 100,
            },
            {
                "s2c": {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "result": {"resultType": "input_required", "requestState": "r2"},
                },
                "t_ms": 120,
            },
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {**call, "requestState": "r2", "_meta": META},
                },
                "t_ms": 300,
            },
            {
                "s2c": {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "content": []}},
                "t_ms": 350,
            },
            {
                "c2s": {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {**call, "_meta": META}},
                "t_ms": 400,
            },
            {
                "s2c": {"jsonrpc": "2.0", "id": 4, "result": {"resultType": "complete", "content": []}},
                "t_ms": 410,
            },
        ]
    )


def test_three_round_call_links_every_round_to_the_first():
    msgs, _ = analyse_all(_three_rounds())
    operation, later_call = msgs[:6], msgs[6:]
    assert [m.op_seq for m in operation] == [1] * 6
    final = operation[-1]
    assert operation_latency_ns(final) == 350 * 1_000_000
    assert final.latency_ns == 50 * 1_000_000
    assert operation_rounds(final) == 3
    assert [m.op_seq for m in later_call] == [None, None]  # a fresh call with the same arguments


def test_retry_echoing_the_state_is_linked_even_if_its_arguments_changed():
    msgs, _ = analyse_all(
        build_records(
            [
                {
                    "c2s": {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "resources/read",
                        "params": {"uri": "file:///a", "_meta": META},
                    }
                },
                {
                    "s2c": {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "result": {"resultType": "input_required", "requestState": "s"},
                    }
                },
                {
                    "c2s": {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "resources/read",
                        "params": {"uri": "file:///A", "requestState": "s", "_meta": META},
                    }
                },
            ]
        )
    )
    assert [m.op_seq for m in msgs] == [1, 1, 1]


def test_retry_markers_without_an_earlier_round_link_nothing():
    msgs, _ = analyse_all(
        build_records(
            [
                {
                    "c2s": {
                        "jsonrpc": "2.0",
                        "id": 9,
                        "method": "tools/call",
                        "params": {"name": "deploy", "requestState": "stale", "_meta": META},
                    }
                },
                {"s2c": {"jsonrpc": "2.0", "id": 9, "result": {"resultType": "complete", "content": []}}},
            ]
        )
    )
    assert [m.op_seq for m in msgs] == [None, None]
    assert "MCP332" in {f.rule for f in msgs[0].findings}
