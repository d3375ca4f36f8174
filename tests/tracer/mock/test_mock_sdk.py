"""`mcptrace mock` against real hosts: the official SDK client gets what it got from the real server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.replay_support import (
    ASKING_CLIENT,
    ASKING_SERVER,
    MCPTRACE,
    mock_http,
    proxy_capture,
    stop_and_collect,
)
from tests.sdk_peers import BOUND_S, CAPTURES, REPO, run_client, run_clients, sdk_http_server, server_cmd

ERAS = ["legacy", "modern", "auto"]


def mock_cmd(capture: Path | str, *extra: str) -> list[str]:
    return [*MCPTRACE, "mock", str(capture), "-q", *extra]


@pytest.fixture(scope="module")
def real_results() -> dict[str, list[dict]]:
    """What the scripted SDK client gets from the real SDK server, per era (stdio)."""
    return dict(zip(ERAS, run_clients([(era, None, server_cmd()) for era in ERAS]), strict=True))


def test_the_sdk_client_gets_the_same_results_from_the_mock_over_stdio(real_results):
    mocked = run_clients([(era, None, mock_cmd(CAPTURES / f"sdk-stdio-{era}.jsonl")) for era in ERAS])
    for era, ops in zip(ERAS, mocked, strict=True):
        assert ops == real_results[era], era


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_sdk_client_gets_the_same_results_from_the_mock_over_http(real_results, era):
    with mock_http(CAPTURES / f"sdk-stdio-{era}.jsonl") as (url, proc):
        (ops,) = run_clients([(era, url, None)])
        code, err = stop_and_collect(proc)
    assert ops == real_results[era]
    assert code == 0 and "0 without a recorded match" in err


def test_a_capture_taken_through_mitmproxy_serves_both_eras_over_http(real_results, tmp_path):
    cap = tmp_path / "sdk-http.jsonl"
    with sdk_http_server() as upstream, proxy_capture(upstream, cap) as proxied:
        # One after the other: two clients at once from one address share the recorder's connection key.
        run_client("legacy", url=proxied)
        run_client("modern", url=proxied)
    with mock_http(cap) as (url, proc):
        legacy, modern = run_clients([("legacy", url, None), ("modern", url, None)])
        code, _err = stop_and_collect(proc)
    # The legacy host still gets the answers of the legacy session (no resultType), the modern one the modern ones.
    assert legacy == real_results["legacy"]
    assert modern == real_results["modern"]
    assert code == 0


# -- servers that ask the host ---------------------------------------------------------------------


def run_asking(era: str, *target: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, str(ASKING_CLIENT), "--era", era, "--timeout", "20", *target],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def asking(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    """Real sessions with the asking server, recorded through `mcptrace stdio`, and what the client got."""
    d = tmp_path_factory.mktemp("asking")
    out = {}
    for era in ("legacy", "modern"):
        cap = d / f"asking-{era}.jsonl"
        ops = run_asking(
            era, "--", *MCPTRACE, "stdio", "-q", "-o", str(cap), "--", sys.executable, str(ASKING_SERVER)
        )
        out[era] = (cap, ops)
    return out


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_mock_asks_the_host_what_the_recorded_server_asked_over_stdio(asking, era):
    cap, real = asking[era]
    assert run_asking(era, "--", *mock_cmd(cap)) == real


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_mock_asks_the_host_what_the_recorded_server_asked_over_http(asking, era):
    cap, real = asking[era]
    with mock_http(cap) as (url, proc):
        ops = run_asking(era, "--url", url)
        code, _ = stop_and_collect(proc)
    assert ops == real and code == 0


# -- what a host sees when it strays from the recording ---------------------------------------------


async def test_an_unrecorded_tool_call_gets_an_error_naming_the_closest_recorded_request():
    params = StdioServerParameters(
        command=MCPTRACE[0], args=[*MCPTRACE[1:], "mock", "-q", str(CAPTURES / "sdk-stdio-legacy.jsonl")]
    )
    async with Client(params, mode="legacy", cache=None) as client:
        ok = await client.call_tool("add", {"a": 2, "b": 3})
        assert ok.structured_content == {"result": 5}
        with pytest.raises(MCPError) as err:
            await client.call_tool("add", {"a": 2, "b": 30})
    message = err.value.error.message
    assert "no recorded tools/call request matches these params" in message
    assert 'closest recorded request: tools/call {"name":"add","arguments":{"a":2,"b":3}}' in message
    assert "$.params.arguments.b (recorded 3, got 30)" in message


async def test_a_legacy_host_against_a_modern_capture_is_told_the_handshake_was_never_recorded():
    params = StdioServerParameters(
        command=MCPTRACE[0], args=[*MCPTRACE[1:], "mock", "-q", str(CAPTURES / "sdk-stdio-modern.jsonl")]
    )
    with pytest.raises(Exception) as err:
        async with Client(params, mode="legacy", cache=None):
            pass
    text = repr(err.value) + "".join(repr(e) for e in getattr(err.value, "exceptions", ()))
    assert "the recording has no initialize request" in text


def test_the_mock_exits_1_and_says_so_when_a_request_had_no_recorded_match():
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    proc = subprocess.run(
        [*MCPTRACE, "mock", str(CAPTURES / "sdk-stdio-legacy.jsonl")],
        cwd=REPO,
        input="".join(json.dumps(x) + "\n" for x in lines),
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "mcptrace-fixture"
    assert answers[2]["error"]["code"] == -32602
    assert "closest recorded request: tools/call" in answers[2]["error"]["message"]
    assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}  # an unrecorded ping still gets its answer
    assert proc.returncode == 1
    assert "served 2 request(s), 1 without a recorded match" in proc.stderr
    assert "no match for tools/call" in proc.stderr
