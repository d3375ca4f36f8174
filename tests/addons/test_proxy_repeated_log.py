"""The same log line from two tool calls of one Streamable HTTP session, one call after the other,
through `mcptrace proxy` to the official SDK's server: each call's `notifications/message` goes on
its own POST stream and the two are byte-identical (a notification has no id). That is two messages,
not one broadcast on two streams (MCP713: "MUST NOT broadcast the same message across multiple
streams"), since the first stream was answered and closed before the second call was sent."""

from __future__ import annotations

import anyio
from mcp import Client

from tests.proxy_peers import BOUND_S, capture_records, lint_findings, mcptrace_proxy
from tests.sdk_peers import sdk_http_server
from tracer.model import Direction, RecordType


async def _echo_twice(url: str) -> None:
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode="legacy") as c:
            for _ in range(2):
                await c.call_tool("echo", {"text": "same text"})


def test_one_log_line_sent_by_two_calls_in_turn_is_not_a_broadcast(tmp_path):
    cap = tmp_path / "twice.jsonl"
    with sdk_http_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        anyio.run(_echo_twice, proxy_url)
    logs = [
        r
        for r in capture_records(cap)
        if r.type is RecordType.MESSAGE and r.dir is Direction.S2C and b"notifications/message" in r.raw
    ]
    # the situation the rule must tell apart: identical bytes, on two different POST streams
    assert len(logs) == 2 and logs[0].raw == logs[1].raw
    assert logs[0].sse["stream"] != logs[1].sse["stream"]
    assert [f for f in lint_findings(cap) if f.rule == "MCP713"] == []
