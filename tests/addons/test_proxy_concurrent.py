"""Concurrent official-SDK client sessions through the real `mcptrace proxy`, against the SDK's own
Streamable HTTP server: each session is a connection of its own (no merging by client address or
User-Agent), so a clean run lints clean."""

from __future__ import annotations

import collections

import pytest

from tests.proxy_peers import capture_records, lint_findings, mcptrace_proxy
from tests.real_findings import answer_after_cancel, deprecated_logging, unexpected
from tests.sdk_peers import run_clients, sdk_http_server
from tracer.analyser import analyse_all
from tracer.model import Direction, Kind, RecordType

KNOWN = (deprecated_logging, answer_after_cancel)  # real (`mcptrace help peers`)


def _run(tmp_path, eras: list[str]):
    cap = tmp_path / "concurrent.jsonl"
    with sdk_http_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        results = run_clients([(era, proxy_url, None) for era in eras])
    assert all(results)
    return cap


def _handshakes_by_conn(cap) -> dict[str, list[str]]:
    out = collections.defaultdict(list)
    for r in capture_records(cap):
        if r.type is RecordType.MESSAGE and r.dir is Direction.C2S and b'"initialize"' in r.raw:
            out[r.conn].append(r.http["flow"])
    return out


@pytest.mark.parametrize("sessions", [2, 10])
def test_concurrent_legacy_sessions_are_one_connection_each_and_lint_clean(tmp_path, sessions):
    cap = _run(tmp_path, ["legacy"] * sessions)
    recs = capture_records(cap)
    handshakes = _handshakes_by_conn(cap)
    assert len(handshakes) == sessions and all(len(v) == 1 for v in handshakes.values())
    # every record of a session is on its handshake's connection: one session id per connection
    sids = collections.defaultdict(set)
    for r in recs:
        for k, v in (r.http or {}).get("req_headers") or ():
            if k.lower() == "mcp-session-id":
                sids[r.conn].add(v)
    assert set(sids) == set(handshakes) and all(len(v) == 1 for v in sids.values())
    assert unexpected(lint_findings(cap), {r.seq: r for r in recs}, KNOWN) == []


def test_concurrent_modern_and_dual_era_clients_lint_clean_and_pair_every_request(tmp_path):
    cap = _run(tmp_path, ["modern", "modern", "auto", "auto", "legacy"])
    recs = capture_records(cap)
    msgs, _ = analyse_all(recs)
    client_closed = {
        r.http["flow"]
        for r in recs
        if (r.data or {}).get("event") == "stream-closed" and r.data["reason"] == "client-closed"
    }
    requests = [m for m in msgs if m.kind is Kind.REQUEST and m.dir is Direction.C2S]
    assert len(requests) > 50
    unpaired = [m for m in requests if m.partner_seq is None and m.rec.http["flow"] not in client_closed]
    assert unpaired == []
    assert unexpected(lint_findings(cap), {r.seq: r for r in recs}, KNOWN) == []
