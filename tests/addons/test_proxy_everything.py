"""The official TypeScript reference server (@modelcontextprotocol/server-everything, npm) over HTTP,
in `streamableHttp` and `sse` (the 2024-11-05 HTTP+SSE transport) modes, driven by the official
Python SDK client through `mcptrace proxy`: same results as direct, every message captured with
its HTTP facts, every request paired, and the lint reports only what is true.

CI installs the server into .ci/node (`.ci/run`). Without Node the tests are skipped; with npm but
without the package they fail and say how to install it.
"""

from __future__ import annotations

import pytest
from mcp.client.sse import sse_client

from tests.everything_peer import scripted_session
from tests.proxy_peers import capture_records, everything_http, lint_findings, mcptrace_proxy
from tracer.analyser import analyse_all
from tracer.model import Direction, Kind, RecordType


async def session(url: str, mode: str, transport: str) -> list:
    return await scripted_session(
        sse_client(url) if transport == "sse" else url, mode, "héllo through the proxy ✓"
    )


def _check_capture(cap, transport: str):
    recs = capture_records(cap)
    assert {r.transport for r in recs} == {transport}
    messages = [r for r in recs if r.type is RecordType.MESSAGE]
    for r in messages:
        assert r.http["flow"] and r.http["url"].startswith("http://127.0.0.1:")
        if r.dir is Direction.S2C:
            assert r.sse is not None, "server-everything answers on SSE streams"
    msgs, _ = analyse_all(recs)
    requests = [m for m in msgs if m.kind is Kind.REQUEST and m.dir is Direction.C2S]
    assert len(requests) >= 7
    assert all(m.partner_seq is not None for m in requests), [(m.seq, m.method) for m in requests]
    return recs, msgs


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
async def test_server_everything_answers_the_same_through_the_proxy_and_lints_clean(tmp_path, transport):
    with everything_http(transport) as url:
        direct = await session(url, "legacy", transport)
        cap = tmp_path / f"everything-{transport}.jsonl"
        with mcptrace_proxy(url, cap) as proxy_url:
            proxied = await session(proxy_url, "legacy", transport)
    assert proxied == direct
    assert "Echo: héllo through the proxy ✓" in str(proxied[2])
    recs, _ = _check_capture(cap, "http+sse" if transport == "sse" else "http")
    findings = lint_findings(cap)
    if transport == "sse":
        # the transport itself: deprecated since 2025-03-26, reported once as information
        assert [(f.rule, f.severity.label) for f in findings] == [("MCP904", "info")]
        endpoint = [r for r in recs if (r.data or {}).get("event") == "endpoint"]
        assert len(endpoint) == 1 and "/message?sessionId=" in endpoint[0].data["url"]
    else:
        assert findings == []
        assert any(r.type is RecordType.HTTP and r.http["method"] == "DELETE" for r in recs)


async def test_the_dual_era_probe_finds_what_server_everything_really_answers(tmp_path):
    """The SDK's auto mode probes `server/discover`; server-everything answers it with HTTP 400 and
    an error whose id is null although the request's id was readable. The lint says so, and says
    nothing else."""
    with everything_http("streamableHttp") as url:
        cap = tmp_path / "probe.jsonl"
        with mcptrace_proxy(url, cap) as proxy_url:
            result = await session(proxy_url, "auto", "streamableHttp")
    assert result[0] == "2025-11-25", "the client fell back to the legacy handshake"
    recs = capture_records(cap)
    probe = next(r for r in recs if r.type is RecordType.MESSAGE and b'"server/discover"' in r.raw)
    answer = next(
        r
        for r in recs
        if r.type is RecordType.MESSAGE and r.http["flow"] == probe.http["flow"] and r.dir is Direction.S2C
    )
    assert answer.http["status"] == 400 and b'"id":null' in answer.raw
    findings = lint_findings(cap)
    assert findings and {f.seq for f in findings} <= {probe.seq, answer.seq}, [
        (f.rule, f.seq, f.message) for f in findings
    ]
